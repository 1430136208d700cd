-- report_run_summary: each run of the campaign on its own — the run selector of the report.
-- One row per run × storage class × workload × direction × headline metric: that run's n, mean ± sd
-- and median (its repetitions, over its occasions), the campaign's mean over every run for the
-- same cell, and the run's mean relative to it. A judgement of "slower than before" is
-- report_comparisons (kind = run), which accounts for occasions; this table only describes.
-- Each run's cells are run_cells (made when the run was compacted).
select
    r.*,
    s.mean as campaign_mean,
    s.n_runs as campaign_runs,
    r.mean / nullif(s.mean, 0) as ratio_to_campaign,
    printf('%.1f ± %.1f', r.mean, coalesce(r.sd, 0)) as mean_pm_sd,
    min(r.started_at) over (partition by r.campaign, r.run) as run_started_at
from run_cells r
join summary s using (campaign, storage_class, profile, workload, direction, metric)
order by r.campaign, run_started_at desc, r.run, r.storage_class, r.profile, r.workload_title, r.direction
