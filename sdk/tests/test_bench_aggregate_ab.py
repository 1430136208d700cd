"""pvbench_lab.bench_aggregate_ab runs end to end (its timings are not checked: a script, not a timed test)."""

import subprocess

import duckdb
import pytest
from cli_helpers import lab_module

from pvbench.testing import REPO
from pvbench_lab.bench_aggregate_ab import compact_format, same_tables

# one after the other: each makes a worktree of the base, and the first counts the worktrees
pytestmark = pytest.mark.xdist_group("bench_aggregate_ab")


def test_the_alternated_comparison_runs_and_leaves_no_worktree():
    before = subprocess.run(["git", "-C", str(REPO), "worktree", "list"], capture_output=True, text=True).stdout
    done = lab_module("bench_aggregate_ab", "--base", "HEAD", "--results", "1000", "--pairs", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| base " in done.stdout and "| working tree |" in done.stdout
    assert "working tree ÷ base, each pair:" in done.stdout
    # the same code at both ends: every table it wrote the same, row for row
    assert _tables_line(done.stdout).endswith(" the same"), done.stdout
    after = subprocess.run(["git", "-C", str(REPO), "worktree", "list"], capture_output=True, text=True).stdout
    assert after == before


def test_the_comparison_of_aggregations_with_nothing_new_runs_on_minio():
    done = lab_module(
        "bench_aggregate_ab", "--base", "HEAD", "--results", "1000", "--pairs", "2", "--verify", "--minio"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "nothing new in 1,000 results, MinIO, 2 alternated pairs" in done.stdout, done.stdout
    assert "| code | each aggregation | median |" in done.stdout
    assert _tables_line(done.stdout).endswith(" the same"), done.stdout


def _tables_line(stdout: str) -> str:
    """The line saying which tables the two commits wrote alike (git's own lines come first)."""
    (line,) = [line for line in stdout.splitlines() if line.startswith("the tables each wrote: ")]
    return line


def test_tables_that_differ_are_named(tmp_path):
    """same_tables names each table that differs: a row changed, a column renamed, a table one
    side lacks; rows in another order are the same rows, and doubles that differ in their last
    digits the same to 9 significant digits."""
    base, tree = tmp_path / "base", tmp_path / "tree"
    base.mkdir(), tree.mkdir()
    con = duckdb.connect()
    for folder, rows, name in ((base, "(1, 2.0), (2, 3.0)", "x"), (tree, "(2, 3.0), (1, 2.0)", "x")):
        con.execute(f"COPY (SELECT * FROM (VALUES {rows}) t(k, {name})) TO '{folder}/same.parquet'")
    con.execute(f"COPY (SELECT * FROM (VALUES (1, 2.0)) t(k, v)) TO '{base}/changed.parquet'")
    con.execute(f"COPY (SELECT * FROM (VALUES (1, 2.5)) t(k, v)) TO '{tree}/changed.parquet'")
    con.execute(f"COPY (SELECT 1 AS k) TO '{base}/renamed.parquet'")
    con.execute(f"COPY (SELECT 1 AS key) TO '{tree}/renamed.parquet'")
    con.execute(f"COPY (SELECT 1 AS k) TO '{tree}/new.parquet'")
    # a sum's last digits: the same to 9 significant digits, and said
    con.execute(f"COPY (SELECT * FROM (VALUES (1, 0.1::DOUBLE + 0.2), (1, 7.0)) t(k, v)) TO '{base}/summed.parquet'")
    con.execute(f"COPY (SELECT * FROM (VALUES (1, 7.0::DOUBLE), (1, 0.3)) t(k, v)) TO '{tree}/summed.parquet'")
    assert same_tables(base, tree) == (
        "the tables each wrote: 2 of 5 the same (summed to 9 significant digits);"
        " differing: changed (2 rows), new (written by one only), renamed (columns)"
    )


def test_the_compacts_format_is_read_from_each_commits_code(tmp_path):
    """Two commits whose compacts differ in format get a copy of the campaign each (--add, --verify):
    the format is read from each one's compact.py, not imported."""
    from pvbench.analytics.compact import COMPACT_FORMAT

    assert compact_format(REPO / "sdk") == COMPACT_FORMAT
    other = tmp_path / "pvbench" / "analytics"
    other.mkdir(parents=True)
    (other / "compact.py").write_text('"""an older one"""\n\nCOMPACT_FORMAT = "7"\nFORMAT_KEY = "pvbench_compact"\n')
    assert compact_format(tmp_path) == "7"
