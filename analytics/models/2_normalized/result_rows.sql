-- result_rows: one row per result and direction (read / write), identity and workload flattened.
-- The compact form of a run (compact/…/run=<r>/result_rows.parquet): made once per run from its
-- documents; every campaign-level model reads the union of the runs' compacts through this table.
with unnested as (
    select
        r.identity as id, r.workload as wl, r.provenance as pv, r.lifecycle as lc, r.clients as cl,
        r.latency_slo as slo, unnest(r.metrics) as m, r.source_key, r.cell_key
    from raw_results r
)
select
    id.campaign                          as campaign,
    id.run                               as run,
    id.occasion                          as occasion,
    id.storage_class                     as storage_class,
    id.profile                           as profile,
    id.workload                          as workload,
    coalesce(wl.title, id.workload) as workload_title,
    id.rep                               as rep,
    id."order"                           as cell_order,
    coalesce(id.labels['role'], '')      as role,
    wl.rw                                as rw,
    wl.bs                                as bs,
    wl.bs_bytes                          as bs_bytes,
    wl.iodepth                           as iodepth,
    wl.numjobs                           as numjobs,
    wl.rwmixread                         as rwmixread,
    wl.fsync                             as fsync,
    wl."group"                           as wl_group,
    wl."load"                            as "load",
    wl.headline_metric                   as headline_metric,
    wl.ramp_s                            as ramp_s,
    wl.runtime_s                         as runtime_s,
    wl.size_bytes                        as size_bytes,
    coalesce(wl.clients, 1)              as clients,
    m.*,  -- direction and every field of DirectionMetrics (1_raw/raw_results.sql types them);
          -- for multi-client cells (pvbench.fio.merge) the clients' totals and straggler_ratio
    cl.start_skew_s                      as client_start_skew_s,
    cl.overlap_share                     as client_overlap_share,
    cl.volumes                           as client_volumes,  -- own | shared (one volume for all clients)
    -- latency-bounded IOPS (latency-slo profile), on the direction the search timed; slo_iops is
    -- null when the target was not met (slo_met false) and outside that profile
    case when slo.direction = m.direction then slo.iops end as slo_iops,
    case when slo.direction = m.direction then slo.met end as slo_met,
    case when slo.direction = m.direction then slo.percentile end as slo_percentile,
    case when slo.direction = m.direction then slo.target_us end as slo_target_us,
    case when slo.direction = m.direction then slo.latency end as slo_latency,
    pv.source                          as source,
    pv.node                            as node,
    pv.host                            as host,
    pv.filesystem                      as filesystem,
    pv.provisioner                     as provisioner,
    pv.kubernetes_version              as kubernetes_version,
    pv.fio_version                     as fio_version,
    pv.pvbench_version                 as pvbench_version,
    pv.kernel                          as kernel,
    pv.started_at                      as started_at,
    pv.ended_at                        as ended_at,
    pv.cpu_seconds                     as cpu_seconds,
    pv.notes['seed']                   as seed,
    pv.notes['platform']               as platform,
    -- the cell's volume lifecycle (Kubernetes cells): once per cell, repeated on each direction's
    -- row; measurements counts it once per cell
    lc.volume_bind_s                   as volume_bind_s,
    lc.pod_schedule_s                  as pod_schedule_s,
    lc.volume_attach_s                 as volume_attach_s,
    lc.volume_mount_s                  as volume_mount_s,
    lc.pod_start_s                     as pod_start_s,
    source_key,
    cell_key
from unnested
