-- report_latency_heatmap: the latest run of each storage class (latest_run_seconds) as a heatmap
-- of latency over time: x = the interval's end (s), y = the percentile (p50, p99, p99.9 of each
-- interval's own histogram, as fio logged it), value = the median over the run's repetitions of
-- that interval's percentile, µs. A median of per-interval percentiles, not a percentile of the
-- pooled I/Os: the page's title says so.
with long as (
    unpivot (
        select campaign, run, storage_class, profile, workload, workload_title, direction, t_s, rep,
            lat_p50_us as p50, lat_p99_us as p99, lat_p999_us as "p99.9"
        from latest_run_seconds
    )
    on p50, p99, "p99.9"
    into name percentile value latency_us
)
select
    campaign, run, storage_class, profile, workload, any_value(workload_title) as workload_title,
    direction, t_s, percentile,
    case percentile when 'p50' then 1 when 'p99' then 2 else 3 end as percentile_order,
    count(*) as n_reps,
    count(*) as n,  -- repetitions per cell of the heatmap (the chart says n)
    median(latency_us) as latency_us
from long
group by campaign, run, storage_class, profile, workload, direction, t_s, percentile
order by campaign, storage_class, profile, workload, direction, percentile_order, t_s
