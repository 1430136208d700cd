"""The bounds docs/statistics.md states, asserted on the code that ships (pvbench_lab.calibration).

Each rate is measured with enough trials that a bound broken by more than sampling error fails:
a rate passes if it is within three binomial standard errors of its bound.
"""

import math
from pathlib import Path

import pytest

from pvbench_lab.calibration import Design, comparison_rows, gate_rows, summary_coverage, thesis_rows

THESIS = Path(__file__).resolve().parents[2] / "examples" / "thesis-azure-runs.csv"
TRIALS = 1000


def _se(p: float, n: int) -> float:
    return 3 * math.sqrt(p * (1 - p) / n)


def _check(row: dict) -> None:
    bound, value, n = row["bound"], row["value"], row["trials"]
    label = f"{row['section']} | {row['case']} | {row['measure']}: {value:.1%} (bound {bound})"
    if bound.startswith("≥ 93%"):
        assert value >= 0.95 - _se(0.95, n) and value >= 0.93 - _se(0.93, n), label
    elif bound.startswith("≤ 5%"):
        assert value <= 0.05 + _se(0.05, n), label
    elif bound.startswith("≤ 2.5%"):
        assert value <= 0.025 + _se(0.025, n), label
    elif bound.startswith("100%"):
        assert value == 1.0, label
    elif bound.startswith("most"):
        assert value > 0.5, label
    elif bound.startswith("≥ "):
        floor = float(bound[2:].rstrip("%")) / 100
        assert value >= floor - _se(floor, n), label


@pytest.fixture(scope="module")
def comparisons():
    return comparison_rows(TRIALS, seed=11)


def test_summary_intervals_cover_at_every_icc():
    """The designs the calibration script prints (4×5 at ICC 0–0.8, 10×3, the demo's 2×3, and one
    occasion), each bound asserted."""
    from pvbench_lab.stats_calibration import SUMMARY_DESIGNS

    assert SUMMARY_DESIGNS[-1] == Design(1, 5, icc=0.5)
    rows = summary_coverage(SUMMARY_DESIGNS, TRIALS, seed=12)
    for row in rows:
        _check(row)
    # one occasion: the interval says it covers repetitions only, and indeed it does not cover days
    assert "repetitions only" in rows[-1]["measure"] and rows[-1]["value"] < 0.85


def test_comparison_bounds(comparisons):
    checked = [r for r in comparisons if r["bound"] != "reported"]
    assert len(checked) >= 10
    for row in checked:
        _check(row)


def test_power_for_a_real_change(comparisons):
    power = {(r["section"], r["case"]): r["value"] for r in comparisons if "power" in r["measure"]}
    assert power[("comparison, one metric", "4×5, ICC 0, CV 6% per side, true −10%")] > 0.9
    assert power[("run against run", "1×5, ICC 0.5, CV 6% per side + 6 earlier occasions, true −20%")] > 0.6


def test_the_upgrade_gate_holds_its_rate_with_few_occasions_and_bad_days():
    """Families of 10 correlated metrics, heterogeneous day-to-day variation (ICC 0–0.8, CV
    2–20%), normal or heavy-tailed bad days: any false verdict in ≤ 5% of families, CIs cover."""
    rows = gate_rows(TRIALS, seed=13, baselines=(2, 3, 12))
    checked = [r for r in rows if r["bound"] != "reported"]
    assert len(checked) == 12
    for row in checked:
        _check(row)
    power = {r["case"]: r["value"] for r in rows if "power" in r["measure"]}
    assert all(v > 0.4 for case, v in power.items() if case.startswith("3 "))


def test_real_runs_give_verdicts_at_first_contact():
    """The Azure runs: the upgrade replay at 3 + 1 occasions and class against class at 2 × 3."""
    rows = thesis_rows(THESIS, trials=200)
    checked = [r for r in rows if r["bound"] != "reported"]
    assert len(checked) == 4
    for row in checked:
        _check(row)
