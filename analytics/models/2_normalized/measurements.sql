-- measurements: long format, one row per result, direction and metric that has a value.
-- unit and "better" (which way is good) are attached here, once, for every later layer.
-- The volume lifecycle of a Kubernetes cell (how long its fresh volume took to become usable) is
-- measured once per cell, whatever its test: its rows pool every test of the class under the
-- workload 'volume-lifecycle' (direction 'volume'), summarised and compared like any workload,
-- with pod_start_s (pod created -> benchmark container started) as its headline.
-- Multi-client cells add straggler_ratio (slowest client's IOPS / mean client IOPS; higher is fairer).
with fio as (
    unpivot result_rows
    on iops, bw_mib_s, lat_mean_us, lat_p50_us, lat_p90_us, lat_p99_us, lat_p999_us, straggler_ratio
    into name metric value value
),
lifecycle as (
    unpivot (
        select * replace ('volume-lifecycle' as workload, 'Volume lifecycle' as workload_title, 'volume' as direction)
        from result_rows
        where pod_start_s is not null or volume_bind_s is not null
        qualify row_number() over (partition by cell_key order by direction) = 1
    )
    on volume_bind_s, pod_schedule_s, volume_attach_s, volume_mount_s, pod_start_s
    into name metric value value
)
select
    campaign, run, occasion, storage_class, profile, workload, workload_title, rep, cell_order, role,
    direction, rw, bs, bs_bytes, iodepth, numjobs, rwmixread, fsync, wl_group, "load",
    metric,
    case when metric = 'iops' then 'IOPS' when metric = 'bw_mib_s' then 'MiB/s'
         when metric = 'straggler_ratio' then 'ratio' else 'µs' end as unit,
    case when metric like 'lat_%' then 'lower' else 'higher' end as better,
    metric = coalesce(headline_metric, 'iops') as is_headline,
    value,
    started_at, node, source
from fio
where value is not null
union all by name
select
    campaign, run, occasion, storage_class, profile, workload, workload_title, rep, cell_order, role,
    direction, null as rw, null as bs, null as bs_bytes, null as iodepth, null as numjobs, null as rwmixread,
    null as fsync, 'volume-lifecycle' as wl_group, null as "load",
    metric, 's' as unit, 'lower' as better, metric = 'pod_start_s' as is_headline, value,
    started_at, node, source
from lifecycle
where value is not null
