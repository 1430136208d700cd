-- report_seconds: each storage class × workload × direction over the seconds of its latest run, as a
-- band over that run's counted repetitions (latest_run_seconds: a guard's excluded repetitions are
-- left out): the mean IOPS and p99 latency of each interval with their lowest and highest, for the
-- LineCharts of the storage class pages and the over-time page (classes side by side).
select
    campaign, any_value(run) as run, storage_class, profile, workload,
    any_value(workload_title) as workload_title,
    direction, t_s,
    count(*) as n,
    avg(iops) as iops_mean, stddev_samp(iops) as iops_sd, min(iops) as iops_min, max(iops) as iops_max,
    avg(lat_p99_us) as p99_mean_us, stddev_samp(lat_p99_us) as p99_sd_us,
    min(lat_p99_us) as p99_min_us, max(lat_p99_us) as p99_max_us,
    profile in (select profile from profile_catalog where is_sweep) as is_sweep
from latest_run_seconds
where not excluded
group by campaign, storage_class, profile, workload, direction, t_s
order by campaign, storage_class, profile, workload, direction, t_s
