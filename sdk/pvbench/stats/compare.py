"""Compare two sets of repeated measurements: is the candidate better, worse, or no different that matters?

For each metric (one storage class × workload × direction × metric, or one workload across two
classes) the two samples are the repetitions of each side. Reported, per metric:

* the difference and ratio of the means, each with a 95% bootstrap confidence interval
  (percentile method, resampling each side's repetitions independently);
* a Mann–Whitney U p-value (two-sided, scipy.stats): no assumption of normality, which
  matters because storage results are often skewed or bimodal (caches, warm-up);
* effect sizes that do not depend on n: Cliff's delta (P(cand > base) − P(cand < base))
  and the Hodges–Lehmann shift (median of all pairwise differences);
* Holm's step-down correction across all metrics compared in one call, so gating on
  twenty metrics does not raise the false-alarm rate twentyfold;
* a verdict that knows the metric's direction (``better`` = higher for IOPS and MiB/s,
  lower for latency): ``better`` or ``worse`` when the Holm-adjusted p is below alpha AND
  the change of the mean is at least the smallest meaningful change; otherwise
  ``no meaningful difference``. ``equivalent`` additionally says whether the whole CI of the
  change lies within ± the smallest meaningful change (i.e. "no difference" is an answer,
  not just a lack of data).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Iterable, Sequence

import numpy as np

BETTER = "better"
WORSE = "worse"
SAME = "no meaningful difference"
VERDICTS = (BETTER, WORSE, SAME)


@dataclass(frozen=True)
class CompareSettings:
    alpha: float = 0.05
    min_change: float = 0.05
    """Smallest meaningful change, relative to the baseline mean (0.05 = 5%)."""
    confidence: float = 0.95
    n_boot: int = 4000
    seed: int = 20230421

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be between 0 and 1, not {self.alpha}")
        if self.min_change < 0:
            raise ValueError(f"the smallest meaningful change cannot be negative ({self.min_change})")
        if not 0 < self.confidence < 1:
            raise ValueError(f"confidence must be between 0 and 1, not {self.confidence}")
        if self.n_boot < 100:
            raise ValueError(f"use at least 100 bootstrap resamples, not {self.n_boot}")


@dataclass
class Comparison:
    """One metric, baseline vs candidate. ``key`` holds the grouping labels (workload, metric, …)."""

    key: dict[str, object]
    better: str  # 'higher' or 'lower'
    n_baseline: int
    n_candidate: int
    mean_baseline: float
    mean_candidate: float
    sd_baseline: float
    sd_candidate: float
    median_baseline: float
    median_candidate: float
    diff: float
    diff_ci_low: float
    diff_ci_high: float
    ratio: float
    ratio_ci_low: float
    ratio_ci_high: float
    p_value: float
    cliffs_delta: float
    hl_shift: float
    p_holm: float = float("nan")
    significant: bool = False
    meaningful: bool = False
    equivalent: bool = False
    verdict: str = SAME
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def change(self) -> float:
        """Relative change of the mean, candidate vs baseline (+0.10 = 10% higher)."""
        return self.ratio - 1.0

    @property
    def improvement(self) -> float:
        """The change signed so that positive is better (latency down → positive)."""
        return self.change if self.better == "higher" else -self.change

    def as_row(self) -> dict[str, object]:
        row = dict(self.key)
        data = asdict(self)
        data.pop("key")
        extra = data.pop("extra")
        row.update(data)
        row.update(extra)
        row["change"] = self.change
        row["change_ci_low"] = self.ratio_ci_low - 1.0
        row["change_ci_high"] = self.ratio_ci_high - 1.0
        return row


# ------------------------------------------------------------------ building blocks
def cliffs_delta(baseline: np.ndarray, candidate: np.ndarray) -> float:
    """P(candidate > baseline) − P(candidate < baseline), over all pairs; in [−1, 1]."""
    diff = candidate[:, None] - baseline[None, :]
    return float((np.sign(diff)).mean())


def hodges_lehmann(baseline: np.ndarray, candidate: np.ndarray) -> float:
    """Median of all pairwise differences candidate − baseline (a robust location shift)."""
    return float(np.median(candidate[:, None] - baseline[None, :]))


def mann_whitney_p(baseline: np.ndarray, candidate: np.ndarray, seed: int = 0) -> float:
    """Two-sided Mann–Whitney U p-value.

    scipy's exact distribution assumes no ties; with ties in small samples (imported values
    rounded to 100 IOPS, rate-limited fio) a permutation distribution is used instead, which
    enumerates all splits exactly when there are few enough of them.
    """
    from scipy import stats

    if np.all(baseline == baseline[0]) and np.all(candidate == baseline[0]):
        return 1.0
    ties = len(np.unique(np.concatenate([baseline, candidate]))) < len(baseline) + len(candidate)
    if ties and min(len(baseline), len(candidate)) <= 8:
        method = stats.PermutationMethod(n_resamples=9999, rng=np.random.default_rng(seed))
    else:
        method = "auto"
    p = float(stats.mannwhitneyu(candidate, baseline, alternative="two-sided", method=method).pvalue)
    return 1.0 if math.isnan(p) else min(1.0, p)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values (step-down, monotone, capped at 1)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def bootstrap_means(values: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``n_boot`` resamples (with replacement) of ``values``."""
    idx = rng.integers(0, len(values), size=(n_boot, len(values)))
    return values[idx].mean(axis=1)


