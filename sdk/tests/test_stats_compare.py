"""Comparisons give known answers on synthetic data: false-positive rate, power, direction, Holm,
occasions as the unit of inference (the calibrated rates: test_stats_calibration.py)."""

import math
import tracemalloc

import numpy as np
import pytest

from pvbench.stats.compare import (
    ALL_DIFFERENCES_UP_TO,
    BETTER,
    SAME,
    WITHHELD,
    WORSE,
    CompareSettings,
    cliffs_delta,
    compare_many,
    compare_samples,
    decide,
    hodges_lehmann,
    holm,
)

TRIALS = 1000
ALPHA = 0.05


def _slack(p: float, n: int) -> float:
    """Three binomial standard errors: a rate above p + slack is not bad luck."""
    return 3 * math.sqrt(p * (1 - p) / n)


def _verdicts(rng, trials, n, shift, cv, better="higher", metrics=1, settings=CompareSettings()):
    """Per trial: the verdicts of one family of `metrics` comparisons, candidate = baseline × (1 + shift)."""
    out = []
    for _ in range(trials):
        groups = []
        for m in range(metrics):
            base = rng.normal(1000.0, 1000.0 * cv, n)
            cand = rng.normal(1000.0 * (1 + shift), 1000.0 * cv, n)
            groups.append(({"metric": m}, better, base, cand))
        out.append([c.verdict for c in compare_many(groups, settings)])
    return out


def test_identical_distributions_false_positive_rate_at_most_alpha():
    """The test alone (no minimum change): a verdict other than 'no difference' at most α of the time."""
    rng = np.random.default_rng(1)
    settings = CompareSettings(alpha=ALPHA, min_change=0.0)
    runs = _verdicts(rng, TRIALS, n=10, shift=0.0, cv=0.05, settings=settings)
    rate = sum(v[0] != SAME for v in runs) / TRIALS
    assert rate <= ALPHA + _slack(ALPHA, TRIALS), rate
    assert rate > 0.01, f"{rate}: the test never fires, something is degenerate"


def test_identical_distributions_holm_keeps_family_wise_rate():
    """Five metrics per comparison: the chance of ANY false verdict stays at or below α (Holm)."""
    rng = np.random.default_rng(2)
    settings = CompareSettings(alpha=ALPHA, min_change=0.0)
    runs = _verdicts(rng, 400, n=10, shift=0.0, cv=0.05, metrics=5, settings=settings)
    family_rate = sum(any(v != SAME for v in family) for family in runs) / len(runs)
    assert family_rate <= ALPHA + _slack(ALPHA, len(runs)), family_rate


def test_identical_distributions_with_default_settings_and_five_reps():
    """Defaults (5% smallest meaningful change), 5 reps a side, 5% noise: still at most α."""
    rng = np.random.default_rng(3)
    runs = _verdicts(rng, TRIALS, n=5, shift=0.0, cv=0.05, settings=CompareSettings())
    rate = sum(v[0] != SAME for v in runs) / TRIALS
    assert rate <= ALPHA + _slack(ALPHA, TRIALS), rate


@pytest.mark.parametrize(
    "better, shift, expected",
    [
        ("higher", -0.10, WORSE),  # IOPS down 10 %
        ("higher", +0.10, BETTER),  # IOPS up 10 %
        ("lower", +0.10, WORSE),  # latency up 10 %
        ("lower", -0.10, BETTER),  # latency down 10 %
    ],
)
def test_ten_percent_shift_with_low_noise_is_detected_in_the_right_direction(better, shift, expected):
    rng = np.random.default_rng(4)
    runs = _verdicts(rng, 200, n=5, shift=shift, cv=0.02, better=better, settings=CompareSettings())
    assert all(v[0] == expected for v in runs), sum(v[0] == expected for v in runs)


def test_significant_but_small_change_is_no_meaningful_difference():
    rng = np.random.default_rng(5)
    base = rng.normal(1000, 2, 20)
    cand = rng.normal(1020, 2, 20)  # +2 %: clear statistically, below the 5 % that matters
    [comp] = compare_many([({}, "higher", base, cand)], CompareSettings(min_change=0.05))
    assert comp.significant and not comp.meaningful
    assert comp.verdict == SAME
    assert comp.equivalent  # the whole CI of the change lies within ±5 %


def test_confidence_intervals_cover_the_true_change():
    rng = np.random.default_rng(6)
    base = rng.normal(100, 5, 30)
    cand = rng.normal(120, 5, 30)
    comp = compare_samples(base, cand, "higher", CompareSettings())
    assert comp.diff_ci_low < 20 < comp.diff_ci_high
    assert comp.ratio_ci_low < 1.2 < comp.ratio_ci_high
    assert comp.diff_ci_low < comp.diff < comp.diff_ci_high
    assert comp.hl_shift == pytest.approx(20, abs=4)


