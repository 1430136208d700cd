-- run_cells: each run's headline cells on their own: n, mean ± sd and median of the run's
-- repetitions (over its occasions), the occasions it ran on and when it started.
-- One row per run × storage class × workload × direction × headline metric. Per run: made when the
-- run is compacted (one of the compact's tables), so adding a run to a campaign merges only its own
-- occasions; report_run_summary sets them beside the campaign's summary.
-- From the occasions' rows (occasion_measurements), merged per run; the median from their observations.
with occasions as (
    select *,
        sum(n * mean) over w / sum(n) over w as run_mean
    from occasion_measurements
    where is_headline
    window w as (partition by campaign, run, storage_class, profile, workload, direction, metric)
),
merged as (
    select
        campaign, run, storage_class, profile, workload,
        any_value(workload_title) as workload_title,
        direction, metric, any_value(unit) as unit, any_value(better) as better,
        sum(n)::bigint as n,
        count(distinct occasion) as n_occasions,
        string_agg(distinct occasion, ', ' order by occasion) as occasions,
        min(started_at) as started_at,
        any_value(run_mean) as mean,
        case when sum(n) > 1 then sqrt((sum(ss) + sum(n * (mean - run_mean) ^ 2)) / (sum(n) - 1)) end as sd
    from occasions
    group by all
),
medians as (
    select campaign, run, storage_class, profile, workload, direction, metric, quantile_cont(o.value, 0.5) as median
    from (select campaign, run, storage_class, profile, workload, direction, metric, unnest(observations) as o
          from occasion_measurements where is_headline)
    group by all
)
select m.*, d.median
from merged m
join medians d using (campaign, run, storage_class, profile, workload, direction, metric)
