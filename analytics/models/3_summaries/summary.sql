-- summary: the distribution of every metric per campaign, storage class, workload and direction,
-- pooled over all runs, occasions and repetitions of the campaign (as the thesis reports it).
-- ci95_* is the 95% confidence interval of the mean: mean ± t(0.975, n-1) · sd / √n.
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
        count(distinct occasion) as n_occasions,
        avg(value) as mean,
        stddev_samp(value) as sd,
        quantile_cont(value, 0.5) as median,
        quantile_cont(value, 0.25) as q1,
        quantile_cont(value, 0.75) as q3,
        min(value) as min,
        max(value) as max
    from measurements
    group by campaign, storage_class, profile, workload, direction, metric
)
select
    s.*,
    s.sd / nullif(s.mean, 0) as cv,
    s.mean - t.t975 * s.sd / sqrt(s.n) as ci95_low,
    s.mean + t.t975 * s.sd / sqrt(s.n) as ci95_high
from stats s
left join t_critical t on t.df = least(s.n - 1, (select max(df) from t_critical))
