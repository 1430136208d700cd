-- occasion_components: how much of a cell's spread is between occasions (time of day/week)
-- and how much within one occasion (repetition to repetition). One-way random-effects ANOVA
-- over the groups run × occasion of a campaign, storage class, workload, direction and metric:
--   MS_between = Σ n_i (ȳ_i − ȳ)² / (k − 1),  MS_within = Σ (n_i − 1) s_i² / (N − k)
--   σ²_between = max(0, (MS_between − MS_within) / n0),  n0 = (N − Σ n_i² / N) / (k − 1)
--   σ²_within  = MS_within;  share_between = σ²_between / (σ²_between + σ²_within)  (the ICC)
-- F = MS_between / MS_within tests "no occasion effect" (p from the F distribution, f_pvalue()).
-- The groups are the occasions' rows of occasion_measurements (n, mean and ss of each run × occasion).
with groups as (
    select
        campaign, storage_class, profile, workload, direction, metric,
        run, occasion,
        n as n_i,
        mean as mean_i,
        ss as ss_within_i,
        started_at
    from occasion_measurements
),
cells as (
    select
        campaign, storage_class, profile, workload, direction, metric,
        count(*) as k,
        sum(n_i)::bigint as n,
        sum(n_i * mean_i) / sum(n_i) as grand_mean,
        sum(ss_within_i) as ss_within,
        sum(n_i * n_i)::bigint as sum_n2
    from groups
    group by all
),
anova as (
    select
        c.*,
        sum(g.n_i * (g.mean_i - c.grand_mean) ^ 2) as ss_between
    from cells c
    join groups g using (campaign, storage_class, profile, workload, direction, metric)
    where c.k >= 2 and c.n > c.k
    group by all
),
components as (
    select
        *,
        ss_between / (k - 1) as ms_between,
        ss_within / (n - k) as ms_within,
        (n - sum_n2 / n) / (k - 1) as n0
    from anova
)
select
    campaign, storage_class, profile, workload, direction, metric,
    k as n_occasions, n, grand_mean as mean,
    ms_between, ms_within,
    greatest(0, (ms_between - ms_within) / n0) as var_between,
    ms_within as var_within,
    sqrt(greatest(0, (ms_between - ms_within) / n0)) as sd_between,
    sqrt(ms_within) as sd_within,
    sqrt(greatest(0, (ms_between - ms_within) / n0)) / nullif(abs(grand_mean), 0) as cv_between,
    sqrt(ms_within) / nullif(abs(grand_mean), 0) as cv_within,
    greatest(0, (ms_between - ms_within) / n0)
        / nullif(greatest(0, (ms_between - ms_within) / n0) + ms_within, 0) as share_between,
    ms_between / nullif(ms_within, 0) as f_stat,
    k - 1 as df_between,
    n - k as df_within,
    f_pvalue(ms_between / nullif(ms_within, 0), k - 1, n - k) as p_value
from components
