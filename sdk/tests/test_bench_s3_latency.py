"""pvbench_lab.bench_s3_latency runs end to end (its timings are not checked: a script, not a timed test).
Latency 0 only: the MinIO read directly, so no Toxiproxy is built here."""

from cli_helpers import lab_module


def test_the_s3_latency_benchmark_prints_both_tables():
    done = lab_module("bench_s3_latency", "--latencies", "0", "--connections", "2,64", "--rounds", "1", "--runs", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    for part in (
        "one run's 1,000 documents read by a fresh store",
        "64 connections (shipped)",
        "2 runs read one after the other, 64 connections",
        "new for every run (before)",
    ):
        assert part in done.stdout, done.stdout
