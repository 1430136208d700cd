"""Multi-client cells (issue 14) on real fio: N clients behind a barrier, merged into one result."""

import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest
import yaml
from cli_helpers import pvbench

from pvbench.cells.cell import Cell
from pvbench.cells.run import TimingOverrides, plan_cell, run_cell
from pvbench.fio.barrier import Barrier
from pvbench.fio.clients import run_fio_clients
from pvbench.fio.merge import ClientOutput, merge_clients, merge_raw, read_clients_raw
from pvbench.fio.parse import fio_percentile_threshold
from pvbench.fio.series import read_logs_archive
from pvbench.fio.target import client_dirs, remove_fio_files
from pvbench.local.config import load_config
from pvbench.local.runner import plan_run, run_local
from pvbench.profiles import FioTest, ProfileError, Timing, load_profile, render_jobfile
from pvbench.stopping import Interrupted, stop_on_signals
from pvbench.store import open_store

pytestmark = pytest.mark.quiet

QUICK = TimingOverrides(ramp="200ms", runtime="1s", size="8M")
# How far apart the clients may leave the barrier: measured 1-7 ms on an idle machine and up to
# 0.15 s on a 2-core machine under other load (the waiter polls every 2 ms; the rest is scheduling).
MAX_SKEW_S = 0.5


def _cell(workload: str, storage_class: str = "local") -> Cell:
    return Cell(
        campaign="c", run="r", occasion="o", storage_class=storage_class, profile="scaling", workload=workload, rep=1
    )


def _ns(dt) -> int:
    return round(dt.timestamp() * 1e9)


def _direct_percentile(samples: list[int], pct: float) -> int:
    """The percentile of a plain sorted list of samples, by fio's rule (first sample whose rank reaches pct%)."""
    ordered = sorted(samples)
    threshold = fio_percentile_threshold(len(ordered), pct)
    for rank, value in enumerate(ordered, start=1):
        if rank >= threshold:
            return value
    return ordered[-1]


def test_four_clients_start_together_and_their_total_is_merged(tmp_path):
    target = tmp_path / "class"
    target.mkdir()
    plan = plan_cell(_cell("randread-iops-x4"), target, QUICK)
    doc, raw = run_cell(plan)
    section = doc.clients
    assert doc.workload.clients == 4 and section.count == 4 and len(section.per_client) == 4
    # each client in its own directory of the class's
    assert [Path(c.target_path) for c in section.per_client] == [target / f"pvbench-client-{i}" for i in range(1, 5)]

    # the barrier: nobody left it before every client was ready, and all left within MAX_SKEW_S
    clients = read_clients_raw(raw.fio_json)
    # the cell's series: the four clients' logs, summed interval by interval; the logs kept per client
    assert doc.series is not None and doc.series.directions[0].direction == "read"
    assert len(read_logs_archive(raw.fio_logs)) == 4
    last_ready = max(ns for c in clients for ns in c.ready_ns)
    releases = [ns for c in clients for ns in c.released_ns]
    assert len(releases) == 4 and min(releases) >= last_ready
    assert section.start_skew_s == pytest.approx((max(releases) - min(releases)) / 1e9)
    assert section.start_skew_s < MAX_SKEW_S
    # ... and they measured the same seconds: every measured interval overlaps every other
    starts = [c.measured_from for c in section.per_client]
    ends = [c.ended_at for c in section.per_client]
    assert max(starts) < min(ends)
    assert section.overlap_s == pytest.approx((min(ends) - max(starts)).total_seconds())
    assert section.overlap_share > 0.5

    # the totals are the clients' sums
    [total] = doc.metrics
    per = [c.metrics[0] for c in section.per_client]
    assert total.direction == "read" and all(m.direction == "read" for m in per)
    assert total.iops == pytest.approx(sum(m.iops for m in per))
    assert total.bw_mib_s == pytest.approx(sum(m.bw_mib_s for m in per))
    assert total.io_bytes == sum(m.io_bytes for m in per)
    assert total.straggler_ratio == pytest.approx(min(m.iops for m in per) / (sum(m.iops for m in per) / 4))
    # merged percentiles = a direct computation over every sample of every client
    samples = [
        int(value)
        for c in clients
        for job in c.output["jobs"]
        for value, count in job["read"]["lat_ns"]["bins"].items()
        for _ in range(count)
    ]
    assert len(samples) == sum(job["read"]["lat_ns"]["N"] for c in clients for job in c.output["jobs"])
    for name, pct in (("lat_p50_us", 50), ("lat_p90_us", 90), ("lat_p99_us", 99), ("lat_p999_us", 99.9)):
        assert getattr(total, name) == _direct_percentile(samples, pct) / 1000
    # the mean is fio's exact per-job means weighted by their sample counts (the bins are rounded buckets)
    jobs = [job["read"]["lat_ns"] for c in clients for job in c.output["jobs"]]
    assert total.lat_mean_us == pytest.approx(sum(j["mean"] * j["N"] for j in jobs) / len(samples) / 1000)
    # the raw document holds each client's json+ untouched and merges back to the same result
    assert merge_raw(raw.fio_json, plan.timing.runtime_s) == (doc.metrics, section)

    remove_fio_files(target)
    assert client_dirs(target) == [] and list(target.iterdir()) == []


