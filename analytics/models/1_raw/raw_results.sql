-- raw_results: the result.json documents of ONE run, one row per document, as written. Run once per
-- run when its results are compacted (pvbench.analytics.compact): the compactor reads each document
-- once, validates it against the result schema and writes the valid ones, verbatim, as one line
-- each of a newline-delimited batch, with two fields in front: its store key (source_key) and the
-- key its identity gives it (cell_key, by which a second copy of one cell is counted once).
-- Invalid ones are in skipped_results, with the reason.
-- The column types are the result schema v1 (sdk/pvbench/results/schema.py), spelled out so
-- DuckDB never has to guess (and a schema drift fails loudly).
-- test_analytics.py checks these field lists against the pydantic model.
-- A view: its two readers, result_rows and cell_series (each result's seconds), read the
-- batch through it, so the documents' nested fields are never stored in a table of their own
-- (parsing a batch twice costs less than storing it parsed: ~0.15 s vs ~1 s per 10,000 documents).
-- materialized: view
select *
from read_json(
    getvariable('result_files'),
    format = 'newline_delimited',
    columns = {
        source_key: 'VARCHAR',
        cell_key: 'VARCHAR',
        schema_version: 'VARCHAR',
        identity: 'STRUCT(campaign VARCHAR, run VARCHAR, occasion VARCHAR, storage_class VARCHAR, profile VARCHAR, workload VARCHAR, volume_mode VARCHAR, access_mode VARCHAR, rep INTEGER, "order" INTEGER, labels MAP(VARCHAR, VARCHAR))',
        workload: 'STRUCT(rw VARCHAR, bs VARCHAR, bs_bytes BIGINT, iodepth INTEGER, numjobs INTEGER, rwmixread INTEGER, fsync INTEGER, ramp_s DOUBLE, runtime_s DOUBLE, size_bytes BIGINT, "group" VARCHAR, "load" VARCHAR, title VARCHAR, headline_metric VARCHAR, clients INTEGER)',
        provenance: 'STRUCT(source VARCHAR, pvbench_version VARCHAR, fio_version VARCHAR, kernel VARCHAR, host VARCHAR, node VARCHAR, target_path VARCHAR, filesystem VARCHAR, provisioner VARCHAR, kubernetes_version VARCHAR, fio_options MAP(VARCHAR, VARCHAR), started_at TIMESTAMPTZ, ended_at TIMESTAMPTZ, cpu_seconds DOUBLE, notes MAP(VARCHAR, VARCHAR))',
        metrics: 'STRUCT(direction VARCHAR, iops DOUBLE, bw_mib_s DOUBLE, io_bytes BIGINT, runtime_ms BIGINT, lat_mean_us DOUBLE, lat_p50_us DOUBLE, lat_p90_us DOUBLE, lat_p99_us DOUBLE, lat_p999_us DOUBLE, lat_kind VARCHAR, straggler_ratio DOUBLE)[]',
        lifecycle: 'STRUCT(claim VARCHAR, volume VARCHAR, pod_created_at TIMESTAMPTZ, claim_created_at TIMESTAMPTZ, volume_bound_at TIMESTAMPTZ, pod_scheduled_at TIMESTAMPTZ, volume_attached_at TIMESTAMPTZ, pod_sandbox_at TIMESTAMPTZ, container_started_at TIMESTAMPTZ, volume_bind_s DOUBLE, pod_schedule_s DOUBLE, volume_attach_s DOUBLE, volume_mount_s DOUBLE, pod_start_s DOUBLE, resolution_s DOUBLE, notes VARCHAR[])',
        clients: 'STRUCT(count INTEGER, start_skew_s DOUBLE, overlap_s DOUBLE, overlap_share DOUBLE, barrier VARCHAR, volumes VARCHAR, per_client STRUCT(client INTEGER, target_path VARCHAR, node VARCHAR, ready_at TIMESTAMPTZ, released_at TIMESTAMPTZ, ended_at TIMESTAMPTZ, measured_from TIMESTAMPTZ, cpu_seconds DOUBLE, metrics STRUCT(direction VARCHAR, iops DOUBLE, bw_mib_s DOUBLE, io_bytes BIGINT, runtime_ms BIGINT, lat_mean_us DOUBLE, lat_p50_us DOUBLE, lat_p90_us DOUBLE, lat_p99_us DOUBLE, lat_p999_us DOUBLE, lat_kind VARCHAR, straggler_ratio DOUBLE)[])[])',
        latency_slo: 'STRUCT(direction VARCHAR, latency VARCHAR, percentile DOUBLE, target_us DOUBLE, met BOOLEAN, iops DOUBLE, latency_us DOUBLE, rate_iops DOUBLE, bound VARCHAR, probes STRUCT(phase VARCHAR, rate_iops DOUBLE, iops DOUBLE, latency_us DOUBLE, met BOOLEAN, runtime_s DOUBLE)[])',
        series: 'STRUCT(interval_ms BIGINT, directions STRUCT(direction VARCHAR, t_s DOUBLE[], iops DOUBLE[], bw_mib_s DOUBLE[], lat_mean_us DOUBLE[], lat_p50_us DOUBLE[], lat_p99_us DOUBLE[], lat_p999_us DOUBLE[])[])',
        steady_state: 'STRUCT(criterion VARCHAR, window_s DOUBLE, ramp_s DOUBLE, max_s DOUBLE, attained BOOLEAN, after_s DOUBLE)',
        guards: 'STRUCT(rule VARCHAR, "value" DOUBLE, threshold DOUBLE, excluded BOOLEAN, detail VARCHAR)[]'
    }
)
where schema_version = 'pvbench.result/v1'
