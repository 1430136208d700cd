-- report_run_summary: each run of the campaign on its own — the run selector of the report.
-- One row per run × storage class × workload × direction × headline metric: that run's n, mean ± sd
-- and median (its repetitions, over its occasions), the campaign's mean over every run for the
-- same cell, and the run's mean relative to it. A judgement of "slower than before" is
-- report_comparisons (kind = run), which accounts for occasions; this table only describes.
-- From the occasions' rows (occasion_measurements), merged per run; the median from their observations.
with occasions as (
    select *,
        sum(n * mean) over w / sum(n) over w as run_mean
    from occasion_measurements
    where is_headline
    window w as (partition by campaign, run, storage_class, profile, workload, direction, metric)
),
merged as (
    select
        campaign, run, storage_class, profile, workload,
        any_value(workload_title) as workload_title,
        direction, metric, any_value(unit) as unit, any_value(better) as better,
        sum(n)::bigint as n,
        count(distinct occasion) as n_occasions,
        string_agg(distinct occasion, ', ' order by occasion) as occasions,
        min(started_at) as started_at,
        any_value(run_mean) as mean,
        case when sum(n) > 1 then sqrt((sum(ss) + sum(n * (mean - run_mean) ^ 2)) / (sum(n) - 1)) end as sd
    from occasions
    group by campaign, run, storage_class, profile, workload, direction, metric
),
medians as (
    select campaign, run, storage_class, profile, workload, direction, metric, quantile_cont(o.value, 0.5) as median
    from (select campaign, run, storage_class, profile, workload, direction, metric, unnest(observations) as o
          from occasion_measurements where is_headline)
    group by all
),
per_run as (
    select m.*, d.median
    from merged m
    join medians d using (campaign, run, storage_class, profile, workload, direction, metric)
)
select
    r.*,
    s.mean as campaign_mean,
    s.n_runs as campaign_runs,
    r.mean / nullif(s.mean, 0) as ratio_to_campaign,
    printf('%.1f ± %.1f', r.mean, coalesce(r.sd, 0)) as mean_pm_sd,
    min(r.started_at) over (partition by r.campaign, r.run) as run_started_at
from per_run r
join summary s using (campaign, storage_class, profile, workload, direction, metric)
order by r.campaign, run_started_at desc, r.run, r.storage_class, r.profile, r.workload_title, r.direction
