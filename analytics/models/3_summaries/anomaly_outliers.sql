-- anomaly_outliers: every measurement with an outlier test whose false alarms are bounded per cell.
-- materialized: view
-- (a row per measured value, read by report_anomalies for its flagged headline values only)
-- Cell = campaign × storage class × profile × workload × direction × metric (all runs and
-- occasions); occasion = run × occasion.
--
-- Each value is compared with the mean of the OTHER repetitions of its own occasion, so a whole
-- occasion running slower is an occasion effect (report_occasions), not twenty outliers, and the
-- value cannot pull its own reference towards itself. The yardstick is the pooled within-occasion
-- sd of every other value of the cell (the value itself left out, so one wild value cannot hide by
-- inflating it). That ratio is the externally studentized residual of the one-way occasion model:
--     t = (value − mean of the others in its occasion) / (s₍₋ᵢ₎ · √(1 + 1/(n_occasion − 1)))
-- and under normal within-occasion noise it is exactly Student's t with n − g − 1 degrees of
-- freedom (n values, g occasions in the cell), whatever the occasion effects (ICC) and the CV.
-- A cell judges m values, so the cut-off is Bonferroni's: |t| > t(1 − α/(2m), n − g − 1). Then
-- P(any false flag in a null cell) ≤ α (stats_settings outlier_alpha) by construction, for every
-- design. The old rule (3.5 scaled MADs per value) had a per-VALUE cut-off, so the chance of a false
-- flag grew with the size of the cell; pvbench_lab.calibration_flags measures this one on null data.
-- Only values of occasions with ≥ 3 reps are judged (with 2 the two residuals are mirror images:
-- nothing says which one is off; they still feed the pooled sd). Cells need ≥ outlier_min_n values,
-- and a flag also needs |value − reference| ≥ outlier_min_rel_dev of the reference (tiny
-- deviations of very stable cells are not worth a look).
-- A value that differs from others that are all identical (s₍₋ᵢ₎ = 0, e.g. rate-limited fio) is an
-- outlier by any measure: t is infinite.
-- could_flag says whether any value of the value's occasion can pass the cut-off: |t| grows with
-- |value − occasion mean| (the residual grows, the left-out sd shrinks), so an occasion's largest |t|
-- is its min's or its max's, known from its row. is_outlier implies could_flag; report_anomalies
-- reads only the occasions that could (a filter DuckDB applies before the unnest), and nothing here
-- waits for the summary.
-- The occasions (n, mean, ss) are occasion_measurements' rows, made when each run was compacted;
-- each value is read from its occasion's row (no join of every value with its occasion).
with cells as (
    select
        campaign, storage_class, profile, workload, direction, metric,
        sum(n)::bigint as n,
        count(*) as n_occasions,
        sum(ss) as ss_within,
        coalesce(sum(n) filter (where n >= 3), 0)::bigint as n_judged,
        (sum(n) - count(*) - 1)::bigint as df
    from occasion_measurements
    group by all
),
-- one cut-off per distinct (m, df): a handful of calls to the t quantile, not one per value
cutoffs as (
    select n_judged, df, t_quantile(1 - s.outlier_alpha / (2 * n_judged), df) as t_critical
    from (select distinct n_judged, df from cells where n_judged > 0 and df >= 1) d, settings s
),
-- each occasion's row with its cell's, and whether a value of it can pass the cut-off: the left-out
-- t of its farthest value (d from the occasion mean), written without a division (sd_loo may be 0)
occasions as (
    select
        m.campaign, m.run, m.occasion, m.storage_class, m.profile, m.workload, m.workload_title, m.direction,
        m.metric, m.unit, m.better, m.is_headline, m.observations,
        m.n as n_occasion,
        m.mean as occasion_mean,
        c.n, c.n_occasions, c.n_judged, c.df, c.ss_within, k.t_critical,
        greatest(m.max - m.mean, m.mean - m.min) as d
    from occasion_measurements m
    join cells c using (campaign, storage_class, profile, workload, direction, metric)
    left join cutoffs k on k.n_judged = c.n_judged and k.df = c.df
),
screened as (
    select
        * exclude (d),
        -- the bound with a margin of 1e-6 of the cut-off: never below a value's own t by rounding
        coalesce(n_occasion >= 3 and df >= 1 and d * n_occasion / (n_occasion - 1)
            >= (1 - 1e-6) * t_critical * sqrt(1 + 1 / (n_occasion - 1))
               * sqrt(greatest(ss_within - d ^ 2 * n_occasion / (n_occasion - 1), 0) / df), false) as could_flag
    from occasions
),
-- each value with its occasion's median: unnested from the occasion's row, which has them
located as (
    select
        m.* exclude (observations, o), m.o.rep as rep, m.o.value as value, m.o.started_at as started_at,
        list_aggregate(list_transform(m.observations, x -> x.value), 'median') as occasion_median
    from (select *, unnest(observations) as o from screened) m
),
studentized as (
    select *,
        -- the mean of the other reps of the occasion, and the pooled sd without this value
        case when n_occasion >= 2 then (n_occasion * occasion_mean - value) / (n_occasion - 1) end as reference,
        case when n_occasion >= 2 and df >= 1 then sqrt(greatest(
            ss_within - (value - occasion_mean) ^ 2 * n_occasion / (n_occasion - 1), 0) / df) end as sd_loo
    from located
),
scored as (
    select *,
        value - reference as residual,
        case when sd_loo > 0 then (value - reference) / (sd_loo * sqrt(1 + 1 / (n_occasion - 1)))
             when sd_loo = 0 and value <> reference then sign(value - reference) * 'infinity'::double
        end as t_stat
    from studentized
)
select
    r.campaign, r.run, r.occasion, r.storage_class, r.profile, r.workload, r.workload_title, r.rep,
    r.direction, r.metric, r.unit, r.better, r.is_headline, r.value, r.started_at,
    r.n, r.n_occasions, r.n_judged, r.df, r.n_occasion, r.occasion_median, r.occasion_mean,
    r.reference, r.residual, r.sd_loo, r.t_stat, r.t_critical, r.could_flag,
    coalesce(r.n >= s.outlier_min_n
             and r.n_occasion >= 3
             and abs(r.t_stat) > r.t_critical
             and abs(r.residual) >= s.outlier_min_rel_dev * abs(r.reference), false) as is_outlier,
    -- which way: 'slow' is the bad side for this metric (low IOPS, high latency)
    case when (r.residual < 0) = (r.better = 'higher') then 'slow' else 'fast' end as outlier_side
from scored r
cross join settings s
