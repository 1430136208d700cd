-- report_anomalies: what deserves a second look, one row per finding, with a sentence saying why.
--   over_limit — results above the limit declared for the storage class (cache? wrong disk?)
--   warm_up    — the first repetition of an occasion consistently slower than the rest
--   outlier    — a single value far from the other reps of its occasion (anomaly_outliers)
-- Thresholds: stats_settings; limits: the user's limits file (storage_class_limits).
--
-- Warm-up is a test, not a count: under exchangeable repetitions the first rep's rank within its
-- occasion (warmup_by_occasion.first_slow_rank, 1 = slowest) is uniform on 1..n, independently
-- across occasions, whatever the occasion effects. warmup_pvalue() is the exact one-sided
-- P(sum of those ranks ≤ observed) from the convolution of the uniforms. Flagged when that p ≤
-- warmup_alpha AND the median slowdown is at least warmup_min_slowdown (a practical size), so the
-- per-cell false-flag rate on null data is ≤ warmup_alpha by construction. The smallest possible p
-- is 1 / (product of the occasions' rep counts): designs whose product is below 1/alpha (one
-- occasion of < 20 reps, 2 occasions of 3 or 4 reps) can never be flagged — the old rule ("slower
-- in every occasion") flagged 18% of null cells of 2 occasions × 3 reps.
with limit_cells as (
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
    group by all
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
        sum(first_slow_rank)::bigint as rank_sum,
        list(n::integer) as sizes,
        median(first_value) as first_median,
        median(rest_median) as rest_median,
        string_agg(printf('%s: %+.0f%%', occasion, 100 * slowdown), ', ' order by run, occasion) as by_occasion
    from warmup_by_occasion
    group by all
),
-- the exact p of each cell (the convolution is cached per rank sum and design in Python)
warmup_tested as (
    select w.*, warmup_pvalue(w.rank_sum, w.sizes) as p_value
    from warmup_cells w
),
outliers as (
    -- could_flag first: it is known before the values are unnested (is_outlier implies it)
    select * from anomaly_outliers where could_flag and is_outlier and is_headline
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
    printf('first repetition slower in %d of %d occasions (slowest of its occasion in %d), by a median %.0f%% (%s); median first %s vs others %s %s; exact p = %.2g (rank of the first rep in its occasion, summed over occasions)',
           w.n_slower, w.n_occasions, w.n_slowest, 100 * w.median_slowdown, w.by_occasion,
           printf('%,.0f', w.first_median), printf('%,.0f', w.rest_median), w.unit, w.p_value)
from warmup_tested w, settings s
where w.p_value <= s.warmup_alpha
  and w.median_slowdown >= s.warmup_min_slowdown
union all
select
    'outlier', campaign, storage_class, profile, workload, workload_title, direction, metric, unit,
    n, 1,
    value, reference, value / nullif(reference, 0),
    run, occasion, rep,
    printf('%s %s in occasion %s rep %d vs %s, the mean of the other %d reps of its occasion (studentized t %+.1f, cut-off ±%.1f for %d values; Bonferroni p = %.2g; %s side)',
           printf('%,.1f', value), unit, occasion, rep, printf('%,.1f', reference), n_occasion - 1,
           t_stat, t_critical, n_judged,
           least(1, n_judged * coalesce(f_pvalue(t_stat * t_stat, 1, df), 0)), outlier_side)
from outliers
order by kind, campaign, storage_class, workload, direction, metric, run, occasion, rep
