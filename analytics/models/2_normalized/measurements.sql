-- measurements: long format, one row per result, direction and metric that has a value (the
-- columns of result_values), for the whole campaign.
-- materialized: view
-- Unnested from occasion_measurements, the runs' compacts, where a model asks for single values
-- (warm-up ranks, outliers, the runs' dot plots, the comparisons); its filters reach the occasions
-- before they are unnested, and the rows are never all stored at once.
select
    campaign, run, occasion, storage_class, class_name, volume_mode, access_mode, profile, workload, workload_title,
    o.rep, o.cell_order, o.role,
    direction, rw, bs, bs_bytes, iodepth, numjobs, rwmixread, fsync, wl_group, "load",
    metric, unit, better, is_headline,
    o.value, o.started_at, o.node, o.source
from (select * exclude (observations), unnest(observations) as o from occasion_measurements)
