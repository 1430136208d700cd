"""pvbench_lab.bench_aggregate_ab runs end to end (its timings are not checked: a script, not a timed test)."""

import subprocess

import pytest
from cli_helpers import lab_module

from pvbench.testing import REPO

# one after the other: each makes a worktree of the base, and the first counts the worktrees
pytestmark = pytest.mark.xdist_group("bench_aggregate_ab")


def test_the_alternated_comparison_runs_and_leaves_no_worktree():
    before = subprocess.run(["git", "-C", str(REPO), "worktree", "list"], capture_output=True, text=True).stdout
    done = lab_module("bench_aggregate_ab", "--base", "HEAD", "--results", "1000", "--pairs", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| base " in done.stdout and "| working tree |" in done.stdout
    assert "working tree ÷ base, each pair:" in done.stdout
    after = subprocess.run(["git", "-C", str(REPO), "worktree", "list"], capture_output=True, text=True).stdout
    assert after == before


def test_the_comparison_of_aggregations_with_nothing_new_runs_on_minio():
    done = lab_module(
        "bench_aggregate_ab", "--base", "HEAD", "--results", "1000", "--pairs", "2", "--verify", "--minio"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "nothing new in 1,000 results, MinIO, 2 alternated pairs" in done.stdout, done.stdout
    assert "| code | each aggregation | median |" in done.stdout
