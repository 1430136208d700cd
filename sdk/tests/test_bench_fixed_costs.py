"""pvbench_lab.bench_fixed_costs runs end to end (its timings are not checked: a script, not a timed test)."""

from cli_helpers import lab_module


def test_the_fixed_costs_benchmark_prints_every_part():
    done = lab_module("bench_fixed_costs", "--repeat", "1", "--batch", "2000")  # two runs: the split is timed
    assert done.returncode == 0, done.stderr[-3000:]
    for part in (
        "scipy.special (every aggregation)",
        "validate (pydantic, as the compactor does)",
        "as StoredObjects (pickled)",
        "the same as flat lists",
        "model occasion_measurements",
        "split into each run's files",
        "f_pvalue (scipy.special.fdtrc), from SQL",
        "per 100,000 documents",
    ):
        assert part in done.stdout, done.stdout