def test_same_input_same_intervals():
    base, cand = [10, 11, 12, 13, 12], [14, 15, 13, 16, 15]
    a = compare_many([({}, "higher", base, cand)])
    b = compare_many([({}, "higher", base, cand)])
    assert (a[0].diff_ci_low, a[0].ratio_ci_high) == (b[0].diff_ci_low, b[0].ratio_ci_high)


def test_holm_known_values():
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5]) == [0.5]
    assert holm([0.9, 0.8]) == pytest.approx([1.0, 1.0])  # 2 × 0.8 capped at 1; monotone


def test_effect_sizes_known_values():
    b, c = np.array([1.0, 2, 3]), np.array([4.0, 5, 6])
    assert cliffs_delta(b, c) == 1.0
    assert cliffs_delta(c, b) == -1.0
    assert cliffs_delta(b, b) == 0.0
    assert hodges_lehmann(b, c) == 3.0


@pytest.mark.parametrize(
    "shape",
    ["normal", "lognormal", "two modes", "ties (integers)", "few distinct values", "odd pairs"],
)
def test_hodges_lehmann_of_many_pairs_is_the_median_of_every_difference(shape):
    # above ALL_DIFFERENCES_UP_TO pairs the middle differences are selected in a window, not made
    # all: the number must be the full matrix's median, to the last bit, whatever the values' shape
    rng = np.random.default_rng(11)
    for trial in range(40):
        n, m = rng.integers(200, 700, 2)
        if shape == "normal":
            b, c = rng.normal(1000, 50, m), rng.normal(1010, 60, n)
        elif shape == "lognormal":
            b, c = rng.lognormal(3, 2, m), rng.lognormal(3.1, 2, n)
        elif shape == "two modes":
            b = np.concatenate([rng.normal(10, 1, m // 2), rng.normal(1e6, 1, m - m // 2)])
            c = rng.normal(5e5, 3e5, n)
        elif shape == "ties (integers)":
            b, c = np.round(rng.normal(100, 3, m)), np.round(rng.normal(101, 3, n))
        elif shape == "few distinct values":
            b, c = rng.integers(0, 5, m).astype(float), rng.integers(0, 6, n).astype(float)
        else:
            b, c = rng.normal(5, 1, 201 + 2 * trial), rng.normal(5.2, 1, 203)
        assert len(b) * len(c) > ALL_DIFFERENCES_UP_TO
        assert hodges_lehmann(b, c) == float(np.median(c[:, None] - b[None, :]))


def test_hodges_lehmann_does_not_make_every_difference():
    # a year of runs pools thousands of values per side: 20,000 × 20,000 differences would be
    # 3.2 GB; the window holds a small share of them
    rng = np.random.default_rng(3)
    b, c = rng.normal(1000, 50, 20_000), rng.normal(1010, 50, 20_000)
    tracemalloc.start()  # numpy reports its buffers to tracemalloc
    try:
        assert hodges_lehmann(b, c) == pytest.approx(10, abs=2)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200e6


def test_direction_and_significance_come_from_one_estimate():
    # the case: baseline 1000…1090; candidate 1100…1170 plus two stalls at 50. Mann–Whitney
    # said p = 0.026 while the mean said −12%, and the verdict read "worse". Now the one estimate
    # (log scale) decides both: the stalls make it uncertain, so no verdict either way.
    base = list(range(1000, 1091, 10))
    cand = list(range(1100, 1171, 10)) + [50, 50]
    [comp] = compare_many([({}, "higher", base, cand)])
    assert comp.verdict == SAME
    assert comp.ratio_ci_low < 1 < comp.ratio_ci_high
    # without the stalls it is clearly better, and the interval agrees with the verdict
    [comp] = compare_many([({}, "higher", base, list(range(1100, 1171, 10)))])
    assert comp.verdict == BETTER and comp.ratio_ci_low > 1 and comp.change > 0


def test_repetitions_of_one_occasion_are_not_independent_samples():
    # 5 tight repetitions per side, one occasion each: 20% apart, yet nothing says how much two
    # days differ — withheld, with the reason
    base, cand = [[1000, 1001, 999, 1000, 1002]], [[800, 801, 799, 800, 802]]
    [comp] = compare_many([({}, "higher", base, cand)])
    assert comp.verdict == WITHHELD and "day-to-day variation unknown" in comp.reason
    assert comp.change == pytest.approx(-0.2, abs=0.001) and math.isnan(comp.p_holm)
    # the class's history says occasions differ by ~1%: now a 20% drop is clearly worse
    history = [[1000, 1002], [1010, 1011], [990, 991], [1005, 1004]]
    [comp] = compare_many([({}, "higher", base, cand, history)])
    assert comp.verdict == WORSE and "4 other occasions" in comp.method
    # the history says occasions differ by ~30%: a 20% drop is within a normal day's variation
    history = [[1000], [1300], [700], [1200], [850]]
    [comp] = compare_many([({}, "higher", base, cand, history)])
    assert comp.verdict == SAME


def test_one_candidate_run_against_a_baseline_history():
    rng = np.random.default_rng(8)
    base = [rng.normal(1000 + rng.normal(0, 30), 20, 3) for _ in range(8)]  # 8 occasions × 3
    [same] = compare_many([({}, "higher", base, [rng.normal(1000, 20, 3)])])
    [worse] = compare_many([({}, "higher", base, [rng.normal(800, 20, 3)])])
    assert same.verdict == SAME and worse.verdict == WORSE
    assert worse.occasions_baseline == 8 and worse.occasions_candidate == 1 and worse.df == 7
    assert "the baseline's 8 occasions" in worse.method


def test_only_what_nothing_is_known_of_is_withheld():
    two = [[1000, 1001], [1010, 1012]]
    [comp] = compare_many([({}, "higher", two, [[900, 905], [880, 890]])])  # 2 + 2 occasions: 2 df, judged
    assert comp.verdict == WORSE and comp.df == 2 and "pooled t" in comp.method
    # one occasion a side, no history, no other cell: nothing is known of the day-to-day variation
    [comp] = compare_many([({}, "higher", [[1.0, 1.1]], [[2.0, 2.1]])])
    assert comp.verdict == WITHHELD and "day-to-day variation unknown" in comp.reason
    # a withheld metric is not part of the Holm family
    comps = compare_many(
        [
            ({}, "higher", [[1.0, 1.1]], [[2.0, 2.1]]),
            ({}, "higher", [1000, 1001, 999, 1000, 1002], [800, 801, 799, 800, 802]),
        ]
    )
    assert [c.verdict for c in comps] == [WITHHELD, WORSE]
    assert comps[1].p_holm == comps[1].p_value


def test_zero_baseline_has_no_ratio_but_a_verdict():
    [comp] = compare_many([({}, "lower", [0.0, 0.0, 0.0, 0.0, 0.0], [9.0, 9.5, 10.0, 9.7, 9.9])])
    assert math.isnan(comp.ratio)
    assert comp.verdict == WORSE  # latency rose from zero: significant, and any rise from zero is meaningful


def test_invalid_input_is_refused():
    with pytest.raises(ValueError):
        compare_samples([1.0], [2.0, 3.0])
    with pytest.raises(ValueError):
        compare_samples([[1.0]], [[2.0, 3.0]])
    with pytest.raises(ValueError):
        compare_samples([1.0, 2.0], [2.0, 3.0], better="up")
    with pytest.raises(ValueError):
        CompareSettings(alpha=1.5)
    assert decide([]) == []


def test_occasions_as_one_array_compare_exactly_as_a_list_of_arrays():
    """The report's comparisons pass each side and history as OccasionArrays (one float array,
    the occasions' sizes); every figure is the one the same occasions give as a list of arrays,
    bit for bit, with a single-occasion side (judged from the history) and with two sides."""
    from pvbench.stats.compare import OccasionArrays

    rng = np.random.default_rng(11)

    def occasions(k, level):
        return [rng.normal(level * rng.uniform(0.9, 1.1), 20, int(rng.integers(2, 7))) for _ in range(k)]

    def arrays(occs, run):
        keys = [(f"{run}{i}", "o") for i in range(len(occs))]
        return OccasionArrays(keys, np.concatenate(occs), np.array([len(o) for o in occs], dtype=np.int64))

    for kb, kc in ((1, 1), (1, 4), (5, 6)):
        base, cand, history = occasions(kb, 1000), occasions(kc, 1050), occasions(8, 1000)
        as_lists = compare_samples(base, cand, "higher", history=history)
        as_one = compare_samples(arrays(base, "b"), arrays(cand, "c"), "higher", history=arrays(history, "h"))
        assert as_one.as_row().keys() == as_lists.as_row().keys()
        for name, value in as_lists.as_row().items():
            got = as_one.as_row()[name]
            assert got == value or (isinstance(value, float) and math.isnan(value) and math.isnan(got)), name
    # a side without some occasions: the others, in order, their values with them
    side = arrays([np.array([1.0, 2.0]), np.array([3.0]), np.array([4.0, 5.0, 6.0])], "r")
    rest = side.without({("r1", "o")})
    assert list(rest) == [("r0", "o"), ("r2", "o")]
    assert rest.values.tolist() == [1.0, 2.0, 4.0, 5.0, 6.0] and rest.sizes.tolist() == [2, 3]
    assert side.without(set()) is side
