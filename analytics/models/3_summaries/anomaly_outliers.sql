-- anomaly_outliers: every measurement with a robust outlier test.
-- Each value is compared with the median of its own occasion (run × occasion), so a whole
-- occasion running slower is an occasion effect (report_occasions), not twenty outliers; the
-- yardstick is the MAD of those residuals over the whole cell (campaign × run × storage class ×
-- workload × direction × metric), which stays stable with 5 reps per occasion. An occasion of
-- fewer than 3 values is compared with the cell's median instead. Zero residuals (the median
-- value itself) are left out of the MAD: with 5 reps per occasion they would shrink it by a fifth.
-- Rule (stats_settings): |residual| > k · 1.4826 · MAD and ≥ min_rel_dev of the median, in cells
-- of at least min_n values; k = 3.5 is Iglewicz & Hoaglin's modified z-score cut-off (on normal
-- noise in a 4 occasions × 5 reps design it flags about 0.5% of values). MAD, not the sd: one
-- wild value cannot hide itself by inflating the yardstick. Tukey's fences over the cell
-- (Q1 − 1.5·IQR, Q3 + 1.5·IQR) ride along.
with settings as (
    select
        max(value) filter (where name = 'outlier_mad_k')       as k,
        max(value) filter (where name = 'outlier_min_rel_dev') as min_rel_dev,
        max(value) filter (where name = 'outlier_min_n')       as min_n
    from stats_settings
),
located as (
    select
        *,
        count(*) over cell as n,
        median(value) over cell as cell_median,
        quantile_cont(value, 0.25) over cell as q1,
        quantile_cont(value, 0.75) over cell as q3,
        count(*) over occ as n_occasion,
        median(value) over occ as occasion_median
    from measurements
    window
        cell as (partition by campaign, run, storage_class, profile, workload, direction, metric),
        occ as (partition by campaign, run, occasion, storage_class, profile, workload, direction, metric)
),
residuals as (
    select *,
        case when n_occasion >= 3 then occasion_median else cell_median end as reference,
        value - case when n_occasion >= 3 then occasion_median else cell_median end as residual
    from located
),
scaled as (
    select *,
        1.4826 * median(abs(residual)) filter (where residual <> 0) over (
            partition by campaign, run, storage_class, profile, workload, direction, metric) as mad_scaled
    from residuals
)
select
    r.campaign, r.run, r.occasion, r.storage_class, r.profile, r.workload, r.workload_title, r.rep,
    r.direction, r.metric, r.unit, r.better, r.is_headline, r.value, r.started_at,
    r.n, r.cell_median, r.n_occasion, r.occasion_median, r.reference, r.residual, r.mad_scaled,
    r.residual / nullif(r.mad_scaled, 0) as robust_z,
    r.q1 - 1.5 * (r.q3 - r.q1) as tukey_low,
    r.q3 + 1.5 * (r.q3 - r.q1) as tukey_high,
    r.value < r.q1 - 1.5 * (r.q3 - r.q1) or r.value > r.q3 + 1.5 * (r.q3 - r.q1) as outside_tukey,
    (r.n >= s.min_n
     and abs(r.residual) > s.k * r.mad_scaled
     and abs(r.residual) >= s.min_rel_dev * abs(r.reference)) as is_outlier,
    -- which way: 'slow' is the bad side for this metric (low IOPS, high latency)
    case when (r.residual < 0) = (r.better = 'higher') then 'slow' else 'fast' end as outlier_side
from scaled r
cross join settings s
