"""pvbench_lab.bench_compare runs end to end (its timings are not checked: a script, not a timed test)."""

from cli_helpers import lab_module


def test_the_compare_benchmark_runs_both_ways():
    done = lab_module("bench_compare", "--results", "1000", "--rounds", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "failed" not in done.stdout, done.stdout
    for pair in ("two classes", "two runs"):
        assert f"{pair}: row by row ÷ as shipped: wall " in done.stdout, done.stdout
