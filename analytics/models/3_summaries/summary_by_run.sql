-- summary_by_run: as summary, but per run; its 95% CI is built the same way (from the run's
-- occasion means once the run has ≥ 2 occasions; see summary.sql).
with stats as (
    select
        campaign, run, storage_class, profile, workload,
        any_value(workload_title) as workload_title,
        direction, metric, any_value(unit) as unit, any_value(better) as better,
        bool_or(is_headline) as is_headline,
        any_value(role) as role,
        count(*) as n,
        count(distinct occasion) as n_occasions,
        avg(value) as mean,
        stddev_samp(value) as sd,
        quantile_cont(value, 0.5) as median,
        min(value) as min,
        max(value) as max,
        min(started_at) as first_started_at
    from measurements
    group by campaign, run, storage_class, profile, workload, direction, metric
),
occasion_means as (
    select campaign, run, storage_class, profile, workload, direction, metric, occasion, avg(value) as occasion_mean
    from measurements
    group by all
),
between_occasions as (
    select campaign, run, storage_class, profile, workload, direction, metric,
           avg(occasion_mean) as mean_of_occasions, stddev_samp(occasion_mean) as sd_of_occasion_means
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
join between_occasions b using (campaign, run, storage_class, profile, workload, direction, metric)
left join t_critical tn on tn.df = least(s.n - 1, (select df from max_df))
left join t_critical tk on tk.df = least(s.n_occasions - 1, (select df from max_df))
