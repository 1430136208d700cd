"""pvbench.stats.changepoints on hand-made histories: a step, a flat series, a drift, attribution."""

import math
from datetime import datetime, timedelta

import numpy as np
import pytest

from pvbench.stats.changepoints import STEP, Occasion, attribute, detect_changes

START = datetime(2025, 1, 6, 9, 0)
# a fixed, mild day-to-day wobble (log sd ≈ 2%), so every test sees the same numbers
WOBBLE = [0.02, -0.01, 0.015, -0.025, 0.005, 0.0, -0.015, 0.02, -0.005, 0.01, -0.02, 0.012]


def _history(levels: list[float]) -> list[Occasion]:
    """Weekly occasions of IOPS around 1000 × level, with the fixed wobble."""
    return [
        Occasion(START + timedelta(weeks=i), 1000 * level * math.exp(WOBBLE[i % len(WOBBLE)]))
        for i, level in enumerate(levels)
    ]


def test_a_clear_step_is_found_at_its_occasion_with_its_size():
    history = _history([1.0] * 12 + [0.8] * 12)  # −20% from occasion 12 on
    result = detect_changes(history)
    assert len(result.change_points) == 1
    change = result.change_points[0]
    assert change.index == 12 and change.time == history[12].time and change.time_before == history[11].time
    assert change.kind == STEP
    assert (change.occasions_before, change.occasions_after) == (12, 12)
    assert change.change_pct == pytest.approx(-20, abs=1)
    low, high = change.change_pct_ci95
    assert low < -20 < high and high - low < 6
    assert change.p_value < 0.01
    assert change.mean_before == pytest.approx(1000, rel=0.01) and change.mean_after == pytest.approx(800, rel=0.01)
    assert not result.drift.drifting  # the step's levels removed, nothing slides


def test_a_flat_series_has_no_change_point_and_no_drift():
    result = detect_changes(_history([1.0] * 36))
    assert result.change_points == ()
    assert not result.drift.drifting
    assert 0.01 < result.noise_sd_log < 0.03


def test_a_slow_drift_is_a_drift_not_steps():
    levels = list(np.exp(np.linspace(0, math.log(0.85), 30)))  # −15% over 30 occasions
    result = detect_changes(_history(levels))
    assert [c for c in result.change_points if c.kind == STEP] == []
    assert result.drift.drifting and result.drift.p_value < 0.001
    low, high = result.drift.slope_pct_ci95
    true_slope = 100 * math.expm1(math.log(0.85) / 29)
    assert low < true_slope < high < 0


def test_the_same_series_gives_the_same_answer():
    history = _history([1.0] * 6 + [1.12] * 6)
    assert detect_changes(history) == detect_changes(history)


def test_tuples_and_occasion_intervals_are_accepted():
    points = [(i, 100.0 * (1.3 if i >= 8 else 1.0) * math.exp(WOBBLE[i])) for i in range(12)]
    result = detect_changes(points)
    assert [c.index for c in result.change_points] == [8]
    # wide per-occasion intervals (±30%) say the noise is at least that: the 2% wobble no longer
    # sets the interval of the change
    wide = detect_changes([(t, m, (m * 0.7, m * 1.3), 5) for t, m in points])
    assert wide.noise_sd_log > 0.1
    if wide.change_points:
        low, high = wide.change_points[0].change_pct_ci95
        assert high - low > 30


def test_means_must_be_positive():
    with pytest.raises(ValueError, match="> 0"):
        detect_changes([(0, 1.0), (1, 0.0), (2, 1.0)])


def test_too_short_a_series_says_nothing():
    assert detect_changes([(0, 5.0)]).change_points == ()
    assert detect_changes([(0, 5.0), (1, 9.0), (2, 5.0)]).drift is None


def test_attribution_takes_the_events_between_the_last_old_and_the_first_new_occasion():
    history = _history([1.0] * 10 + [0.8] * 10)
    change = detect_changes(history).change_points[0]
    last_old, first_new = history[9].time, history[10].time
    events = [
        (first_new - timedelta(days=2), "CSI driver image v1.2 → v1.3"),
        (last_old + timedelta(hours=1), "StorageClass changed"),
        (first_new, "webhook 7f3a"),  # at the first new occasion: counts
        (last_old, "webhook 1111"),  # at the last old occasion: that run measured the old state
        (history[3].time, "an old upgrade"),
        (first_new + timedelta(days=1), "a later upgrade"),
    ]
    assert attribute(change, events) == (
        (last_old + timedelta(hours=1), "StorageClass changed"),
        (first_new - timedelta(days=2), "CSI driver image v1.2 → v1.3"),
        (first_new, "webhook 7f3a"),
    )
    assert attribute(change, [(history[3].time, "an old upgrade")]) == ()  # attributed to none
    assert attribute(change, []) == ()


