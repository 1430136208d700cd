-- cell_series: each result's seconds as fio's interval logs gave them (the documents' series), one
-- row per result and direction, the intervals kept as aligned lists (item i of each is interval i):
-- of ONE run, made when the run is compacted (compact/…/run=<r>/cell_series.parquet). Lists, not a
-- row per second: a compaction of 10,000 results with 30 s each writes 10,000 rows, not 300,000, and
-- the campaign unnests only the latest run of each class (latest_run_seconds). The stability figures
-- are computed from the same lists in result_rows.
-- In single precision (a second's IOPS or latency needs no more than 7 digits): t_s (each interval's
-- end, seconds since fio's measurement began), IOPS, MiB/s and the p50, p99 and p99.9 latency (from
-- fio's per-second histograms); the mean latency stays in the documents. The latency lists may be
-- empty (a log fio did not write). Results without a series have no row. cell_seconds unnests them.
select
    r.identity.campaign as campaign,
    r.identity.run as run,
    r.identity.occasion as occasion,
    r.identity.storage_class as storage_class,
    r.identity.profile as profile,
    r.identity.workload as workload,
    r.identity.rep as rep,
    r.series.interval_ms as interval_ms,
    d.direction,
    d.t_s::float[] as t_s, d.iops::float[] as iops, d.bw_mib_s::float[] as bw_mib_s,
    d.lat_p50_us::float[] as lat_p50_us, d.lat_p99_us::float[] as lat_p99_us, d.lat_p999_us::float[] as lat_p999_us,
    r.source_key
from (select *, unnest(series.directions) as d from raw_results where series is not null) r
