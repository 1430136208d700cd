-- result_values: long format, one row per result, direction and metric that has a value — of ONE
-- run, made when the run is compacted (grouped by occasion_measurements into its compact). The
-- campaign reads the same rows back as ``measurements``.
-- The metrics are the metric catalog's (metric_catalog: pvbench.results.metrics, the one
-- definition); unit and "better" (which way is good) are attached here, from it, once for every
-- later layer. Each source of the catalog is read by its own branch:
--   fio       — the catalog's fio metrics are columns of result_rows (one value per result and
--               direction); getvariable('metrics_fio') lists them.
--   latency_slo — slo_iops (the latency-slo profile's answer), a column of result_rows on the
--               direction its search timed: read like the fio metrics.
--   lifecycle — a Kubernetes cell's volume lifecycle (how long its fresh volume took to become
--               usable), columns of result_rows repeated on each direction's row: counted once per
--               cell, whatever its test, so its rows pool every test of the class under the workload
--               getvariable('lifecycle_workload') (pvbench.results.schema.LIFECYCLE_WORKLOAD; direction
--               'volume'), summarised and compared like any workload,
--               with pod_start_s (pod created -> benchmark container started) as its headline.
-- excluded_by: the guards whose flag leaves the result out of the statistics (result_rows).
-- Multi-client cells add straggler_ratio (a fio-source metric: slowest client's IOPS / mean client IOPS).
-- A view: occasion_measurements, its only reader, groups the values as they are made, never
-- stored one per row (a compaction's batch of 10,000 documents is ~140,000 values).
-- materialized: view
with fio as (
    unpivot result_rows
    on columns(c -> list_contains(list_concat(getvariable('metrics_fio'), getvariable('metrics_latency_slo')), c))
    into name metric value value
),
lifecycle as (
    unpivot (
        select * replace (getvariable('lifecycle_workload') as workload, 'Volume lifecycle' as workload_title, 'volume' as direction)
        from result_rows
        where pod_start_s is not null or volume_bind_s is not null
        qualify row_number() over (partition by cell_key order by direction) = 1
    )
    on columns(c -> list_contains(getvariable('metrics_lifecycle'), c))
    into name metric value value
)
select
    campaign, run, occasion, storage_class, class_name, volume_mode, access_mode, profile, workload, workload_title,
    rep, cell_order, role,
    direction, rw, bs, bs_bytes, iodepth, numjobs, rwmixread, fsync, wl_group, "load",
    metric,
    c.unit,
    c.better,
    metric = coalesce(headline_metric, 'iops') as is_headline,
    value,
    started_at, node, fio.source, excluded_by
from fio
join metric_catalog c using (metric)
where value is not null and c.source in ('fio', 'latency_slo')
union all by name
select
    campaign, run, occasion, storage_class, class_name, volume_mode, access_mode, profile, workload, workload_title,
    rep, cell_order, role,
    direction, null as rw, null as bs, null as bs_bytes, null as iodepth, null as numjobs, null as rwmixread,
    null as fsync, getvariable('lifecycle_workload') as wl_group, null as "load",
    metric, c.unit, c.better, metric = 'pod_start_s' as is_headline, value,
    -- a guard judges the I/O fio measured, not how long the volume took to become usable
    started_at, node, lifecycle.source, []::varchar[] as excluded_by
from lifecycle
join metric_catalog c using (metric)
where value is not null and c.source = 'lifecycle'
