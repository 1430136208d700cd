-- latest_run_seconds: the latest run of each storage class (by when it started: run_usage), second
-- by second: one row per result, direction and interval of that run only, unnested from its
-- cell_series (the campaign's other runs' seconds are never read). excluded: a guard flagged the
-- result and this aggregation leaves it out of the statistics (drawn all the same, and named on the
-- anomalies page).
with latest as (
    select campaign, storage_class, arg_max(run, started_at) as run
    from run_usage
    group by all
),
flags as (
    select distinct source_key, workload_title,
        not list_has_all(getvariable('keep_flagged'), excluded_by) as excluded
    from result_rows
    semi join latest using (campaign, storage_class, run)
),
seconds as (
    select campaign, run, occasion, storage_class, profile, workload, rep, direction, interval_ms, source_key,
        unnest(t_s)::double as t_s, unnest(iops)::double as iops, unnest(bw_mib_s)::double as bw_mib_s,
        unnest(lat_p50_us)::double as lat_p50_us,
        unnest(lat_p99_us)::double as lat_p99_us, unnest(lat_p999_us)::double as lat_p999_us
    from cell_series
    semi join latest using (campaign, storage_class, run)
)
select s.* exclude (source_key), coalesce(f.workload_title, s.workload) as workload_title,
    coalesce(f.excluded, false) as excluded
from seconds s
left join flags f using (source_key)
