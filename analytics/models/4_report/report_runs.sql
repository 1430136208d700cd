-- report_runs: single headline values for the storage class page's per-repetition charts (a
-- first repetition slower than the others: warm-up; a line far from the others: an occasion).
-- Bounded: only the newest 10 runs (by when they started) of each storage class and profile in
-- a campaign, so the report stays the same size however many runs a campaign collects; every
-- run is in report_run_summary (per run) and in summary (pooled). run_recency = 1 is the newest
-- run, class_runs how many runs the class and profile have in all; series names a chart line:
-- the occasion, with its run when more than one run is shown (occasion labels repeat).
with runs as (
    -- when each run started, from its occasions' rows: not from its values, whose unnesting (every
    -- headline value of the campaign, to rank its runs) was half of the model's time
    select campaign, storage_class, profile, run, min(started_at) as run_started_at
    from occasion_measurements
    where is_headline
    group by all
),
ranked as (
    select
        campaign, storage_class, profile, run, run_started_at,
        row_number() over (
            partition by campaign, storage_class, profile order by run_started_at desc nulls last, run desc
        ) as run_recency,
        count(*) over (partition by campaign, storage_class, profile) as class_runs
    from runs
)
select
    m.campaign, m.run, m.occasion, m.storage_class, m.profile,
    -- the sweep's cells are drawn as curves (the sweep page), not per repetition
    m.profile in (select profile from profile_catalog where is_sweep) as is_sweep,
    m.workload, m.workload_title, m.rep,
    m.cell_order, m.direction, m.metric, m.unit, m.value, m.started_at,
    case when least(r.class_runs, 10) > 1 then m.run || ' · ' || m.occasion else m.occasion end as series,
    r.run_recency,
    r.class_runs
from measurements m
join ranked r using (campaign, storage_class, profile, run)
where m.is_headline and r.run_recency <= 10
order by m.campaign, m.storage_class, m.profile, m.workload, r.run_started_at, m.run, m.occasion, m.rep
