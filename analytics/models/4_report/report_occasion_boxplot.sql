-- report_occasion_boxplot: the box plot's five numbers per occasion (headline metrics), so the
-- report can split each storage class's box by occasion; with when the occasion started.
-- The newest 12 occasions of each class and workload: a year of nightly runs would otherwise be
-- hundreds of boxes per chart and grow the site with the campaign (report_occasions, the
-- variance split, still uses every occasion; the page says how many of how many it shows).
-- One row of occasion_measurements per box: its quartiles from the occasion's values.
with newest as (
    -- the newest 12 first, ranked without their observations (sorting those was most of the
    -- model's time); the quartiles are then computed for the boxes shown only
    select campaign, run, occasion, storage_class, profile, workload, direction, metric
    from occasion_measurements
    where is_headline
    qualify row_number() over (
        partition by campaign, storage_class, profile, workload, direction, metric
        order by started_at desc nulls last, run desc, occasion desc
    ) <= 12
),
shown as (
    select o.*
    from occasion_measurements o
    semi join newest n using (campaign, run, occasion, storage_class, profile, workload, direction, metric)
    where o.is_headline
)
select
    campaign, storage_class, profile, workload, workload_title,
    direction, metric, unit,
    run, occasion,
    started_at as occasion_started_at,
    dayname(started_at) as weekday,
    hour(started_at) as start_hour_utc,
    n,
    min,
    list_aggregate(observation_values, 'quantile_cont', 0.25) as q1,
    list_aggregate(observation_values, 'quantile_cont', 0.5) as median,
    list_aggregate(observation_values, 'quantile_cont', 0.75) as q3,
    max,
    mean,
    case when n > 1 then sqrt(ss / (n - 1)) end as sd
from shown
order by campaign, profile, workload, direction, storage_class, occasion_started_at, run, occasion
