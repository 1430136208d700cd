-- report_anomalies: what deserves a second look, one row per finding, with a sentence saying why.
--   over_limit — results above the limit declared for the storage class (cache? wrong disk?)
--   warm_up    — the first repetition of an occasion consistently slower than the rest
--   outlier    — a single value far from its occasion's median by the robust MAD rule
-- Thresholds: stats_settings; limits: the user's limits file (storage_class_limits).
with settings as (
    select
        max(value) filter (where name = 'warmup_min_slowdown')  as min_slowdown,
        max(value) filter (where name = 'warmup_min_share')     as min_share,
        max(value) filter (where name = 'warmup_min_occasions') as min_occasions
    from stats_settings
),
limit_cells as (
    select
        campaign, storage_class, profile, workload, any_value(workload_title) as workload_title,
        direction, metric, any_value(unit) as unit,
        count(*) as n,
        count(*) filter (where over_limit) as n_flagged,
        max(value) as max_value,
        median(value) as median_value,
        any_value(limit_value) as limit_value,
        any_value(limit_declared) as limit_declared,
        any_value(tolerance) as tolerance,
        any_value(limit_pattern) as limit_pattern
    from over_limit
    group by campaign, storage_class, profile, workload, direction, metric
    having count(*) filter (where over_limit) > 0
),
warmup_cells as (
    select
        campaign, storage_class, profile, workload, any_value(workload_title) as workload_title,
        direction, metric, any_value(unit) as unit, any_value(better) as better,
        count(*) as n_occasions,
        count(*) filter (where slowdown > 0) as n_slower,
        count(*) filter (where first_is_slowest) as n_slowest,
        sum(n)::bigint as n,
        median(slowdown) as median_slowdown,
        median(first_value) as first_median,
        median(rest_median) as rest_median,
        string_agg(printf('%s: %+.0f%%', occasion, 100 * slowdown), ', ' order by run, occasion) as by_occasion
    from warmup_by_occasion
    group by campaign, storage_class, profile, workload, direction, metric
),
outliers as (
    select * from anomaly_outliers where is_outlier and is_headline
)
select
    'over_limit' as kind,
    campaign, storage_class, profile, workload, workload_title, direction, metric, unit,
    n, n_flagged,
    max_value as value,
    limit_value as reference,
    max_value / nullif(limit_value, 0) as ratio,
    cast(null as varchar) as run, cast(null as varchar) as occasion, cast(null as integer) as rep,
    printf('%d of %d results above the declared %s for ''%s'' (%s %s, flagged above +%.0f%%); highest %s %s = %.1f× the limit, median %s %s',
           n_flagged, n, limit_declared, limit_pattern, printf('%,.0f', limit_value), unit, 100 * tolerance,
           printf('%,.0f', max_value), unit, max_value / nullif(limit_value, 0), printf('%,.0f', median_value), unit)
        as message
from limit_cells
union all
select
    'warm_up', w.campaign, w.storage_class, w.profile, w.workload, w.workload_title, w.direction, w.metric, w.unit,
    w.n, w.n_slower,
    w.first_median, w.rest_median,
    w.first_median / nullif(w.rest_median, 0),
    null, null, null,
    printf('first repetition slower in %d of %d occasions (slowest of its occasion in %d), by a median %.0f%% (%s); median first %s vs others %s %s',
           w.n_slower, w.n_occasions, w.n_slowest, 100 * w.median_slowdown, w.by_occasion,
           printf('%,.0f', w.first_median), printf('%,.0f', w.rest_median), w.unit)
from warmup_cells w, settings s
where w.n_occasions >= s.min_occasions
  and w.n_slower >= s.min_share * w.n_occasions
  and w.median_slowdown >= s.min_slowdown
union all
select
    'outlier', campaign, storage_class, profile, workload, workload_title, direction, metric, unit,
    n, 1,
    value, reference, value / nullif(reference, 0),
    run, occasion, rep,
    printf('%s %s in occasion %s rep %d vs %s median %s (robust z %+.1f, %s side)',
           printf('%,.1f', value), unit, occasion, rep,
           case when n_occasion >= 3 then 'its occasion''s' else 'the' end, printf('%,.1f', reference),
           coalesce(robust_z, 0), outlier_side)
from outliers
order by kind, campaign, storage_class, workload, direction, metric, run, occasion, rep
