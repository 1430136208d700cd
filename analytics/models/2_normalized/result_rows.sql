-- result_rows: one row per result and direction (read / write), identity and workload flattened.
-- The compact form of a run (compact/…/run=<r>/result_rows.parquet): made once per run from its
-- documents; every campaign-level model reads the union of the runs' compacts through this table.
with unnested as (
    select
        r.identity as id, r.workload as wl, r.provenance as pv, r.lifecycle as lc, r.clients as cl,
        r.latency_slo as slo, r.steady_state as ss, coalesce(r.guards, []) as guards,
        unnest(r.metrics) as m, r.series, r.source_key, r.cell_key
    from raw_results r
),
with_series as (
    -- the direction's own seconds (fio's interval logs), if the result has them
    select *, list_filter(coalesce(series.directions, []), d -> d.direction = m.direction)[1] as sec
    from unnested
),
stability as (
    select *,
        case coalesce(wl.headline_metric, 'iops')
            when 'bw_mib_s' then sec.bw_mib_s when 'lat_mean_us' then sec.lat_mean_us else sec.iops
        end as headline_seconds,
        coalesce(wl.headline_metric, 'iops') = 'lat_mean_us' as headline_lower_is_better
    from with_series
)
select
    id.campaign                          as campaign,
    id.run                               as run,
    id.occasion                          as occasion,
    -- the class as every later model groups it: with its volume shape unless that is the default
    -- (Filesystem, ReadWriteOnce), so one class measured as a raw Block volume and as a filesystem
    -- is two classes in every summary, comparison and history, never one mean of both. The same
    -- label as pvbench.cells.volume.storage_label (a test keeps them equal).
    id.storage_class || case
        when coalesce(id.volume_mode, 'Filesystem') = 'Filesystem' and coalesce(id.access_mode, 'ReadWriteOnce') = 'ReadWriteOnce' then ''
        else ' (' || concat_ws(', ',
            nullif(coalesce(id.volume_mode, 'Filesystem'), 'Filesystem'),
            case coalesce(id.access_mode, 'ReadWriteOnce') when 'ReadWriteOnce' then null when 'ReadWriteMany' then 'RWX' else id.access_mode end
        ) || ')'
    end                                  as storage_class,
    id.storage_class                     as class_name,
    coalesce(id.volume_mode, 'Filesystem') as volume_mode,
    coalesce(id.access_mode, 'ReadWriteOnce') as access_mode,
    id.profile                           as profile,
    id.workload                          as workload,
    coalesce(wl.title, id.workload) as workload_title,
    id.rep                               as rep,
    id."order"                           as cell_order,
    coalesce(id.labels['role'], '')      as role,
    -- why the run ran and after which change (the workflow parameters Argo Events' triggers set):
    -- the events of a class's history (occasion_history)
    nullif(id.labels['trigger'], '')     as trigger,
    nullif(id.labels['changed'], '')     as changed,
    nullif(id.labels['old-image'], '')   as old_image,
    nullif(id.labels['new-image'], '')   as new_image,
    -- the nodes the run asked for (node-label=node-value; null in local mode): part of a history
    -- series' identity
    nullif(id.labels['node-selection'], '') as node_selection,
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
    -- fio's steadystate criterion (profiles that set one): whether fio saw it met, and when
    ss.criterion                       as steady_criterion,
    ss.window_s                        as steady_window_s,
    ss.max_s                           as steady_max_s,
    ss.attained                        as steady_attained,
    ss.after_s                         as steady_after_s,
    -- the guards that tripped (usually none): every flag for the flagged cells' report, and the
    -- rules whose flag leaves the result out of the statistics, sorted: occasion_measurements groups
    -- by them, so an aggregation can keep a rule's flagged values without compacting again
    guards,
    list_sort(list_distinct(list_transform(list_filter(guards, g -> g.excluded), g -> g.rule))) as excluded_by,
    -- fio's job options, for the flagged cells only (the report shows what they ran with; stored
    -- for every result they would be the largest column of the compact)
    case when len(guards) > 0 then pv.fio_options end as flagged_fio_options,
    -- how steady the result ran, from its seconds (null without a series): computed here from the
    -- lists, once per result, so no model ever unnests every result's seconds.
    --   stability_cv           sd / mean of the headline metric's seconds (sample sd)
    --   worst_second_ratio     the worst second against the median second, direction-aware: min ÷
    --                          median when higher is better (IOPS, MiB/s), max ÷ median for latency
    --   iops_min_ratio, p99_max_ratio   the same for IOPS and p99 latency, whatever the headline
    len(sec.iops)                      as n_seconds,
    list_max(sec.t_s)                  as series_s,
    list_stddev_samp(headline_seconds) / nullif(list_avg(headline_seconds), 0) as stability_cv,
    case when headline_lower_is_better
        then list_max(headline_seconds) / nullif(list_median(headline_seconds), 0)
        else list_min(headline_seconds) / nullif(list_median(headline_seconds), 0)
    end                                as worst_second_ratio,
    list_stddev_samp(sec.iops) / nullif(list_avg(sec.iops), 0) as iops_cv,
    list_min(sec.iops) / nullif(list_median(sec.iops), 0) as iops_min_ratio,
    list_max(sec.lat_p99_us) / nullif(list_median(sec.lat_p99_us), 0) as p99_max_ratio,
    source_key,
    cell_key
from stability
