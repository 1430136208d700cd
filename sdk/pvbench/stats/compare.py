"""Compare two sides of one metric: is the candidate better, worse, or no different that matters?

Storage results vary at two levels: repetitions inside one occasion (a run at one time of day)
are close to each other, while occasions differ much more (the thesis's own runs: 17 of 40
cells have an occasion effect at p < 0.05). Repetitions of one occasion are therefore not
independent samples, and treating them as such makes intervals too narrow and verdicts jumpy.
So the unit of inference here is the **occasion** (one run × occasion): each side's
repetitions are averaged per occasion first, and everything below works on those means.

Per metric (one storage class × workload × direction × metric, or one workload across two
classes):

* the change is estimated on the log scale of the occasion means, so the ratio
  candidate ÷ baseline (of geometric means of occasion means) and its interval come from one
  t statistic: ``d = mean(log m_cand) − mean(log m_base)``, ``ratio = exp(d)``;
* its standard error comes from the **day-to-day (between-occasion) variation**, pooled over
  both sides' occasions and the class's earlier ones (``history``), each group around its own
  mean, and **moderated** (pvbench.stats.moderated): with few occasions a cell borrows strength
  from the other cells of its comparisons (a prior that compare_many fits, or the caller
  passes), never below the repetitions' noise of an occasion mean; the t test has the
  cell's degrees of freedom plus the prior's. Only a cell with no degrees of freedom of its
  own and no prior is **withheld**, with the reason;

* the p-value is that same t statistic's (two-sided); Holm's step-down correction runs over
  every metric judged in one call, so gating on twenty metrics does not raise the
  false-alarm rate twentyfold;
* the verdict: ``better`` / ``worse`` when the Holm-adjusted p is below alpha AND the
  estimated change is at least the smallest meaningful change, its direction the sign of
  that same estimate (higher is better for IOPS and MiB/s, lower for latency); otherwise
  ``no meaningful difference``. ``equivalent`` says the whole CI of the change lies within
  ± the smallest meaningful change — "no difference" as a finding, not a lack of data;
* Cliff's delta and the Hodges–Lehmann shift over all values stay as descriptions
  (they do not decide anything: they treat repetitions as independent).

Values ≤ 0 (a latency of 0, an idle direction) have no ratio: the same test then runs on the
occasion means themselves and only the difference is reported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Iterable, Sequence

import numpy as np

from pvbench.stats.moderated import NO_PRIOR, Prior, fit_prior

BETTER = "better"
WORSE = "worse"
SAME = "no meaningful difference"
WITHHELD = "withheld"
VERDICTS = (BETTER, WORSE, SAME, WITHHELD)

Occasions = Sequence[Sequence[float]]
"""One side of a comparison: the values of each occasion (run × occasion) it holds."""


@dataclass(frozen=True)
class CompareSettings:
    alpha: float = 0.05
    min_change: float = 0.05
    """Smallest meaningful change, relative to the baseline (0.05 = 5%)."""
    confidence: float = 0.95

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be between 0 and 1, not {self.alpha}")
        if self.min_change < 0:
            raise ValueError(f"the smallest meaningful change cannot be negative ({self.min_change})")
        if not 0 < self.confidence < 1:
            raise ValueError(f"confidence must be between 0 and 1, not {self.confidence}")


@dataclass
class Comparison:
    """One metric, baseline vs candidate. ``key`` holds the grouping labels (workload, metric, …)."""

    key: dict[str, object]
    better: str  # 'higher' or 'lower'
    n_baseline: int
    n_candidate: int
    occasions_baseline: int
    occasions_candidate: int
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
    df: float
    method: str
    """How the day-to-day variation was judged (pooled, with history, moderated by a prior, …)."""
    cliffs_delta: float
    hl_shift: float
    reason: str = ""
    """Why the verdict is withheld (empty when judged)."""
    history_occasions: int = 0
    p_holm: float = float("nan")
    significant: bool = False
    meaningful: bool = False
    equivalent: bool = False
    verdict: str = SAME
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def change(self) -> float:
        """Relative change, candidate vs baseline (+0.10 = 10% higher)."""
        return self.ratio - 1.0

    @property
    def improvement(self) -> float:
        """The change signed so that positive is better (latency down → positive)."""
        return self.change if self.better == "higher" else -self.change

    def as_row(self) -> dict[str, object]:
        row = dict(self.key)
        # the fields as they are (plain numbers and strings): asdict's deep copy of each was a tenth
        # of the report's comparisons
        row.update((f.name, getattr(self, f.name)) for f in _FIELDS if f.name not in ("key", "extra"))
        row.update(self.extra)
        row["change"] = self.change
        row["change_ci_low"] = self.ratio_ci_low - 1.0
        row["change_ci_high"] = self.ratio_ci_high - 1.0
        return row


_FIELDS = fields(Comparison)
_SQL_TYPES = {"int": "integer", "float": "double", "str": "varchar", "bool": "boolean"}


def row_columns() -> list[tuple[str, str]]:
    """The columns ``as_row`` adds to the key's labels, each typed from its field (one definition),
    and the change derived from the ratio."""
    own = [(f.name, _SQL_TYPES[f.type]) for f in _FIELDS if f.name not in ("key", "extra")]
    return own + [(name, "double") for name in ("change", "change_ci_low", "change_ci_high")]


def settings_columns() -> list[tuple[str, str]]:
    """The settings a verdict was judged with, as columns: CompareSettings' fields."""
    return [(f.name, _SQL_TYPES[f.type]) for f in fields(CompareSettings)]


