-- summary: the distribution of every metric per campaign, storage class, workload and direction,
-- pooled over all runs, occasions and repetitions of the campaign (as the thesis reports it).
--
-- ci95_* is the 95% confidence interval of the mean. Repetitions inside one occasion (one run ×
-- occasion) are not independent — occasions differ far more than repetitions do — so the
-- interval is built from the occasion means: mean of the k occasion means ± t(0.975, k−1) ·
-- sd(occasion means) / √k. That holds its 95% whatever share of the variance lies between
-- occasions (ci/stats_calibration.py). With a single occasion nothing is known about day-to-day
-- variation: the interval then comes from the repetitions (± t(0.975, n−1) · sd / √n) and
-- ci_basis says it covers repetition noise only.
-- Computed from the occasions' rows (occasion_measurements: n, mean and ss of each run × occasion),
-- merged exactly; the quantiles from the occasions' observations.
with cell_means as (
    select campaign, storage_class, profile, workload, direction, metric, sum(n * mean) / sum(n) as grand_mean
    from occasion_measurements
    group by campaign, storage_class, profile, workload, direction, metric
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
        -- the occasion means: the basis of the interval
        avg(mean) as mean_of_occasions,
        stddev_samp(mean) as sd_of_occasion_means
    from occasions
    group by campaign, storage_class, profile, workload, direction, metric
),
quartiles as (
    -- the values alone unnested, not the observations' structs (a fifth of the quartiles' time)
    select
        campaign, storage_class, profile, workload, direction, metric,
        quantile_cont(value, [0.5, 0.25, 0.75]) as q
    from (select campaign, storage_class, profile, workload, direction, metric,
                 unnest(list_transform(observations, o -> o.value)) as value
          from occasion_measurements)
    group by campaign, storage_class, profile, workload, direction, metric
),
max_df as (select max(df) as df from t_critical)
select
    s.* exclude (mean_of_occasions, sd_of_occasion_means, min, max),
    q.q[1] as median, q.q[2] as q1, q.q[3] as q3, s.min, s.max,
    s.sd / nullif(s.mean, 0) as cv,
    case when s.n_occasions >= 2 then s.mean_of_occasions - tk.t975 * s.sd_of_occasion_means / sqrt(s.n_occasions)
         else s.mean - tn.t975 * s.sd / sqrt(s.n) end as ci95_low,
    case when s.n_occasions >= 2 then s.mean_of_occasions + tk.t975 * s.sd_of_occasion_means / sqrt(s.n_occasions)
         else s.mean + tn.t975 * s.sd / sqrt(s.n) end as ci95_high,
    case when s.n_occasions >= 2 then printf('%d occasions', s.n_occasions)
         else '1 occasion: repetitions only, day-to-day variation not included' end as ci_basis
from stats s
join quartiles q using (campaign, storage_class, profile, workload, direction, metric)
left join t_critical tn on tn.df = least(s.n - 1, (select df from max_df))
left join t_critical tk on tk.df = least(s.n_occasions - 1, (select df from max_df))
