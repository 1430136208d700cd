"""The warm-up and outlier flags on null data: at most 5% of cells flagged, for every supported design.

Measured by running the shipped SQL models (pvbench_lab.calibration_flags) over thousands of
synthetic cells with occasion effects (ICC 0, 0.5, 0.8) and no warm-up or outlier. The old rules
flagged 17.7% of the cells of 2 occasions × 3 reps (warm-up: "slower in every occasion") and
0.5–1.2% of all values (outliers: 3.5 scaled MADs per value, i.e. 10–20% of cells).
"""

import itertools

import numpy as np
import pytest
from stats_helpers import doc, write

from pvbench.pipeline import build_tables
from pvbench.stats.functions import first_rank_pvalue
from pvbench.store import open_store
from pvbench_lab.calibration_flags import SHAPES, FlagDesign, false_flag_rates

TRIALS = 2000  # per design: a true rate of 4% is then 2.3 standard errors below the 5% bound


@pytest.fixture(scope="module")
def null_rates():
    designs = [FlagDesign(o, r, icc, 0.15) for o, r in SHAPES for icc in (0.0, 0.5, 0.8)]
    return false_flag_rates(designs, TRIALS, seed=11)


@pytest.mark.parametrize("detector", ["warm_up", "outlier"])
def test_false_flags_per_cell_at_most_5_percent_on_null_data(null_rates, detector):
    rows = [r for r in null_rates if r["detector"] == detector]
    assert len(rows) == 3 * len(SHAPES) and all(r["trials"] == TRIALS for r in rows)
    too_many = {r["design"]: r["false_flag_rate"] for r in rows if r["false_flag_rate"] > 0.05}
    assert too_many == {}


def test_two_occasions_of_three_reps_no_longer_flag_warm_up(null_rates):
    """The issue's case: the old rule flagged 17.7% of these null cells; the exact test cannot fire
    (its smallest p is 1/9) and the outlier flag stays near its 1% budget."""
    rates = {
        (r["detector"], r["icc"]): r["false_flag_rate"] for r in null_rates if (r["occasions"], r["reps"]) == (2, 3)
    }
    assert all(rates[("warm_up", icc)] == 0 for icc in (0.0, 0.5, 0.8))
    assert all(rates[("outlier", icc)] <= 0.02 for icc in (0.0, 0.5, 0.8))


def test_outlier_flags_stay_near_their_one_percent_budget_with_occasion_effects(null_rates):
    """Bonferroni on exact t: ≈ α = 1% per cell whatever the ICC (the old MAD rule: 10–20% of cells)."""
    outlier = [r["false_flag_rate"] for r in null_rates if r["detector"] == "outlier"]
    assert max(outlier) <= 0.025 and np.mean(outlier) <= 0.015


def test_exact_null_distribution_of_the_first_reps_rank_sum():
    assert first_rank_pvalue(2, (3, 3)) == pytest.approx(1 / 9)  # best case of 2 × 3: can never reach 0.05
    assert first_rank_pvalue(2, (5, 5)) == pytest.approx(1 / 25)
    assert first_rank_pvalue(4, (5, 5, 5, 5)) == pytest.approx(1 / 625)
    assert first_rank_pvalue(3, (3, 3, 3)) == pytest.approx(1 / 27)
    assert first_rank_pvalue(30, (5, 5, 5)) == 1.0
    # against brute-force enumeration of an unbalanced design
    sizes = (3, 4, 6)
    sums = [sum(c) for c in itertools.product(*(range(1, r + 1) for r in sizes))]
    for s in range(3, 14):
        assert first_rank_pvalue(s, sizes) == pytest.approx(np.mean([x <= s for x in sums]))


def _design_docs(occasions, reps, value_of, storage_class="fast", metric="iops"):
    return [
        doc(storage_class=storage_class, occasion=f"o{o}", rep=r, metric=metric, value=value_of(o, r))
        for o in range(1, occasions + 1)
        for r in range(1, reps + 1)
    ]


def test_a_real_warm_up_is_flagged_with_its_exact_p(tmp_path):
    rng = np.random.default_rng(3)
    shift = {o: rng.normal(0, 100) for o in range(1, 4)}  # occasion effects do not matter

    def value(o, r):
        return float((1000 + shift[o]) * (0.7 if r == 1 else 1) + rng.normal(0, 10))

    write(tmp_path, _design_docs(3, 5, value))
    con = build_tables(open_store(str(tmp_path)), "syn", extras=False)
    (msg,) = con.execute("select message from report_anomalies where kind = 'warm_up'").fetchone()
    assert msg.startswith("first repetition slower in 3 of 3 occasions (slowest of its occasion in 3)")
    assert "exact p = 0.008" in msg  # 1/125


def test_too_few_occasions_can_never_flag_warm_up_and_the_methodology_says_so(tmp_path):
    # first rep 40% slower in both occasions of 3 reps: the old rule flagged it, the exact p is 1/9
    write(tmp_path, _design_docs(2, 3, lambda o, r: 600.0 + r if r == 1 else 1000.0 + r))
    con = build_tables(open_store(str(tmp_path)), "syn", extras=False)
    assert con.execute("select count(*) from report_anomalies where kind = 'warm_up'").fetchone()[0] == 0
    (rule,) = con.execute("select value from report_methodology where item = 'warm-up'").fetchone()
    assert "cannot fire" in rule and "exact one-sided p ≤ 0.05" in rule


def test_a_stall_is_flagged_despite_large_occasion_effects(tmp_path):
    rng = np.random.default_rng(5)
    level = {o: 1000 * (1 + rng.normal(0, 0.2)) for o in range(1, 4)}  # ICC ≈ 0.99

    def value(o, r):
        return float(level[o] * (0.7 if (o, r) == (2, 3) else 1 + rng.normal(0, 0.01)))

    write(tmp_path, _design_docs(3, 5, value))
    con = build_tables(open_store(str(tmp_path)), "syn", extras=False)
    rows = con.execute("select occasion, rep, outlier_side from anomaly_outliers where is_outlier").fetchall()
    assert rows == [("o2", 3, "slow")]
    (msg,) = con.execute("select message from report_anomalies where kind = 'outlier'").fetchone()
    assert "occasion o2 rep 3" in msg and "studentized t" in msg and "Bonferroni p" in msg


def test_a_value_off_identical_others_is_an_outlier(tmp_path):
    """Rate-limited fio: every rep the same but one; the pooled sd without it is 0, t is infinite."""
    write(tmp_path, _design_docs(2, 5, lambda o, r: 500.0 if (o, r) == (1, 4) else 1000.0))
    con = build_tables(open_store(str(tmp_path)), "syn", extras=False)
    rows = con.execute("select occasion, rep from anomaly_outliers where is_outlier").fetchall()
    assert rows == [("o1", 4)]
