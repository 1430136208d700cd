-- measurements: long format, one row per result, direction and metric that has a value.
-- unit and "better" (which way is good) are attached here, once, for every later layer.
with long as (
    unpivot result_rows
    on iops, bw_mib_s, lat_mean_us, lat_p50_us, lat_p90_us, lat_p99_us, lat_p999_us, slo_iops
    into name metric value value
)
select
    campaign, run, occasion, storage_class, profile, workload, workload_title, rep, cell_order, role,
    direction, rw, bs, bs_bytes, iodepth, numjobs, rwmixread, fsync, wl_group, "load",
    metric,
    case when metric in ('iops', 'slo_iops') then 'IOPS' when metric = 'bw_mib_s' then 'MiB/s' else 'µs' end as unit,
    case when metric like 'lat_%' then 'lower' else 'higher' end as better,
    metric = coalesce(headline_metric, 'iops') as is_headline,
    value,
    started_at, node, source
from long
where value is not null
