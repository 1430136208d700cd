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
with stats as (
    select
        campaign, storage_class, profile, workload,
        any_value(workload_title) as workload_title,
        direction, metric, any_value(unit) as unit, any_value(better) as better,
        bool_or(is_headline) as is_headline,
        any_value(wl_group) as wl_group, any_value("load") as "load", any_value(bs) as bs,
        any_value(bs_bytes) as bs_bytes, any_value(iodepth) as iodepth, any_value(numjobs) as numjobs,
        any_value(fsync) as fsync,
        count(*) as n,
        count(distinct run) as n_runs,
        count(distinct (run, occasion)) as n_occasions,
        avg(value) as mean,
        stddev_samp(value) as sd,
        quantile_cont(value, 0.5) as median,
        quantile_cont(value, 0.25) as q1,
        quantile_cont(value, 0.75) as q3,
        min(value) as min,
        max(value) as max
    from measurements
    group by campaign, storage_class, profile, workload, direction, metric
),
occasion_means as (
    select campaign, storage_class, profile, workload, direction, metric, run, occasion, avg(value) as occasion_mean
    from measurements
    group by all
),
between_occasions as (
    select campaign, storage_class, profile, workload, direction, metric,
           avg(occasion_mean) as mean_of_occasions,
           stddev_samp(occasion_mean) as sd_of_occasion_means
    from occasion_means
    group by all
),
max_df as (select max(df) as df from t_critical)
select
    s.*,
    s.sd / nullif(s.mean, 0) as cv,
    case when s.n_occasions >= 2 then b.mean_of_occasions - tk.t975 * b.sd_of_occasion_means / sqrt(s.n_occasions)
         else s.mean - tn.t975 * s.sd / sqrt(s.n) end as ci95_low,
    case when s.n_occasions >= 2 then b.mean_of_occasions + tk.t975 * b.sd_of_occasion_means / sqrt(s.n_occasions)
         else s.mean + tn.t975 * s.sd / sqrt(s.n) end as ci95_high,
    case when s.n_occasions >= 2 then printf('%d occasions', s.n_occasions)
         else '1 occasion: repetitions only, day-to-day variation not included' end as ci_basis
from stats s
join between_occasions b using (campaign, storage_class, profile, workload, direction, metric)
left join t_critical tn on tn.df = least(s.n - 1, (select df from max_df))
left join t_critical tk on tk.df = least(s.n_occasions - 1, (select df from max_df))