# ------------------------------------------------------------------ building blocks
def cliffs_delta(baseline: np.ndarray, candidate: np.ndarray) -> float:
    """P(candidate > baseline) − P(candidate < baseline), over all pairs; in [−1, 1]. Counted
    with a sorted baseline (n log n), not a matrix of every pair."""
    ordered = np.sort(baseline)
    below = np.searchsorted(ordered, candidate, side="left").sum()  # pairs with baseline < candidate
    above = (len(ordered) - np.searchsorted(ordered, candidate, side="right")).sum()
    return float((below - above) / (len(baseline) * len(candidate)))


def hodges_lehmann(baseline: np.ndarray, candidate: np.ndarray) -> float:
    """Median of all pairwise differences candidate − baseline (a robust location shift).

    The same number as ``np.median(candidate[:, None] - baseline[None, :])``, without making the
    n·m differences when there are many: a class pooled over a year of runs has thousands of
    values a side, and every difference of two such sides is hundreds of MB and seconds. The
    middle differences are found in a window of the sorted sides instead (_middle_differences)."""
    n_pairs = len(baseline) * len(candidate)
    middle = None
    if n_pairs > ALL_DIFFERENCES_UP_TO:
        b, c = np.sort(baseline), np.sort(candidate)
        ranks = [n_pairs // 2] if n_pairs % 2 else [n_pairs // 2 - 1, n_pairs // 2]
        middle = _middle_differences(b, c, ranks)
        if middle is None:
            middle = _tied_differences(b, c, ranks)
    if middle is None:  # few pairs, or many distinct values the window missed (never seen)
        return float(np.median(candidate[:, None] - baseline[None, :]))
    return float(np.mean(middle))


# Below this many pairs every difference is made (cheaper than selecting: ~1 ms at 32,768).
ALL_DIFFERENCES_UP_TO = 1 << 15
# Pairs sampled to place the window: at least this many, else (pairs)^(2/3), which keeps both the
# sample and the window to a small share of the pairs.
SAMPLED_PAIRS = 4096


def _middle_differences(b: np.ndarray, c: np.ndarray, ranks: list[int]) -> np.ndarray | None:
    """The differences c_i − b_j of the given 0-based ranks (sorted), b and c sorted; None when
    the sampled window does not provably hold them (the caller then takes another way).

    A sample of the pairs gives a value range [lo, hi] that holds the wanted ranks with a margin
    of four standard errors. In row i the differences c_i − b_j fall as j grows, so the pairs in
    range are one slice of b per row (searchsorted), and every pair past a row's slice is
    smaller. The wanted ranks are selected among the slices' differences, computed as the full
    matrix computes them; the result is exact when no pair outside the slices lies between them
    (checked on each row's nearest pair outside), else None."""
    n, m = len(c), len(b)
    n_pairs = n * m
    size = max(SAMPLED_PAIRS, int(n_pairs ** (2 / 3)))
    rng = np.random.default_rng(0)  # the result never depends on the sample, only the speed
    sample = np.sort(c[rng.integers(0, n, size)] - b[rng.integers(0, m, size)])
    margin = 4 * math.sqrt(0.25 / size)
    lo = sample[max(0, int((ranks[0] / n_pairs - margin) * size))]
    hi = sample[min(size - 1, math.ceil(((ranks[-1] + 1) / n_pairs + margin) * size))]
    first = np.searchsorted(b, c - hi, side="left")  # row i's slice: first <= j < past
    past = np.searchsorted(b, c - lo, side="right")
    below = int((m - past).sum())
    sizes = past - first
    total = int(sizes.sum())
    if not total or total > n_pairs // 4 or not below <= ranks[0] <= ranks[-1] < below + total:
        return None
    rows = np.repeat(np.arange(n), sizes)
    cols = np.arange(total) + np.repeat(first - (np.cumsum(sizes) - sizes), sizes)
    window = c[rows] - b[cols]
    wanted = [r - below for r in ranks]
    window.partition(wanted)
    middle = window[wanted]
    smaller, larger = past < m, first > 0
    if smaller.any() and (c[smaller] - b[past[smaller]]).max() > middle[0]:
        return None
    if larger.any() and (c[larger] - b[first[larger] - 1]).min() < middle[-1]:
        return None
    return middle


def _tied_differences(b: np.ndarray, c: np.ndarray, ranks: list[int]) -> np.ndarray | None:
    """The same ranks over the distinct values, each difference weighted by how many pairs give
    it: exact and small when the values are heavily tied (integers, a capped device), where a
    value range cannot narrow the pairs down. None when there are many distinct values."""
    bu, bn = np.unique(b, return_counts=True)
    cu, cn = np.unique(c, return_counts=True)
    if len(bu) * len(cu) > ALL_DIFFERENCES_UP_TO:
        return None
    diffs = (cu[:, None] - bu[None, :]).ravel()
    weights = (cn[:, None] * bn[None, :]).ravel()
    order = np.argsort(diffs, kind="stable")
    reached = np.cumsum(weights[order])
    return diffs[order][np.searchsorted(reached, np.asarray(ranks), side="right")]


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


class OccasionArrays:
    """Occasions as one float array (``values``, occasion after occasion) and each one's size
    (``sizes``, none 0), with each one's (run, occasion) in ``keys``: a side as the report's
    comparisons hand it over. A class pooled over a year of runs is thousands of occasions; an
    array each, checked, concatenated and averaged one by one in every comparison, was most of the
    comparisons' Python time. Iterating it gives its keys and ``len`` counts its occasions, as for
    the mapping (run, occasion) → values that sides.group_values makes; compare_samples takes it as
    a side or a history as it is, and computes exactly what it computes for the same occasions as
    a list of arrays."""

    __slots__ = ("keys", "values", "sizes")

    def __init__(self, keys: Sequence[tuple], values: np.ndarray, sizes: np.ndarray):
        self.keys, self.values, self.sizes = keys, values, sizes

    def __len__(self) -> int:
        return len(self.keys)

    def __iter__(self):
        return iter(self.keys)

    def select(self, picked: np.ndarray) -> OccasionArrays:
        """The occasions where the boolean array ``picked`` is true, their values with them."""
        if picked.all():
            return self
        return OccasionArrays(
            [key for key, keep in zip(self.keys, picked) if keep],
            self.values[np.repeat(picked, self.sizes)],
            self.sizes[picked],
        )

    def without(self, keys: set) -> OccasionArrays:
        """The occasions whose key is not in ``keys``."""
        return self.select(np.fromiter((key not in keys for key in self.keys), dtype=bool, count=len(self.keys)))


def as_occasions(side: Iterable) -> list[np.ndarray] | OccasionArrays:
    """A side as a list of occasions. A flat list of numbers means independent values (one each);
    an OccasionArrays is one already."""
    if isinstance(side, OccasionArrays):
        return side
    items = list(side)
    if items and not isinstance(items[0], (list, tuple, np.ndarray)):
        return [np.asarray([float(v)]) for v in items]
    # an array is taken as it is (the report's comparisons pass slices of one array: no copies)
    return [np.asarray(o if isinstance(o, np.ndarray) else list(o), dtype=float) for o in items if len(o)]


def pooled(occasions: list[np.ndarray] | OccasionArrays) -> np.ndarray:
    """Every value of the occasions, in their order."""
    return occasions.values if isinstance(occasions, OccasionArrays) else np.concatenate(occasions)


def occasion_means(occasions: list[np.ndarray] | OccasionArrays) -> np.ndarray:
    """The mean of each occasion, in one pass over them all (a report compares thousands)."""
    if isinstance(occasions, OccasionArrays):
        sizes = occasions.sizes
    else:
        sizes = np.fromiter(map(len, occasions), dtype=np.int64, count=len(occasions))
    if not len(sizes):
        return np.zeros(0)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    return np.add.reduceat(pooled(occasions), starts) / sizes


def within_occasion(occasions: list[np.ndarray] | OccasionArrays, log: bool) -> np.ndarray:
    """Each occasion's repetition noise as the variance of its mean (sd²/n, of the log values when
    ``log``); nan where an occasion has a single value. The floor of the day-to-day variance: an
    occasion mean varies at least by this much, whatever the other cells say."""
    if isinstance(occasions, OccasionArrays):
        sizes, values = occasions.sizes, occasions.values
    else:
        sizes = np.fromiter(map(len, occasions), dtype=np.int64, count=len(occasions))
        values = pooled(occasions) if len(occasions) else np.zeros(0)
    if not len(sizes):
        return np.zeros(0)
    if log:
        values = np.log(values)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    total = np.add.reduceat(values, starts)
    squares = np.add.reduceat(values * values, starts)
    with np.errstate(divide="ignore", invalid="ignore"):
        ss = np.maximum(squares - total * total / sizes, 0.0)
        return np.where(sizes > 1, ss / (sizes - 1) / sizes, np.nan)


def _floor(parts: Sequence[np.ndarray]) -> float:
    """The mean repetition noise of an occasion mean over the occasions that show it (0: none)."""
    values = np.concatenate(parts) if parts else np.zeros(0)
    values = values[~np.isnan(values)]
    return float(values.mean()) if len(values) else 0.0


def _sum_sq(y: np.ndarray) -> float:
    return float(((y - y.mean()) ** 2).sum()) if len(y) > 1 else 0.0


@dataclass(frozen=True)
class _Estimate:
    d: float
    se: float
    df: float
    method: str
    reason: str = ""


def _estimate(
    yb: np.ndarray, yc: np.ndarray, history: list[np.ndarray], what: str, prior: Prior, floor: float
) -> _Estimate:
    """The change d = mean(yc) − mean(yb) and its standard error from the day-to-day variation:
    pooled over the occasions of both sides and of the history (each group around its own mean),
    moderated by the prior (pvbench.stats.moderated), never below ``floor`` (the repetitions'
    noise of an occasion mean)."""
    kb, kc = len(yb), len(yc)
    d = float(yc.mean() - yb.mean())
    groups = [y for y in (yb, yc) if len(y) >= 2] + [h for h in history if len(h) >= 2]
    own = sum(len(g) - 1 for g in groups)
    s2, df = prior.squeeze(sum(_sum_sq(g) for g in groups) / own if own else math.nan, own)
    if df <= 0:
        others = sum(len(h) for h in history)
        return _Estimate(
            d,
            math.nan,
            0,
            "not judged",
            f"{kb} vs {kc} occasion(s), {others} other occasion(s) of this class and no other cells to learn "
            "from: day-to-day variation unknown — run on more occasions, or against a baseline history",
        )
    se = math.sqrt(max(s2, floor) * (1 / kb + 1 / kc))
    sources = []
    if kb >= 2:
        sources.append(f"the baseline's {kb} occasions")
    if kc >= 2:
        sources.append(f"the candidate's {kc} occasions")
    hist = sum(len(h) for h in history if len(h) >= 2)
    if hist:
        sources.append(f"{hist} other occasions of this class")
    if prior.known:
        sources.append(f"a {prior.describe()}")
    return _Estimate(
        d,
        se,
        float(df),
        f"{'moderated ' if prior.known else ''}pooled t on {what} ({kb} vs {kc} occasions; "
        f"day-to-day variation from {', '.join(sources)})",
    )


def _t_p_ci(est: _Estimate, confidence: float) -> tuple[float, float, float]:
    # scipy.special's Student t (what stats.t.sf and .ppf call), without importing scipy.stats
    from scipy import special

    if est.reason:
        return math.nan, math.nan, math.nan
    if est.se == 0:
        return (1.0 if est.d == 0 else 0.0), est.d, est.d
    t = est.d / est.se
    p = float(2 * special.stdtr(est.df, -abs(t)))
    half = float(special.stdtrit(est.df, 0.5 + confidence / 2)) * est.se
    return p, est.d - half, est.d + half


# ------------------------------------------------------------------ one comparison
def compare_samples(
    baseline: Occasions | Iterable[float],
    candidate: Occasions | Iterable[float],
    better: str = "higher",
    settings: CompareSettings = CompareSettings(),
    key: dict[str, object] | None = None,
    history: Occasions | Sequence[Occasions] = (),
    prior: Prior = NO_PRIOR,
) -> Comparison:
    """Compare two sides of one metric (no multiple-testing correction: see compare_many).

    Each side is a list of occasions, each a list of repetition values; a flat list of numbers
    means independent values. ``history`` (optional): earlier occasions of the same class and
    metric that belong to neither side — one list of occasions (a group with its own mean), or a
    list of such groups — used only when a side has a single occasion. ``prior``: the day-to-day
    variance of cells like this one (pvbench.stats.moderated; compare_many fits it).
    """
    if better not in ("higher", "lower"):
        raise ValueError(f"better must be 'higher' or 'lower', not {better!r}")
    ob, oc = as_occasions(baseline), as_occasions(candidate)
    if not ob or not oc:
        raise ValueError(f"need at least 1 value per side (baseline {len(ob)}, candidate {len(oc)} occasions)")
    b, c = pooled(ob), pooled(oc)
    if len(b) < 2 or len(c) < 2:
        raise ValueError(f"need at least 2 values per side (baseline {len(b)}, candidate {len(c)})")
    groups = _history_groups(history)
    mb, mc = occasion_means(ob), occasion_means(oc)
    mh = [occasion_means(g) for g in groups]
    positive = bool((mb > 0).all() and (mc > 0).all() and all((h > 0).all() for h in mh))
    floor = _floor([within_occasion(o, positive) for o in (ob, oc, *groups)])
    if positive:
        est = _estimate(np.log(mb), np.log(mc), [np.log(h) for h in mh], "log occasion means", prior, floor)
        p, lo, hi = _t_p_ci(est, settings.confidence)
        ratio, ratio_lo, ratio_hi = math.exp(est.d), math.exp(lo), math.exp(hi)
        # the difference in the metric's unit, from the same estimate
        base = float(np.exp(np.log(mb).mean()))
        diff, diff_lo, diff_hi = base * (ratio - 1), base * (ratio_lo - 1), base * (ratio_hi - 1)
    else:  # a ratio to zero means nothing; the same test on the occasion means, difference only
        # the prior is of log-scale variances: it says nothing of these
        est = _estimate(mb, mc, mh, "occasion means", NO_PRIOR, floor)
        p, diff_lo, diff_hi = _t_p_ci(est, settings.confidence)
        diff = est.d
        ratio = ratio_lo = ratio_hi = math.nan
    return Comparison(
        key=dict(key or {}),
        better=better,
        n_baseline=len(b),
        n_candidate=len(c),
        occasions_baseline=len(ob),
        occasions_candidate=len(oc),
        mean_baseline=float(b.mean()),
        mean_candidate=float(c.mean()),
        sd_baseline=float(b.std(ddof=1)),
        sd_candidate=float(c.std(ddof=1)),
        median_baseline=float(np.median(b)),
        median_candidate=float(np.median(c)),
        diff=diff,
        diff_ci_low=diff_lo,
        diff_ci_high=diff_hi,
        ratio=ratio,
        ratio_ci_low=ratio_lo,
        ratio_ci_high=ratio_hi,
        p_value=p,
        df=est.df,
        method=est.method,
        reason=est.reason,
        history_occasions=sum(len(g) for g in groups),
        cliffs_delta=cliffs_delta(b, c),
        hl_shift=hodges_lehmann(b, c),
    )


def _history_groups(history) -> list[list[np.ndarray] | OccasionArrays]:
    """history as groups of occasions: [] | [occasion values…] | [[occasion values…], …] | an
    OccasionArrays (one group)."""
    if isinstance(history, OccasionArrays):
        return [history] if len(history) else []
    items = list(history)
    if not items:
        return []
    first = items[0]
    if len(first) and isinstance(first[0], (list, tuple, np.ndarray)):  # a list of groups
        return [as_occasions(g) for g in items if len(g)]
    return [as_occasions(items)]


def decide(comparisons: list[Comparison], settings: CompareSettings = CompareSettings()) -> list[Comparison]:
    """Holm-correct the p-values of one family of comparisons and set each verdict (in place).

    A withheld comparison is not part of the family (it has no p-value).
    """
    judged = [c for c in comparisons if not c.reason]
    for comp, p_adj in zip(judged, holm([c.p_value for c in judged])):
        comp.p_holm = p_adj
        comp.significant = p_adj < settings.alpha
    for comp in comparisons:
        if comp.reason:
            comp.verdict, comp.significant, comp.equivalent = WITHHELD, False, False
            comp.meaningful = not math.isnan(comp.change) and abs(comp.change) >= settings.min_change
            continue
        if math.isnan(comp.change):  # no ratio: judge the absolute difference by its sign only
            comp.meaningful = comp.diff != 0
            improvement = comp.diff if comp.better == "higher" else -comp.diff
        else:
            comp.meaningful = abs(comp.change) >= settings.min_change
            improvement = comp.improvement
        comp.equivalent = (
            not math.isnan(comp.ratio_ci_low)
            and comp.ratio_ci_low - 1 > -settings.min_change
            and comp.ratio_ci_high - 1 < settings.min_change
        )
        if comp.significant and comp.meaningful:
            comp.verdict = BETTER if improvement > 0 else WORSE
        else:
            comp.verdict = SAME
    return comparisons


def compare_many(
    groups: list[tuple], settings: CompareSettings = CompareSettings(), prior: Prior | None = None
) -> list[Comparison]:
    """Compare every (key, better, baseline, candidate[, history]) and Holm-correct them together.
    ``prior``: the day-to-day variance of cells like these; None fits it across this family, from
    each comparison's baseline and history (never a candidate: only what was known before it)."""
    if prior is None:
        prior = fit_prior(
            prior_cell(baseline, *_history_groups(history[0] if history else ()))
            for _key, _better, baseline, _candidate, *history in groups
        )
    out = []
    for key, better, baseline, candidate, *history in groups:
        out.append(compare_samples(baseline, candidate, better, settings, key, history[0] if history else (), prior))
    return decide(out, settings)


def prior_cell(*groups) -> list[dict]:
    """One cell's groups of log occasion means for fit_prior, each group a mapping (run, occasion)
    → values, an OccasionArrays, or a list of occasions (keyed then by group and place). Empty when
    a mean is not positive: the prior is of log-scale variances and does not apply."""
    out = []
    for g, group in enumerate(groups):
        if isinstance(group, dict):
            keys, group = list(group), [np.asarray(v, dtype=float) for v in group.values()]
        elif isinstance(group, OccasionArrays):
            keys = list(group)
        else:
            group = as_occasions(group)
            keys = [(g, i) for i in range(len(group))]
        means = occasion_means(group)
        if (means <= 0).any():
            return []
        if len(means):
            out.append(dict(zip(keys, np.log(means).tolist())))
    return out


def describe(comp: Comparison) -> str:
    """One line for humans: '+12.3% [+8.1%, +16.0%], p(Holm)=0.002 → worse'."""
    if comp.reason:
        shown = f"{comp.change:+.1%}" if not math.isnan(comp.change) else f"{comp.diff:+,.4g}"
        return f"{shown} → withheld: {comp.reason}"
    if math.isnan(comp.ratio):
        change = f"{comp.diff:+,.4g} [{comp.diff_ci_low:+,.4g}, {comp.diff_ci_high:+,.4g}]"
    else:
        change = f"{comp.change:+.1%} [{comp.ratio_ci_low - 1:+.1%}, {comp.ratio_ci_high - 1:+.1%}]"
    return f"{change}, p(Holm)={comp.p_holm:.3g} → {comp.verdict}"
