"""pvbench_lab.bench_history (docs/performance.md: judging the histories, the permutations kept or
drawn) runs end to end on a few short series (its timings are not checked: a script, not a timed
test); the three ways (together, one by one, permutations drawn) give the same verdicts."""

from cli_helpers import lab_module


def test_the_history_bench_prints_both_kinds_with_the_same_verdicts_every_way():
    done = lab_module("bench_history", "--series", "6", "--occasions", "24", "--rounds", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith(("| flat ", "| step "))]
    assert len(rows) == 2, done.stdout
    for row in rows:
        assert row.rstrip().endswith("| yes |"), row
    step_found = int(rows[1].split("|")[2])
    assert step_found >= 6, rows[1]  # a −20% step in 4%-noise series of 12 + 12 occasions: found in each