def test_merged_percentiles_are_not_averages_of_the_clients():
    # Client 1: 900 ops at 100 µs; client 2: 100 ops at 10 ms (a straggler with a slow tail)
    def client(number, latency_ns, count, iops, released_ns, end_ms):
        side = {
            "iops": iops,
            "bw_bytes": iops * 4096,
            "io_bytes": count * 4096,
            "runtime": 1000,
            "lat_ns": {"N": count, "mean": latency_ns, "bins": {str(latency_ns): count}},
        }
        empty = {"iops": 0, "bw_bytes": 0, "io_bytes": 0, "runtime": 0}
        output = {"timestamp_ms": end_ms, "jobs": [{"jobname": "t", "read": side, "write": empty}]}
        return ClientOutput(number, output, [released_ns - 10**8], [released_ns])

    t0 = 1_700_000_000 * 10**9
    a = client(1, 100_000, 900, 900.0, t0, t0 // 10**6 + 1200)
    b = client(2, 10_000_000, 100, 100.0, t0 + 30 * 10**6, t0 // 10**6 + 1250)
    [total], section = merge_clients([b, a], runtime_s=1.0)
    samples = [100_000] * 900 + [10_000_000] * 100
    for name, pct in (("lat_p50_us", 50), ("lat_p90_us", 90), ("lat_p99_us", 99), ("lat_p999_us", 99.9)):
        assert getattr(total, name) == _direct_percentile(samples, pct) / 1000
    assert total.lat_p50_us == 100.0 and total.lat_p99_us == 10_000.0
    per = [c.metrics[0] for c in section.per_client]
    averaged_p50 = sum(m.lat_p50_us for m in per) / 2
    assert averaged_p50 == 5050.0 != total.lat_p50_us  # the average of percentiles is no percentile
    assert total.lat_mean_us == pytest.approx((900 * 100 + 100 * 10_000) / 1000)
    assert total.iops == 1000.0
    assert total.straggler_ratio == pytest.approx(100 / 500)
    assert [c.client for c in section.per_client] == [1, 2]
    assert section.start_skew_s == pytest.approx(0.03)
    # measured: client 1 [0.2, 1.2] s, client 2 [0.25, 1.25] s after t0: together 0.95 s
    assert section.overlap_s == pytest.approx(0.95) and section.overlap_share == pytest.approx(0.95)


def test_the_barrier_holds_every_client_until_it_opens(tmp_path):
    """The release hook (what a pod uses to wait for the other pods) runs while all clients wait."""
    profile = load_profile("scaling")
    test = profile.test("randwrite-iops-x2")
    timing = Timing(ramp_s=0, runtime_s=0.5, size="4M")
    held_until = []

    def release():
        time.sleep(1.0)
        held_until.append(time.time_ns())

    with Barrier(timeout_s=60) as barrier:
        jobfiles = []
        for i in (1, 2, 3):
            (tmp_path / str(i)).mkdir()
            overrides = {test.name: {"exec_prerun": barrier.prerun(i)}}
            jobfiles.append(render_jobfile(profile, [test], timing, tmp_path / str(i), overrides=overrides))
        runs = run_fio_clients(jobfiles, barrier, jobs_per_client=1, timeout_s=120, release=release)
    assert [r.client for r in runs] == [1, 2, 3]
    last_ready = max(ns for r in runs for ns in r.ready_ns)
    releases = [ns for r in runs for ns in r.released_ns]
    assert min(releases) >= held_until[0] >= last_ready + 0.9e9
    assert (max(releases) - min(releases)) / 1e9 < MAX_SKEW_S
    assert all(r.run.output["jobs"][0]["write"]["io_bytes"] > 0 for r in runs)


def _config(tmp_path, **over) -> Path:
    cfg = {
        "campaign": "mc",
        "store": str(tmp_path / "store"),
        "spool": str(tmp_path / "spool"),
        "storage_classes": {"alpha": str(tmp_path / "a"), "beta": str(tmp_path / "b")},
        "profiles": ["scaling"],
        "tests": ["randread-iops-x2"],
        "repetitions": 1,
        "ramp": "100ms",
        "runtime": "500ms",
        "size": "4M",
    }
    cfg.update(over)
    path = tmp_path / "pvbench.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_a_failing_client_fails_its_cell_only(tmp_path):
    config = load_config(_config(tmp_path))
    plans = plan_run(config, "r")
    # client 2 of beta cannot open its fio file (a directory stands where fio's file goes)
    (tmp_path / "b" / "pvbench-client-2" / "pvbench-fio.0.0").mkdir(parents=True)
    report = run_local(config, plans, "r")
    assert len(report.stored) == 1 and "storage_class=alpha" in report.stored[0]
    [failure] = report.failed
    assert failure.cell.storage_class == "beta"
    assert failure.error.startswith("client 2 of 2: fio failed") and "other clients were stopped" in failure.error
    # beta's client 1 was stopped with it, alpha's clients were cleaned away
    assert subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True).stdout == b""
    assert client_dirs(tmp_path / "a") == []
    doc = json.loads(open_store(str(tmp_path / "store")).get_bytes(report.stored[0]))
    assert doc["clients"]["count"] == 2 and doc["workload"]["clients"] == 2


def test_a_stop_signal_stops_every_client(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the clients' job files: under tmp_path
    target = tmp_path / "class"
    target.mkdir()
    plan = plan_cell(_cell("randread-iops-x4"), target, TimingOverrides(ramp="0", runtime="30s", size="4M"))
    timer = threading.Timer(3.0, lambda: os.kill(os.getpid(), signal.SIGTERM))
    timer.start()
    t0 = time.monotonic()
    with pytest.raises(Interrupted), stop_on_signals():
        run_cell(plan)
    timer.join()
    assert time.monotonic() - t0 < 20
    assert subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True).stdout == b""


def test_clients_are_checked_before_anything_runs(tmp_path):
    for bad in (0, 65):
        with pytest.raises(ValueError, match="clients"):
            FioTest(name="t", title="t", rw="randread", bs="4k", iodepth=1, clients=bad)
    with pytest.raises(ValueError, match="load_target"):
        FioTest(name="t", title="t", rw="randread", bs="4k", iodepth=1, clients=2, load_target=0.8)
    # files × jobs × clients must fit the target (local) and the volume (validate)
    target = tmp_path / "t"
    target.mkdir()
    free = os.statvfs(target).f_bavail * os.statvfs(target).f_frsize
    size = f"{free // 2**20 // 3 + 1}M"  # fits 2 clients' files, not 4
    plan_cell(_cell("randread-iops-x2"), target, TimingOverrides(size=size), check=True)
    with pytest.raises(ProfileError, match="4 job"):
        plan_cell(_cell("randread-iops-x4"), target, TimingOverrides(size=size), check=True)
    common = ["--campaign", "c", "--run", "r", "--occasion", "o", "--storage-classes", "fast"]
    # on Argo every client pod has its own volume: one client's files must fit in volume-size
    proc = pvbench("validate", *common, "--profiles", "scaling", "--volume-size", "1Gi")
    message = " ".join(proc.stderr.split())
    assert proc.returncode == 2 and "-iops-x" in message and "1 job(s) per client pod" in message, message
    proc = pvbench("validate", *common, "--profiles", "scaling", "--volume-size", "2Gi")
    assert proc.returncode == 0, proc.stderr


def test_the_scaling_profile_sweeps_clients():
    profile = load_profile("scaling")
    assert [(t.group, t.load, t.clients) for t in profile.tests] == [
        (g, f"x{n}", n) for g in ("randread", "randwrite") for n in (1, 2, 4, 8)
    ]
    assert profile.test("randwrite-iops-x4").rw == "randwrite"
