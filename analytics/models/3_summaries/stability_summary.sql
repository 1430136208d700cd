-- stability_summary: how steady each storage class × workload × direction ran second by second, over
-- the campaign: its results' stability (result_rows: computed from each result's seconds when its
-- run was compacted) summarised — how many results and seconds, the median and the worst CV of the
-- headline metric's seconds, the median and worst "worst second ÷ median second" (direction-aware:
-- the lowest for throughput, the highest for latency), the same for IOPS and p99 latency, and how
-- many results met fio's steadystate criterion and after how long (median). Results a guard flagged
-- and this aggregation leaves out (excluded_by not all in getvariable('keep_flagged')) are not
-- counted, as in every statistic.
with counted as (
    select * from result_rows
    where list_has_all(getvariable('keep_flagged'), excluded_by)
        and (n_seconds is not null or steady_attained is not null)
)
select
    campaign, storage_class, profile, workload,
    any_value(workload_title) as workload_title,
    direction,
    coalesce(any_value(headline_metric), 'iops') as headline_metric,
    count(*) as n_results,
    count(n_seconds) as n_with_series,
    sum(n_seconds)::bigint as n_seconds,
    median(series_s) as median_series_s,
    median(stability_cv) as median_headline_cv,
    max(stability_cv) as max_headline_cv,
    median(worst_second_ratio) as median_headline_worst_ratio,
    -- the worst result's worst second: for throughput the lowest ratio, for latency the highest
    case when coalesce(any_value(headline_metric), 'iops') = 'lat_mean_us'
        then max(worst_second_ratio) else min(worst_second_ratio) end as worst_headline_worst_ratio,
    median(iops_cv) as median_iops_cv,
    min(iops_min_ratio) as worst_iops_min_ratio,
    median(p99_max_ratio) as median_p99_max_ratio,
    max(p99_max_ratio) as worst_p99_max_ratio,
    count(steady_attained) as n_steady_judged,
    count(*) filter (where steady_attained) as n_steady,
    count(*) filter (where not steady_attained) as n_not_steady,
    median(steady_after_s) filter (where steady_attained) as median_steady_after_s,
    any_value(steady_criterion) as steady_criterion
from counted
group by campaign, storage_class, profile, workload, direction
