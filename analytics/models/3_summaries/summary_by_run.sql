-- summary_by_run: as summary, but per run (baseline vs candidate comparisons look here).
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
)
select
    s.*,
    s.sd / nullif(s.mean, 0) as cv,
    s.mean - t.t975 * s.sd / sqrt(s.n) as ci95_low,
    s.mean + t.t975 * s.sd / sqrt(s.n) as ci95_high
from stats s
left join t_critical t on t.df = least(s.n - 1, (select max(df) from t_critical))
