-- summary: the distribution of every metric per campaign, storage class, workload and direction,
-- pooled over all runs, occasions and repetitions of the campaign (as the thesis reports it).
--
-- ci95_* is the 95% confidence interval of the mean. Repetitions inside one occasion (one run ×
-- occasion) are not independent — occasions differ far more than repetitions do — so the
-- interval is built from the occasion means: mean of the k occasion means ± t · mean · s̃ / √k,
-- where s̃² is the cell's day-to-day variance on the log scale (the variance of its log occasion
-- means, k − 1 df) moderated by the campaign's prior (variance_prior: d0 df), never below the
-- repetitions' noise of an occasion mean (CV²/n), and t = t(0.975, d0 + k − 1). With 2–3
-- occasions a cell's own estimate has 1–2 df (t = 12.7 at 1): the prior is what makes the
-- interval useful. With no prior (values ≤ 0, or nothing to fit it on) it is the plain
-- ± t(0.975, k−1) · sd(occasion means) / √k; with a single occasion and no prior, the
-- repetitions' (± t(0.975, n−1) · sd / √n), and ci_basis says it covers repetition noise only.
-- Computed from the occasions' rows (occasion_measurements: n, mean and ss of each run × occasion),
-- merged exactly; the quantiles from the occasions' values (observation_values).
with cell_means as (
    select campaign, storage_class, profile, workload, direction, metric, sum(n * mean) / sum(n) as grand_mean
    from occasion_measurements
    group by all
),
occasions as (
    -- each occasion beside its cell's grand mean (a group and a join: a window over every
    -- occasion row sorted them all, a third of the model's time at 100,000 results)
    select o.*, c.grand_mean
    from occasion_measurements o
    join cell_means c using (campaign, storage_class, profile, workload, direction, metric)  -- never null
),
stats as (
    select
        campaign, storage_class, profile, workload,
        any_value(workload_title) as workload_title,
        direction, metric, any_value(unit) as unit, any_value(better) as better,
        bool_or(is_headline) as is_headline,
        any_value(wl_group) as wl_group, any_value("load") as "load", any_value(bs) as bs,
        any_value(bs_bytes) as bs_bytes, any_value(iodepth) as iodepth, any_value(numjobs) as numjobs,
        any_value(fsync) as fsync,
        sum(n)::bigint as n,
        count(distinct run) as n_runs,
        count(*) as n_occasions,
        any_value(grand_mean) as mean,
        -- within the occasions plus between them (Chan et al.)
        case when sum(n) > 1 then sqrt((sum(ss) + sum(n * (mean - grand_mean) ^ 2)) / (sum(n) - 1)) end as sd,
        min(min) as min,
        max(max) as max,
        -- the occasion means: the basis of the interval (their logs for the moderated variance)
        avg(mean) as mean_of_occasions,
        stddev_samp(mean) as sd_of_occasion_means,
        bool_and(mean > 0) as positive,
        var_samp(ln(greatest(mean, 1e-300))) as var_log_means,
        -- the repetitions' noise of an occasion mean, relative (CV² / n): the floor
        coalesce(avg(ss / (n - 1) / n / (mean * mean)) filter (where n > 1 and mean > 0), 0) as floor_log
    from occasions
    group by all
),
quartiles as (
    -- the values alone unnested (observation_values), not the observations' structs: Parquet
    -- decoded every field of those, half the quartiles' time
    select
        campaign, storage_class, profile, workload, direction, metric,
        quantile_cont(value, [0.5, 0.25, 0.75]) as q
    from (select campaign, storage_class, profile, workload, direction, metric, unnest(observation_values) as value
          from occasion_measurements)
    group by all
),
max_df as (select max(df) as df from t_critical),
moderated as (
    -- the cell's day-to-day variance of a log occasion mean, moderated by its campaign's prior
    select
        s.*, p.prior_df, p.prior_cells, p.prior_effective_cells,
        greatest(
            (p.prior_df * p.prior_s2 + (s.n_occasions - 1) * coalesce(s.var_log_means, 0)) / (p.prior_df + s.n_occasions - 1),
            s.floor_log
        ) as var_log,
        p.prior_df + s.n_occasions - 1 as df_log
    from stats s
    left join variance_prior p using (campaign)
),
halves as (
    select
        m.*,
        case when m.positive and m.prior_df > 0
             then t_quantile(0.975, m.df_log) * m.mean_of_occasions * sqrt(m.var_log / m.n_occasions)
             when m.n_occasions >= 2 then tk.t975 * m.sd_of_occasion_means / sqrt(m.n_occasions) end as half_occasions,
        tn.t975 * m.sd / sqrt(m.n) as half_repetitions
    from moderated m
    left join t_critical tn on tn.df = least(m.n - 1, (select df from max_df))
    left join t_critical tk on tk.df = least(m.n_occasions - 1, (select df from max_df))
)
select
    h.* exclude (mean_of_occasions, sd_of_occasion_means, min, max, positive, var_log_means, floor_log,
                 prior_df, prior_cells, prior_effective_cells, var_log, df_log, half_occasions, half_repetitions),
    q.q[1] as median, q.q[2] as q1, q.q[3] as q3, h.min, h.max,
    h.sd / nullif(h.mean, 0) as cv,
    case when h.half_occasions is not null then h.mean_of_occasions - h.half_occasions
         else h.mean - h.half_repetitions end as ci95_low,
    case when h.half_occasions is not null then h.mean_of_occasions + h.half_occasions
         else h.mean + h.half_repetitions end as ci95_high,
    case when h.positive and h.prior_df > 0 then
             printf('%d occasion%s, day-to-day variation moderated by a prior of %.1f df from %d cells',
                    h.n_occasions, case when h.n_occasions = 1 then '' else 's' end, h.prior_df, h.prior_cells)
         when h.n_occasions >= 2 then printf('%d occasions', h.n_occasions)
         else '1 occasion: repetitions only, day-to-day variation not included' end as ci_basis
from halves h
join quartiles q using (campaign, storage_class, profile, workload, direction, metric)