def test_the_drift_statistics_are_scipys():
    """Mann-Kendall and Theil-Sen are computed as scipy.stats.kendalltau and theilslopes compute
    them (without importing scipy.stats in every aggregation): the same numbers, ties or not,
    short series (exact p) and long ones (asymptotic)."""
    from scipy import stats

    from pvbench.stats.changepoints import _mann_kendall_p, _theil_sen

    rng = np.random.default_rng(3)
    for trial in range(400):
        n = int(rng.integers(4, 90))
        y = rng.normal(size=n) + rng.normal() * np.arange(n) / n
        if trial % 3 == 0:
            y = np.round(y, 1)  # ties
        index = np.arange(n, dtype=float)
        expected = stats.kendalltau(index, y).pvalue
        assert _mann_kendall_p(y) == expected or (math.isnan(expected) and math.isnan(_mann_kendall_p(y)))
        slope, _, low, high = stats.theilslopes(y, index, alpha=0.95)
        assert _theil_sen(y) == (slope, low, high)
    assert math.isnan(_mann_kendall_p(np.ones(6)))


def test_the_gate_that_stops_early_decides_as_the_whole_test():
    """The whole series' gate stops drawing permutations once they show it flat: the same answer
    as drawing all 999, and, when it does not stop, the generator left as drawing them at once."""
    from pvbench.stats.changepoints import _split_pvalue

    data = np.random.default_rng(11)
    for trial in range(60):
        n = int(data.integers(6, 40))
        y = data.normal(0, 0.04, n) + (0.1 * (np.arange(n) >= n // 2) if trial % 2 else 0.0)
        whole, early = np.random.default_rng(trial), np.random.default_rng(trial)
        p = _split_pvalue(y, 3, 999, whole)
        p_early = _split_pvalue(y, 3, 999, early, stop_above=0.05)
        assert (p > 0.05) == (p_early > 0.05)
        if p <= 0.05:
            assert p_early == p and whole.random() == early.random()


def test_kept_permutations_are_the_ones_the_generator_draws():
    """A permutation test takes kept column orders where a generator in the same state drew them
    before: the same permutations as rng.permuted draws, the generator left where drawing them
    leaves it, and no more kept than its bound."""
    from pvbench.stats.changepoints import PermutationOrders

    orders = PermutationOrders()
    window = np.random.default_rng(1).normal(size=12)
    for _ in range(2):  # drawn, then taken from what is kept
        drawn, taken = np.random.default_rng(7), np.random.default_rng(7)
        for size in (100, 100, 799):
            expected = drawn.permuted(np.tile(window, (size, 1)), axis=1)
            assert np.array_equal(np.take(window, orders(taken, size, len(window))), expected)
            assert taken.bit_generator.state == drawn.bit_generator.state
    assert len(orders.kept) == 3
    orders.max_bytes = 100 * 12 * 8  # one 100-row order of 12 columns
    orders(np.random.default_rng(8), 100, 12)
    assert len(orders.kept) == 1 and orders.bytes <= orders.max_bytes
    orders.max_bytes = 0  # none kept: each drawn, and still the generator's own
    drawn, taken = np.random.default_rng(9), np.random.default_rng(9)
    expected = drawn.permuted(np.tile(window, (100, 1)), axis=1)
    assert np.array_equal(np.take(window, orders(taken, 100, len(window))), expected)
    assert not orders.kept and orders.bytes == 0


def test_the_fast_pelt_segments_as_ruptures_own():
    """pelt_l2 (running-sum l2 cost, each end's starts weighed with NumPy) finds the boundaries
    ruptures' own Pelt with its l2 cost finds, ties between partitions' costs included; and
    refuses, as ruptures does, a min_size longer than the series."""
    import ruptures

    from pvbench.stats.changepoints import pelt_l2

    rng = np.random.default_rng(7)
    for trial in range(120):
        n = int(rng.integers(6, 90))
        y = math.log(1000) + rng.normal(0, 0.04, n)
        for _ in range(int(rng.integers(0, 4))):  # up to 3 steps
            y -= rng.normal(0, 0.15) * (np.arange(n) >= rng.integers(1, n))
        if trial % 4 == 0:
            y = np.round(y, 2)  # ties between partitions' costs
        min_size = int(rng.integers(1, 4))
        pen = 2 * 0.04**2 * math.log(n) * rng.uniform(0.2, 3)
        fast = pelt_l2(y, pen, min_size)
        assert fast == ruptures.Pelt(model="l2", min_size=min_size, jump=1).fit(y).predict(pen=pen)
    with pytest.raises(ValueError, match="segments of at least 4"):
        pelt_l2(np.ones(3), 1.0, 4)
    with pytest.raises(ruptures.exceptions.BadSegmentationParameters):
        ruptures.Pelt(model="l2", min_size=4, jump=1).fit(np.ones(3)).predict(pen=1.0)


def test_pelt_segments_each_row_of_many_as_it_segments_that_row_alone():
    """pelt_l2_many (the series of one length segmented at once, each with its penalty) finds for
    each row what pelt_l2 finds for it alone: rows with steps, flat ones, tied values."""
    from pvbench.stats.changepoints import pelt_l2, pelt_l2_many

    rng = np.random.default_rng(3)
    for n in (6, 20, 90):
        rows = rng.normal(0, 0.04, (12, n))
        for row in rows[::2]:  # every other row with up to 3 steps
            for _ in range(int(rng.integers(0, 4))):
                row -= rng.normal(0, 0.15) * (np.arange(n) >= rng.integers(1, n))
        rows[-3:] = np.round(rows[-3:], 2)  # ties between partitions' costs
        pens = 2 * 0.04**2 * math.log(n) * rng.uniform(0.2, 3, len(rows))
        for min_size in (1, 2, 3):
            together = pelt_l2_many(rows, pens, min_size)
            assert together == [pelt_l2(row, pen, min_size) for row, pen in zip(rows, pens)]


def test_series_judged_together_are_judged_as_each_alone():
    """detect_changes_many (what the history judges a campaign's series with) gives each series the
    History detect_changes gives it alone: series of several lengths, flat, with one or two steps,
    drifting, with tied values, without their intervals, too short to judge."""
    from pvbench.stats.changepoints import detect_changes_many

    rng = np.random.default_rng(5)
    series = []
    for n in (1, 2, 5, 6, 12, 30, 30, 60, 60):
        for kind in ("flat", "step", "two steps", "drift", "ties", "no intervals"):
            y = rng.normal(0, 0.04, n)
            if kind == "step":
                y[n * 2 // 3 :] += math.log(0.85)
            elif kind == "two steps":
                y[n // 3 :] += 0.2
                y[2 * n // 3 :] -= 0.3
            elif kind == "drift":
                y += np.linspace(0, -0.15, n)
            elif kind == "ties":
                y = np.round(y + 0.1 * (np.arange(n) > n // 2), 2)
            means = 1000 * np.exp(y)
            if kind == "no intervals":
                series.append([(float(i), float(m)) for i, m in enumerate(means)])
            else:
                series.append([Occasion(float(i), float(m), (0.95 * m, 1.05 * m), 5) for i, m in enumerate(means)])
    together = detect_changes_many(series, seed=3)
    assert sum(len(h.change_points) for h in together) > 20  # the steps found: not only flat answers
    assert repr(together) == repr([detect_changes(points, seed=3) for points in series])
    with pytest.raises(ValueError, match="finite and > 0"):
        detect_changes_many([series[-1], [(0, 1.0), (1, 0.0), (2, 1.0)]])


def test_an_aggregation_does_not_import_ruptures():
    """Segmenting a history needs no ruptures (it imports scipy.stats: ~1 s of CPU in every
    aggregation whose history has a change): ruptures is the tests' reference only."""
    import subprocess
    import sys

    code = (
        "import sys, numpy as np\n"
        "from pvbench.stats.changepoints import Occasion, detect_changes\n"
        "means = [1000.0] * 20 + [800.0] * 20\n"
        "h = detect_changes([Occasion(time=float(i), mean=m * (1 + 0.01 * ((i * 7) % 5 - 2))) for i, m in enumerate(means)])\n"
        "assert h.change_points, h\n"
        "print(sorted({'ruptures', 'scipy.stats'} & set(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout
