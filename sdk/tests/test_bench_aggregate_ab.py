"""ci/bench_aggregate_ab.py runs end to end (its timings are not checked: a script, not a timed test)."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_alternated_comparison_runs_and_leaves_no_worktree():
    before = subprocess.run(["git", "-C", str(REPO), "worktree", "list"], capture_output=True, text=True).stdout
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "ci" / "bench_aggregate_ab.py"),
            "--base",
            "HEAD",
            "--results",
            "1000",
            "--pairs",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| base " in done.stdout and "| working tree |" in done.stdout
    assert "working tree ÷ base, each pair:" in done.stdout
    after = subprocess.run(["git", "-C", str(REPO), "worktree", "list"], capture_output=True, text=True).stdout
    assert after == before
