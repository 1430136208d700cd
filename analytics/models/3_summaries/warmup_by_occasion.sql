-- warmup_by_occasion: per occasion (run × occasion) and cell, the first repetition against the others.
-- slowdown > 0 means the first rep was slower than the median of the rest (direction-aware:
-- fewer IOPS or MiB/s, more latency), as a share of that median. Headline metrics, occasions of
-- at least 3 reps (a first rep needs at least two others to be compared with).
with ranked as (
    select *,
        rep = min(rep) over (partition by campaign, run, occasion, storage_class, profile, workload, direction, metric)
            as is_first
    from measurements
    where is_headline
),
per_occasion as (
    select
        campaign, run, occasion, storage_class, profile, workload,
        any_value(workload_title) as workload_title, direction, metric,
        any_value(unit) as unit, any_value(better) as better,
        count(*) as n,
        min(rep) as first_rep,
        min(started_at) as occasion_started_at,
        any_value(value) filter (where is_first) as first_value,
        median(value) filter (where not is_first) as rest_median,
        min(value) filter (where not is_first) as rest_min,
        max(value) filter (where not is_first) as rest_max
    from ranked
    group by campaign, run, occasion, storage_class, profile, workload, direction, metric
    having count(*) >= 3
)
select
    *,
    case when better = 'higher' then 1 - first_value / nullif(rest_median, 0)
         else first_value / nullif(rest_median, 0) - 1 end as slowdown,
    case when better = 'higher' then first_value < rest_min else first_value > rest_max end as first_is_slowest
from per_occasion
