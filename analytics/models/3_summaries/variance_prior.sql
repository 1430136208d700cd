-- variance_prior: per campaign, the prior of its cells' day-to-day variance (the moderated
-- variance of pvbench.stats.moderated, limma's empirical Bayes): every cell (class × workload ×
-- direction × metric) gives the variance of its log occasion means, and the prior — s0² on d0
-- degrees of freedom, capped for cells that share occasions — lets a cell with few occasions
-- borrow strength from the others. The summary intervals stand on it (summary.sql); the report's
-- verdicts fit theirs with the same code in Python (pvbench.stats.tables).
-- Python gets one variance per cell and the occasion residuals of a sample of the cells (how
-- alike cells move is measured on up to correlation_sample() of them): a campaign of 100,000
-- results has hundreds of thousands of occasion rows. Occasion means ≤ 0 have no log: left out.
with occasions as (
    select
        campaign,
        concat_ws('|', storage_class, profile, workload, direction, metric) as cell,
        concat_ws('|', run, occasion) as occasion,
        ln(mean) as log_mean
    from occasion_measurements
    where mean > 0
),
cells as (
    select campaign, cell, var_samp(log_mean) as s2, count(*) - 1 as df, avg(log_mean) as mean_log
    from occasions
    group by all
    having count(*) >= 2 and var_samp(log_mean) > 0
),
picked as (
    select campaign, cell, mean_log, pick
    from (select campaign, cell, mean_log, row_number() over (partition by campaign order by hash(cell), cell) as pick from cells)
    where pick <= correlation_sample()
),
-- the occasions numbered: Python gets each residual's cell and occasion as numbers, not strings
numbered as (
    select campaign, occasion, row_number() over (partition by campaign order by occasion) as occasion_number
    from (select distinct campaign, occasion from occasions)
),
residuals as (
    select campaign, list(p.pick) as cells, list(n.occasion_number) as occasions, list(o.log_mean - p.mean_log) as resids
    from occasions o
    join picked p using (campaign, cell)
    join numbered n using (campaign, occasion)
    group by all
),
variances as (
    select campaign, list(s2) as s2s, list(df) as dfs from cells group by all
),
fitted as (
    select campaign, variance_prior(v.s2s, v.dfs, r.cells, r.occasions, r.resids) as p
    from variances v
    join residuals r using (campaign)
)
select
    campaign,
    p.s2 as prior_s2,
    p.df as prior_df,
    p.cells as prior_cells,
    p.effective_cells as prior_effective_cells
from fitted
