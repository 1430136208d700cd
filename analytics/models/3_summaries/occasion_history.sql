-- occasion_history: the history of each headline metric of a storage class, one row per occasion
-- (campaign × run × occasion) of each series (storage class × profile × workload × direction ×
-- metric): when it ran, its mean with the 95% interval of its repetitions, and what the run that
-- measured it says about itself: role, trigger (cron, manual, storageclass, csi-<driver>, ci) and
-- the change it followed (old → new CSI driver image, the object that changed) — the events that
-- pvbench.stats.history ties change points to, as ``event``, a readable line (null: no change).
-- A series is one workload of one class on one node selection (the run's node-label=node-value;
-- null in local mode), whatever the campaign: a campaign's aggregation takes in the other
-- campaigns' stored tables, and `pvbench history` merges them all (pvbench.stats.history).
-- From the occasions' rows (occasion_measurements: their roles and nodes, not their values) and
-- each run's labels (run_setup).
with run_labels as (
    -- one set of labels per run and class (every result of a run carries the run's labels)
    select
        campaign, run, storage_class,
        max(trigger) as trigger, max(changed) as changed, max(old_image) as old_image, max(new_image) as new_image,
        max(node_selection) as node_selection
    from run_setup
    group by all
),
runs as (
    -- when each run started: its first occasion's first result, over every class and workload
    select campaign, run, min(started_at) as run_started_at
    from occasion_measurements
    group by all
),
images as (
    -- an image as repository and tag: "registry/driver:v1.2" → "registry/driver", "v1.2"
    select
        *,
        regexp_replace(old_image, ':[^:/@]+$', '') as old_repository,
        regexp_extract(old_image, ':([^:/@]+)$', 1) as old_tag,
        regexp_replace(new_image, ':[^:/@]+$', '') as new_repository,
        regexp_extract(new_image, ':([^:/@]+)$', 1) as new_tag
    from run_labels
),
events as (
    select
        campaign, run, storage_class, trigger, changed, old_image, new_image, node_selection,
        case
            -- the same repository: only the tags ("CSI driver image v1.2 → v1.3")
            when new_image is not null and old_repository = new_repository and old_tag <> '' and new_tag <> ''
                then 'CSI driver image ' || old_tag || ' → ' || new_tag
                     || coalesce(' (' || changed || ')', '')
            when new_image is not null
                then 'CSI driver image ' || coalesce(old_image, '?') || ' → ' || new_image
                     || coalesce(' (' || changed || ')', '')
            when changed is not null then changed || ' changed'
            when trigger = 'storageclass' then 'StorageClass changed'
            when trigger like 'csi-%' then 'CSI driver changed (' || trigger || ')'
            when trigger = 'ci' then 'CI webhook'
        end as change_event
    from images
)
select
    o.storage_class, e.node_selection, o.profile, o.workload, o.workload_title, o.direction, o.metric, o.unit, o.better,
    o.campaign, o.run, o.occasion,
    o.started_at as occasion_started_at,
    r.run_started_at,
    o.n,
    o.mean,
    case when o.n > 1 then sqrt(o.ss / (o.n - 1)) end as sd,
    -- the repetitions' interval of the occasion mean: t(0.975, n − 1) · sd / √n
    case when o.n > 1 then o.mean - t.t975 * sqrt(o.ss / (o.n - 1)) / sqrt(o.n) end as ci95_low,
    case when o.n > 1 then o.mean + t.t975 * sqrt(o.ss / (o.n - 1)) / sqrt(o.n) end as ci95_high,
    nullif(array_to_string(o.named_roles, ', '), '') as role,
    nullif(array_to_string(o.nodes, ', '), '') as nodes,
    e.trigger, e.changed, e.old_image, e.new_image,
    -- a labelled change, else a candidate run (role=candidate: started after a change) is one
    coalesce(e.change_event, case when list_contains(o.named_roles, 'candidate') then 'candidate run' end)
        as event
from occasion_measurements o
join runs r using (campaign, run)
left join events e using (campaign, run, storage_class)
left join t_critical t on t.df = least(o.n - 1, (select max(df) from t_critical))
where o.is_headline
