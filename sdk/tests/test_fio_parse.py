"""fio json+ is read as fio means it: sums for rates, merged histograms for percentiles."""

import json
import subprocess

from pvbench.fio.parse import direction_metrics, percentile_from_bins


def _job(bins, iops, bw_bytes):
    n = sum(bins.values())
    mean = sum(int(k) * v for k, v in bins.items()) / n
    side = {"iops": iops, "bw_bytes": bw_bytes, "io_bytes": bw_bytes, "runtime": 1000,
            "lat_ns": {"N": n, "mean": mean, "bins": {str(k): v for k, v in bins.items()}}}
    empty = {"iops": 0, "bw_bytes": 0, "io_bytes": 0, "runtime": 0}
    return {"jobname": "x", "read": side, "write": empty}


def test_percentiles_come_from_merged_bins_not_averages():
    # Job A: all at 100 µs. Job B: all at 1000 µs, with 9x the samples.
    a = _job({100_000: 100}, 1000.0, 4_096_000)
    b = _job({1_000_000: 900}, 2000.0, 8_192_000)
    [m] = direction_metrics({"jobs": [a, b]})
    assert m.iops == 3000.0
    assert m.bw_mib_s == (4_096_000 + 8_192_000) / 2**20
    # 10% of samples at 100 µs: p50 is 1000 µs (an average of the two p50s would say 550).
    assert m.lat_p50_us == 1000.0 and m.lat_p90_us == 1000.0
    assert m.lat_mean_us == (100 * 100 + 1000 * 900) / 1000
    assert m.lat_kind == "lat"


def test_percentile_rule():
    bins = {10: 1, 20: 1, 30: 1, 40: 1}
    assert [percentile_from_bins(bins, p) for p in (25, 50, 75, 99)] == [10.0, 20.0, 30.0, 40.0]
    assert percentile_from_bins({}, 50) is None


def test_matches_fio_for_a_real_single_job(tmp_path):
    job = tmp_path / "j.fio"
    job.write_text(f"[a]\nioengine=libaio\ndirect=1\ndirectory={tmp_path}\nsize=8M\nrw=randrw\nbs=4k\n"
                   "iodepth=4\ntime_based\nruntime=500ms\nlat_percentiles=1\npercentile_list=50:90:99:99.9\n")
    out = subprocess.run(["fio", "--output-format=json+", str(job)], capture_output=True, text=True, check=True)
    raw = json.loads(out.stdout[out.stdout.find("{"):])
    metrics = {m.direction: m for m in direction_metrics(raw)}
    for direction in ("read", "write"):
        side = raw["jobs"][0][direction]
        pct = side["lat_ns"]["percentile"]
        m = metrics[direction]
        assert m.iops == side["iops"]
        assert m.bw_mib_s == side["bw_bytes"] / 2**20
        assert m.lat_p99_us == pct["99.000000"] / 1000 and m.lat_p50_us == pct["50.000000"] / 1000
        assert abs(m.lat_mean_us - side["lat_ns"]["mean"] / 1000) < 1e-9


def test_multi_job_run_sums_jobs(tmp_path):
    job = tmp_path / "j.fio"
    job.write_text(f"[a]\nioengine=libaio\ndirect=1\ndirectory={tmp_path}\nsize=8M\nrw=randread\nbs=4k\n"
                   "iodepth=2\nnumjobs=3\ntime_based\nruntime=500ms\nlat_percentiles=1\n")
    out = subprocess.run(["fio", "--output-format=json+", str(job)], capture_output=True, text=True, check=True)
    raw = json.loads(out.stdout[out.stdout.find("{"):])
    assert len(raw["jobs"]) == 3
    [m] = direction_metrics(raw)
    assert abs(m.iops - sum(j["read"]["iops"] for j in raw["jobs"])) < 1e-6
    p99s = [j["read"]["lat_ns"]["percentile"]["99.000000"] / 1000 for j in raw["jobs"]]
    assert min(p99s) <= m.lat_p99_us <= max(p99s)
