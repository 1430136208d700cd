-- run_usage: the resources each run used per storage class, as measured: results, fio seconds
-- (started → ended of every result), CPU seconds of fio (usr + sys), first start and last end.
-- Per run: made when the run is compacted (one of the compact's tables), so the campaign's cost
-- (report_cost, which applies the declared prices) does not group every result again.
-- Imported results carry no timings: their seconds are null.
with results as (
    -- one row per document (result_rows has one per direction)
    select
        campaign, run, storage_class, source_key,
        any_value(started_at) as started_at,
        any_value(ended_at) as ended_at,
        any_value(cpu_seconds) as cpu_seconds
    from result_rows
    group by all
)
select
    campaign, run, storage_class,
    count(*) as n_results,
    -- microseconds since the epoch, subtracted: exact, and ~30× cheaper than an interval of two
    -- timestamptz, which DuckDB works out in ICU's calendar (0.3 s per 100,000 results)
    sum((epoch_us(ended_at) - epoch_us(started_at)) / 1e6) as fio_seconds,
    sum(cpu_seconds) as cpu_seconds,
    min(started_at) as started_at,
    max(ended_at) as ended_at
from results
group by all
