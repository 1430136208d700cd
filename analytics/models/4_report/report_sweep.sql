-- report_sweep: block size × load level curves (means over repetitions), read and write apart.
select
    campaign, storage_class, wl_group, bs, bs_bytes, "load", direction,
    max(n) as n,
    max(mean) filter (where metric = 'iops') as iops,
    max(mean) filter (where metric = 'bw_mib_s') as bw_mib_s,
    max(mean) filter (where metric = 'lat_mean_us') as lat_mean_us,
    max(mean) filter (where metric = 'lat_p99_us') as lat_p99_us
from summary
where profile in (select profile from profile_catalog where is_sweep)
group by all
order by campaign, storage_class, wl_group, "load", direction, bs_bytes
