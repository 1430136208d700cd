-- run_setup: what each run measured, and on what: one row per run × occasion × storage class ×
-- workload × direction and each distinct setup its results recorded (provisioner, filesystem,
-- node, versions, timing, the class's name and volume shape (storage_class is both: result_rows), the run's labels: trigger, changed, old_image → new_image, node_selection), with how many
-- results and rows that is, the cell order recorded, and when the first and the last of them started.
-- Per run: made when the run is compacted (one of the compact's tables), so the pages that describe
-- the campaign's setup and design (report_storage_classes, report_methodology) read a few hundred
-- rows per run instead of every result's row whenever a run is added. The rows are not one per
-- result: counts are summed (n_rows, n_results, n_ordered), the facts are distinct sets.
with rows as (
    select
        *,
        -- a result has a row per direction (read, write): counted once, on its first
        row_number() over (partition by source_key order by direction) = 1 as first_of_result
    from result_rows
)
select
    campaign, run, occasion, storage_class, class_name, volume_mode, access_mode, profile, workload, direction,
    provisioner, filesystem,
    coalesce(node, host) as node,  -- the node in a cluster, the host in local mode
    source, platform, seed, pvbench_version, fio_version, kernel, kubernetes_version,
    ramp_s, runtime_s, size_bytes,
    trigger, changed, old_image, new_image, node_selection,
    count(*) as n_rows,
    count(*) filter (where first_of_result) as n_results,
    count(cell_order) as n_ordered,
    min(started_at) as first_started_at,
    max(started_at) as last_started_at
from rows
group by all
