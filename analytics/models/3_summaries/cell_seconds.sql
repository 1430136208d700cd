-- cell_seconds: every result of the campaign second by second, one row per result, direction and
-- interval (cell_series unnested): for a query of your own (`pvbench aggregate` then DuckDB on the
-- compacts). A view: no model reads it, and it is never written out (a row per second of 100,000
-- results); the report draws the latest run of each class (latest_run_seconds).
-- materialized: view
select campaign, run, occasion, storage_class, profile, workload, rep, direction, interval_ms,
    generate_subscripts(t_s, 1) as "interval",
    unnest(t_s)::double as t_s, unnest(iops)::double as iops, unnest(bw_mib_s)::double as bw_mib_s,
    unnest(lat_p50_us)::double as lat_p50_us, unnest(lat_p99_us)::double as lat_p99_us,
    unnest(lat_p999_us)::double as lat_p999_us
from cell_series
