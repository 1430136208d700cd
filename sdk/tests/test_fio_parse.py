"""fio json+ is read as fio means it: sums for rates, merged histograms for percentiles."""

import json
import math
import platform
import random
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from pvbench.fio.parse import (
    direction_metrics,
    fio_percentile_threshold,
    percentile_from_bins,
)


def _job(bins, iops, bw_bytes):
    n = sum(bins.values())
    mean = sum(int(k) * v for k, v in bins.items()) / n
    side = {
        "iops": iops,
        "bw_bytes": bw_bytes,
        "io_bytes": bw_bytes,
        "runtime": 1000,
        "lat_ns": {"N": n, "mean": mean, "bins": {str(k): v for k, v in bins.items()}},
    }
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
    job.write_text(
        f"[a]\nioengine=libaio\ndirect=1\ndirectory={tmp_path}\nsize=8M\nrw=randrw\nbs=4k\n"
        "iodepth=4\ntime_based\nruntime=500ms\nlat_percentiles=1\npercentile_list=50:90:99:99.9\n"
    )
    out = subprocess.run(["fio", "--output-format=json+", str(job)], capture_output=True, text=True, check=True)
    raw = json.loads(out.stdout[out.stdout.find("{") :])
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
    job.write_text(
        f"[a]\nioengine=libaio\ndirect=1\ndirectory={tmp_path}\nsize=8M\nrw=randread\nbs=4k\n"
        "iodepth=2\nnumjobs=3\ntime_based\nruntime=500ms\nlat_percentiles=1\n"
    )
    out = subprocess.run(["fio", "--output-format=json+", str(job)], capture_output=True, text=True, check=True)
    raw = json.loads(out.stdout[out.stdout.find("{") :])
    assert len(raw["jobs"]) == 3
    [m] = direction_metrics(raw)
    assert abs(m.iops - sum(j["read"]["iops"] for j in raw["jobs"])) < 1e-6
    p99s = [j["read"]["lat_ns"]["percentile"]["99.000000"] / 1000 for j in raw["jobs"]]
    assert min(p99s) <= m.lat_p99_us <= max(p99s)


def test_percentile_threshold_is_fios_long_double():
    # fio: sum >= (long double) pct / 100.0 * nr. For 99.9 % of 1000 samples that is just above
    # 999 (99.9 is not exact in binary), so fio's p99.9 is the bucket of the 1000th sample; double
    # arithmetic (1000 * 99.9 / 100 == 999.0) stopped one bucket early.
    assert percentile_from_bins({1000: 999, 2000: 1}, 99.9) == 2000.0
    assert percentile_from_bins({1: 9990, 2: 10}, 99.9) == 2.0
    assert percentile_from_bins({1000: 998, 2000: 1, 3000: 1}, 99.9) == 3000.0
    # where the threshold is an exact integer, reaching it is enough (>=)
    assert percentile_from_bins({10: 1, 20: 1}, 50) == 10.0
    assert percentile_from_bins({10: 9, 20: 1}, 90) == 10.0
    assert percentile_from_bins({10: 99, 20: 1}, 99) == 10.0
    assert percentile_from_bins({10: 1, 20: 1}, 100) == 20.0


def test_percentile_threshold_matches_c_long_double(tmp_path):
    """Against the C expression itself, compiled here (x86-64: the x87 80-bit long double fio uses)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc or platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("needs a C compiler on x86-64")
    src = tmp_path / "th.c"
    src.write_text(
        "#include <stdio.h>\nint main(void){double p; unsigned long long nr;\n"
        'while (scanf("%lf %llu", &p, &nr) == 2) {long double th = (long double) p / 100.0 * nr;\n'
        'unsigned long long f = (unsigned long long) th; printf("%llu %d\\n", f, (long double) f == th);}\n'
        "return 0;}\n"
    )
    subprocess.run([cc, "-O0", str(src), "-o", str(tmp_path / "th")], check=True)
    rng = random.Random(7)
    fio_list = [1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99]
    cases = [
        (
            rng.choice([rng.choice(fio_list), round(rng.uniform(0.01, 100), rng.randint(0, 6))]),
            rng.choice([rng.randint(1, 10**4) * 1000, rng.randint(1, 2**40), rng.randint(1, 10**6)]),
        )
        for _ in range(2000)
    ]
    out = subprocess.run(
        [str(tmp_path / "th")],
        input="\n".join(f"{p!r} {n}" for p, n in cases),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for i, (pct, nr) in enumerate(cases):
        floor, exact = int(out[2 * i]), int(out[2 * i + 1])
        # the smallest cumulative count that reaches the threshold, in C and here
        assert math.ceil(fio_percentile_threshold(nr, pct)) == (floor if exact else floor + 1), (pct, nr)


def test_every_percentile_equals_fios_own(tmp_path):
    """A real fio run of exactly 1000 I/Os per direction, where p99.9 sits on the boundary."""
    shm = Path("/dev/shm")
    where = tmp_path
    if shm.is_dir():
        where = Path(tempfile.mkdtemp(prefix="pvbench-test-", dir=shm))
    plist = "1:5:10:12.5:20:30:33.3:40:50:60:70:80:90:95:99:99.5:99.9:99.95:99.99:99.999"
    try:
        for rw in ("randread", "randwrite"):
            job = tmp_path / f"{rw}.fio"
            job.write_text(
                f"[a]\nioengine=psync\ndirectory={where}\nsize=8M\nrw={rw}\nbs=4k\nnumber_ios=1000\n"
                f"lat_percentiles=1\npercentile_list={plist}\n"
            )
            out = subprocess.run(["fio", "--output-format=json+", str(job)], capture_output=True, text=True, check=True)
            raw = json.loads(out.stdout[out.stdout.find("{") :])
            block = raw["jobs"][0]["read" if rw == "randread" else "write"]["lat_ns"]
            bins = {int(k): v for k, v in block["bins"].items()}
            assert block["N"] == sum(bins.values()) == 1000
            assert len(block["percentile"]) == 20
            for key, value in block["percentile"].items():
                assert percentile_from_bins(bins, float(key)) == value, key
    finally:
        if where != tmp_path:
            shutil.rmtree(where, ignore_errors=True)
