"""ci/bench_compare.py runs end to end (its timings are not checked: a script, not a timed test)."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_compare_benchmark_runs_both_ways():
    done = subprocess.run(
        [sys.executable, str(REPO / "ci" / "bench_compare.py"), "--results", "1000", "--rounds", "1"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "failed" not in done.stdout, done.stdout
    for pair in ("two classes", "two runs"):
        assert f"{pair}: row by row ÷ as shipped: wall " in done.stdout, done.stdout
