-- report_seconds_latest: the latest run of each storage class second by second, one line per
-- repetition (latest_run_seconds): IOPS and p50/p99/p99.9 latency of each interval as fio logged
-- them. excluded: a guard flagged the repetition and this aggregation leaves it out (drawn anyway).
select
    campaign, run, occasion, storage_class, profile, workload, workload_title,
    direction, rep, 'rep ' || rep as series, t_s,
    iops, bw_mib_s, lat_p50_us, lat_p99_us, lat_p999_us,
    excluded,
    1 as n,  -- one repetition per point (the charts say n)
    profile in (select profile from profile_catalog where is_sweep) as is_sweep
from latest_run_seconds
order by campaign, storage_class, profile, workload, direction, rep, t_s