# ------------------------------------------------------------------ one comparison
def compare_samples(baseline: Iterable[float], candidate: Iterable[float], better: str = "higher",
                    settings: CompareSettings = CompareSettings(), key: dict[str, object] | None = None,
                    rng: np.random.Generator | None = None) -> Comparison:
    """Compare two samples of one metric (no multiple-testing correction: see compare_many)."""
    if better not in ("higher", "lower"):
        raise ValueError(f"better must be 'higher' or 'lower', not {better!r}")
    b = np.asarray(list(baseline), dtype=float)
    c = np.asarray(list(candidate), dtype=float)
    if len(b) < 2 or len(c) < 2:
        raise ValueError(f"need at least 2 values per side (baseline {len(b)}, candidate {len(c)})")
    rng = rng or np.random.default_rng(settings.seed)
    mb, mc = bootstrap_means(b, settings.n_boot, rng), bootstrap_means(c, settings.n_boot, rng)
    tail = (1 - settings.confidence) / 2 * 100
    diff_lo, diff_hi = np.percentile(mc - mb, [tail, 100 - tail])
    mean_b, mean_c = float(b.mean()), float(c.mean())
    if mean_b > 0 and np.all(mb > 0):
        ratio = mean_c / mean_b
        ratio_lo, ratio_hi = np.percentile(mc / mb, [tail, 100 - tail])
    else:  # a ratio to zero means nothing; keep the difference only
        ratio = ratio_lo = ratio_hi = float("nan")
    return Comparison(
        key=dict(key or {}), better=better,
        n_baseline=len(b), n_candidate=len(c),
        mean_baseline=mean_b, mean_candidate=mean_c,
        sd_baseline=float(b.std(ddof=1)), sd_candidate=float(c.std(ddof=1)),
        median_baseline=float(np.median(b)), median_candidate=float(np.median(c)),
        diff=mean_c - mean_b, diff_ci_low=float(diff_lo), diff_ci_high=float(diff_hi),
        ratio=float(ratio), ratio_ci_low=float(ratio_lo), ratio_ci_high=float(ratio_hi),
        p_value=mann_whitney_p(b, c, settings.seed),
        cliffs_delta=cliffs_delta(b, c), hl_shift=hodges_lehmann(b, c),
    )


def decide(comparisons: list[Comparison], settings: CompareSettings = CompareSettings()) -> list[Comparison]:
    """Holm-correct the p-values of one family of comparisons and set each verdict (in place)."""
    adjusted = holm([c.p_value for c in comparisons])
    for comp, p_adj in zip(comparisons, adjusted):
        comp.p_holm = p_adj
        comp.significant = p_adj < settings.alpha
        change = comp.change
        if math.isnan(change):  # no ratio: judge the absolute difference by its sign only
            comp.meaningful = comp.diff != 0
            improvement = comp.diff if comp.better == "higher" else -comp.diff
        else:
            comp.meaningful = abs(change) >= settings.min_change
            improvement = comp.improvement
        comp.equivalent = (not math.isnan(comp.ratio_ci_low)
                           and comp.ratio_ci_low - 1 > -settings.min_change
                           and comp.ratio_ci_high - 1 < settings.min_change)
        if comp.significant and comp.meaningful:
            comp.verdict = BETTER if improvement > 0 else WORSE
        else:
            comp.verdict = SAME
    return comparisons


def compare_many(groups: list[tuple[dict[str, object], str, Sequence[float], Sequence[float]]],
                 settings: CompareSettings = CompareSettings()) -> list[Comparison]:
    """Compare every (key, better, baseline values, candidate values) and Holm-correct them together.

    One generator seeded from ``settings.seed`` serves all groups in order, so the same
    input gives the same confidence intervals every time.
    """
    rng = np.random.default_rng(settings.seed)
    out = [compare_samples(b, c, better, settings, key, rng) for key, better, b, c in groups]
    return decide(out, settings)


def describe(comp: Comparison) -> str:
    """One line for humans: '+12.3% [+8.1%, +16.0%], p(Holm)=0.002 → worse'."""
    if math.isnan(comp.ratio):
        change = f"{comp.diff:+,.4g} [{comp.diff_ci_low:+,.4g}, {comp.diff_ci_high:+,.4g}]"
    else:
        change = f"{comp.change:+.1%} [{comp.ratio_ci_low - 1:+.1%}, {comp.ratio_ci_high - 1:+.1%}]"
    return f"{change}, p(Holm)={comp.p_holm:.3g} → {comp.verdict}"
