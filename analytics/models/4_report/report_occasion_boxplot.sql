-- report_occasion_boxplot: the box plot's five numbers per occasion (headline metrics), so the
-- report can split each storage class's box by occasion; with when the occasion started.
-- The newest 12 occasions of each class and workload: a year of nightly runs would otherwise be
-- hundreds of boxes per chart and grow the site with the campaign (report_occasions, the
-- variance split, still uses every occasion; the page says how many of how many it shows).
select
    campaign, storage_class, profile, workload, any_value(workload_title) as workload_title,
    direction, metric, any_value(unit) as unit,
    run, occasion,
    min(started_at) as occasion_started_at,
    dayname(min(started_at)) as weekday,
    hour(min(started_at)) as start_hour_utc,
    count(*) as n,
    min(value) as min,
    quantile_cont(value, 0.25) as q1,
    quantile_cont(value, 0.5) as median,
    quantile_cont(value, 0.75) as q3,
    max(value) as max,
    avg(value) as mean,
    stddev_samp(value) as sd
from measurements
where is_headline
group by campaign, storage_class, profile, workload, direction, metric, run, occasion
qualify row_number() over (
    partition by campaign, storage_class, profile, workload, direction, metric
    order by min(started_at) desc nulls last, run desc, occasion desc
) <= 12
order by campaign, profile, workload, direction, storage_class, occasion_started_at, run, occasion
