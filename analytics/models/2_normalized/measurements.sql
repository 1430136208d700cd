-- measurements: long format, one row per result, direction and metric that has a value.
-- The metrics are the metric catalog's (metric_catalog: pvbench.results.metrics, the one
-- definition); unit and "better" (which way is good) are attached here, from it, once for every
-- later layer. Each source of the catalog is read by its own branch:
--   fio — the catalog's fio metrics are columns of result_rows (one value per result and direction);
--         getvariable('metrics_fio') lists them.
with fio as (
    unpivot result_rows
    on columns(c -> list_contains(getvariable('metrics_fio'), c))
    into name metric value value
)
select
    campaign, run, occasion, storage_class, profile, workload, workload_title, rep, cell_order, role,
    direction, rw, bs, bs_bytes, iodepth, numjobs, rwmixread, fsync, wl_group, "load",
    metric,
    c.unit,
    c.better,
    metric = coalesce(headline_metric, 'iops') as is_headline,
    value,
    started_at, node, fio.source
from fio
join metric_catalog c using (metric)
where value is not null and c.source = 'fio'
