"""Change points and drift in the history of one cell (storage class × workload × metric).

The CronWorkflows collect one occasion mean per run; over weeks they make a series. This module
finds where the series moved (a step: an upgrade, a changed StorageClass) and whether it slides
slowly (a drift), and says which events fall where a step happened (``attribute``).

The method, on y = log(occasion mean) (a change is a ratio, and day-to-day noise is multiplicative):

1. **Candidates** — Pelt with a least-squares (l2) cost (ruptures' search: ``pelt_l2``): the
   segmentation into levels that minimises the squared residuals plus a penalty per change
   point. The penalty is ``penalty · σ̂² · log(n)`` with σ̂ the noise sd read robustly from the
   first differences (a step moves one difference, a bad day two; the median of them moves with
   neither).
2. **Significance** — by permutation, with the largest standardised difference of means over
   every split of a window as the statistic, so a p-value pays for having chosen the location,
   and it holds whatever the noise's distribution (bad days included): permuting exchangeable
   occasions is exact. First the whole series ("any change at all?", so a long flat series does
   not get several tries at ``alpha``), then each candidate on the window between its neighbours:
   the least significant candidate above ``alpha`` is dropped and its neighbours retested, until
   every change point left is significant.
3. **Drift, not a pile of steps** — a slow slide also makes significant steps. Each run of
   consecutive same-direction change points is weighed against one straight line over the
   segments it joins. If the line fits at least as well (with fewer parameters) as two or more
   steps, the steps are a drift and are removed. If the line fits within the run's penalty, or a
   single step is no better than the line, the data cannot tell: the change points stay, marked
   ``STEP_OR_DRIFT`` (a −10% drift over 30 occasions at 4% noise and a
   −7% step halfway are that close; the calibration prints how often each is marked).
4. **Drift verdict** — on the series with the clear steps' levels removed: Mann-Kendall
   (Kendall's tau against the occasion index) for the p-value, Theil-Sen for the slope and its
   95% interval; both rank-based, so a bad day can neither make nor hide a drift.

Sizes are ratios of the segments' geometric means (exp of the mean log), with a 95% interval
from the pooled within-segment sd on its degrees of freedom. The interval is conditional on the
location found: it ignores the choice of the location, so it is slightly narrower than an honest
post-selection interval (the calibration prints its coverage).

``pvbench_lab.changepoint_calibration`` measures false change points, detection, location and
drift classification on simulated histories; sdk/tests/test_changepoint_calibration.py asserts
the bars.
"""

from __future__ import annotations

import functools
import math
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

STEP = "step"
STEP_OR_DRIFT = "step or drift"  # a straight line fits the segments it joins almost as well

# The sd of a normal sample is its MAD / 0.6745; the first differences of iid noise have sd √2·σ.
_MAD_TO_SD = 1 / (0.6744897501960817 * math.sqrt(2))


@dataclass(frozen=True)
class Occasion:
    """One point of a history: when it ran and its mean (> 0), optionally the occasion's own 95%
    interval and number of repetitions (they set a floor under the day-to-day noise: a series
    cannot be steadier than its occasions' repetitions say)."""

    time: Any
    mean: float
    ci95: tuple[float, float] | None = None
    n: int | None = None


@dataclass(frozen=True)
class ChangePoint:
    index: int  # the first occasion at the new level
    time: Any  # that occasion's time
    time_before: Any  # the last occasion at the old level: the change happened in (time_before, time]
    occasions_before: int  # occasions in the segment before (back to the previous change point)
    occasions_after: int
    mean_before: float  # geometric mean of the segment before
    mean_after: float
    change_pct: float  # 100 · (mean_after / mean_before − 1)
    change_pct_ci95: tuple[float, float]
    p_value: float  # permutation p of "a change somewhere between the neighbouring change points"
    kind: str  # STEP, or STEP_OR_DRIFT: a straight line over its segments fits almost as well


@dataclass(frozen=True)
class Drift:
    slope_pct_per_occasion: float  # Theil-Sen, after removing the clear steps' levels
    slope_pct_ci95: tuple[float, float]
    p_value: float  # Mann-Kendall
    drifting: bool  # p_value < drift_alpha
    steps_explained: int  # candidate steps the drift replaced (same direction, better fit as a line)


@dataclass(frozen=True)
class History:
    occasions: int
    noise_sd_log: float  # σ̂: the robust day-to-day sd of log occasion means
    change_points: tuple[ChangePoint, ...]
    drift: Drift | None  # None below 4 occasions


def detect_changes(points: Sequence[Occasion | tuple], **options: Any) -> History:
    """Change points and the drift verdict of one series of occasion means, in time order:
    detect_changes_many of one series (``options``: its keywords, the calibrated defaults)."""
    return detect_changes_many([points], **options)[0]


def detect_changes_many(
    series: Sequence[Sequence[Occasion | tuple]],
    *,
    alpha: float = 0.05,
    drift_alpha: float = 0.05,
    penalty: float = 2.0,
    min_size: int = 3,
    permutations: int = 999,
    seed: int = 0,
) -> list[History]:
    """Change points and the drift verdict of each series of occasion means (each in time order),
    each series' History what it is judged alone.

    A series' points: ``Occasion``s or ``(time, mean)`` / ``(time, mean, ci95)`` / ``(time, mean,
    ci95, n)`` tuples. ``alpha``: the permutation test's level for keeping a change point.
    ``min_size``: the fewest occasions a level needs (a step at the very end is found once
    ``min_size`` occasions follow it). ``seed``: the permutations' seed, so the same series always
    gives the same answer.

    Pelt's segmentation is computed for all the series of one length at once (pelt_l2_many): a
    campaign's history judges hundreds of series of one length in every aggregation, and one by
    one Pelt's NumPy calls for each end were half of a series with a step (~1.4 ms of ~2.7 ms at
    112 occasions; pvbench_lab.bench_history)."""
    judging = [_Judging.of(points) for points in series]
    # A gate on the whole series first: each candidate's own test has level alpha, and a long
    # flat series offers Pelt several candidates; testing "any change at all?" once keeps the
    # false change points of a flat series to about alpha per series. A series the gate finds
    # flat is not segmented at all (ruptures' Pelt, pure Python, was ~0.1 s of a 100-occasion
    # series, most of a history's time), and its permutations stop once they show it flat; the
    # answer is the same as segmenting it first and drawing them all: the gate draws the first
    # permutations either way, and no later step draws any when it finds the series flat.
    # Each window's p, once: the test of a change point depends on its window only (the change
    # points either side), and pruning retests the candidates whose neighbours stayed; a series
    # with one change point has the whole series as its window, the gate's own test.
    segmented: dict[int, list[tuple[_Judging, float]]] = {}
    for j in judging:
        if j.n >= 2 * min_size:
            j.rng = np.random.default_rng(seed)
            gate = _split_pvalue(j.y, min_size, permutations, j.rng, stop_above=alpha)
            if gate <= alpha:  # (above: possibly stopped early, not a p to keep)
                segmented.setdefault(j.n, []).append((j, gate))
    for n, group in segmented.items():
        pens = [penalty * j.noise**2 * math.log(n) for j, _ in group]
        for (j, gate), ends in zip(group, pelt_l2_many(np.stack([j.y for j, _ in group]), pens, min_size)):
            j.tested[(0, n)] = gate  # every permutation drawn: the window's full test
            j.bounds = [0, *ends]
    return [j.history(alpha, drift_alpha, penalty, min_size, permutations) for j in judging]


@dataclass
class _Judging:
    """One series on its way through detect_changes_many: its log means and noise, then the
    boundaries its gate and Pelt leave, the windows tested and the generator they draw from."""

    occasions: list[Occasion]
    y: np.ndarray  # the log occasion means
    n: int
    own_se: float = 0.0
    noise: float = 0.0
    bounds: list[int] = field(default_factory=list)
    tested: dict[tuple[int, int], float] = field(default_factory=dict)
    rng: np.random.Generator | None = None  # None: nothing drawn (no window tested yet)

    @classmethod
    def of(cls, points: Sequence[Occasion | tuple]) -> _Judging:
        occasions = [p if isinstance(p, Occasion) else Occasion(*p) for p in points]
        means = np.array([o.mean for o in occasions], dtype=float)
        if not np.all(np.isfinite(means) & (means > 0)):
            raise ValueError("occasion means must be finite and > 0 (changes are measured as ratios)")
        judging = cls(occasions, np.log(means), len(means))
        if judging.n >= 2:
            judging.bounds = [0, judging.n]  # no change point, unless the gate and Pelt find one
            judging.own_se = _own_se(occasions)
            judging.noise = max(_robust_sd(judging.y), judging.own_se, 1e-12)
        return judging

    def history(self, alpha: float, drift_alpha: float, penalty: float, min_size: int, permutations: int) -> History:
        """The series' History from its candidate boundaries: pruned to the significant ones,
        steps a line fits told from a drift, each change point sized."""
        y, n, occasions = self.y, self.n, self.occasions
        if n < 2:
            return History(n, 0.0, (), None)
        rng, tested = self.rng, self.tested
        bounds, p_values = _prune(y, self.bounds, alpha, min_size, permutations, rng, tested)
        bounds, ambiguous, explained = _merge_drifts(y, bounds, self.noise, penalty)
        if explained:  # the levels around the removed steps changed: retest what is left
            bounds, p_values = _prune(y, bounds, alpha, min_size, permutations, rng, tested)
        # the drift is judged with only the clear steps' levels removed: removing an ambiguous
        # step's levels would flatten the very drift it may be part of
        clear_steps = [b for b in bounds if b not in ambiguous]

        sd, df = _pooled_sd(y, bounds, self.own_se)
        t = _t_quantile(df)
        change_points = []
        for left, b, right in zip(bounds, bounds[1:-1], bounds[2:]):
            before, after = y[left:b], y[b:right]
            d = after.mean() - before.mean()
            se = sd * math.sqrt(1 / len(before) + 1 / len(after))
            change_points.append(
                ChangePoint(
                    index=b,
                    time=occasions[b].time,
                    time_before=occasions[b - 1].time,
                    occasions_before=len(before),
                    occasions_after=len(after),
                    mean_before=float(np.exp(before.mean())),
                    mean_after=float(np.exp(after.mean())),
                    change_pct=100 * math.expm1(d),
                    change_pct_ci95=(100 * math.expm1(d - t * se), 100 * math.expm1(d + t * se)),
                    p_value=p_values[b],
                    kind=STEP_OR_DRIFT if b in ambiguous else STEP,
                )
            )
        return History(n, self.noise, tuple(change_points), _drift(y, clear_steps, drift_alpha, explained))


def attribute(change_point: ChangePoint, events: Iterable[tuple[Any, str]]) -> tuple[tuple[Any, str], ...]:
    """The events that can explain a change point: those after its last occasion at the old level
    and no later than its first occasion at the new one, in time order. Empty: attributed to none.

    An event at the same time as the first new occasion counts (the run may have started right
    after the rollout); one at the time of the last old occasion does not (that run measured the
    old state)."""
    inside = [(when, label) for when, label in events if change_point.time_before < when <= change_point.time]
    return tuple(sorted(inside, key=lambda e: e[0]))


# ------------------------------------------------------------------ the steps


def _robust_sd(y: np.ndarray) -> float:
    """Day-to-day sd of log means from the MAD of the first differences: a step moves one of
    them, a bad day two, and the median moves with neither."""
    if len(y) < 3:
        return 0.0
    differences = np.diff(y)
    return float(np.median(np.abs(differences - np.median(differences))) * _MAD_TO_SD)


def _own_se(occasions: list[Occasion]) -> float:
    """Root mean square of the occasions' own standard errors (log scale), 0 when none is given."""
    own = [_log_se(o) for o in occasions if o.ci95 is not None]
    return math.sqrt(float(np.mean(np.square(own)))) if own else 0.0


def _log_se(o: Occasion) -> float:
    low, high = o.ci95
    if low <= 0:  # an interval reaching 0 says little: use its upper half
        return math.log(high / o.mean) / 1.96
    q = _t_quantile(o.n - 1) if o.n and o.n > 1 else 1.96
    return math.log(high / low) / (2 * q)


def pelt_l2(signal: np.ndarray, pen: float, min_size: int) -> list[int]:
    """The breakpoints ruptures' ``Pelt(model="l2", min_size=min_size, jump=1).fit(signal).predict(pen)``
    returns (the ends of the segments, n last), found as it finds them
    (sdk/tests/test_stats_changepoints.py compares the two, ruptures==1.1.10): pelt_l2_many of one."""
    return pelt_l2_many(np.asarray(signal, dtype=float).ravel()[None, :], [pen], min_size)[0]


def pelt_l2_many(signals: np.ndarray, pens: Sequence[float], min_size: int) -> list[list[int]]:
    """pelt_l2 of each row of ``signals`` (series of one length), each with its own penalty.

    ruptures' Pelt is pure Python: for every end it copies and sums a dict per admissible start,
    and its l2 cost takes the variance of each slice. A flat stretch prunes few starts, so a
    series of n occasions costs ~n²/2 of them: 0.18 s at 100 occasions, 3.2 s at 365 (a year of
    nightly runs), in every aggregation for every series whose gate finds a change. Here a
    segment's cost comes from running sums (O(1) a segment) and each end's starts are weighed at
    once with NumPy, for every row together (a start a row has pruned, or not yet admitted, weighs
    inf there), in ruptures' order and arithmetic: the cost plus the penalty added to the best
    partition's sum up to the start (its dict's sum, left to right), the first minimum taken, the
    starts pruned as ruptures prunes them. Not ruptures itself: importing it imports
    ``scipy.stats`` (~1 s of CPU in every aggregation that segments a series)."""
    signals = np.asarray(signals, dtype=float)
    rows, n = signals.shape
    m = max(int(min_size), 1)
    if m > n:  # ruptures' sanity check: no segment of min_size fits
        raise ValueError(f"no segmentation of {n} points into segments of at least {m}")
    pen = np.asarray(pens, dtype=float)[:, None]
    centred = signals - signals.mean(axis=1, keepdims=True)  # running sums of small numbers: no cancellation
    zero = np.zeros((rows, 1))
    sums = np.concatenate((zero, np.cumsum(centred, axis=1)), axis=1)
    squares = np.concatenate((zero, np.cumsum(centred * centred, axis=1)), axis=1)

    best = np.zeros((rows, n + 1))  # the best partition's cost of signal[0:t]
    previous = np.zeros((rows, n + 1), dtype=np.intp)  # its last segment's start
    admissible = np.zeros((rows, n + 1), dtype=bool)
    every = np.arange(rows)
    for end in [*range(m, n), n]:
        # ruptures adds end − m, and drops it again at once when 0 < end − m < m: no partition
        # of signal[0:end − m] exists
        last = end - m
        if last == 0 or last >= m:
            admissible[:, last] = True
        starts = np.arange(last + 1)
        # a segment's squared deviations from its mean: one end, every start up to the last
        total = sums[:, end : end + 1] - sums[:, : last + 1]
        error = squares[:, end : end + 1] - squares[:, : last + 1] - total * total / (end - starts)
        candidates = best[:, : last + 1] + (error + pen)
        candidates[~admissible[:, : last + 1]] = np.inf
        i = np.argmin(candidates, axis=1)
        best[:, end], previous[:, end] = candidates[every, i], i
        admissible[:, : last + 1] &= candidates <= best[:, end : end + 1] + pen
    found = []
    for row in range(rows):
        ends, end = [], n
        while end > 0:
            ends.append(end)
            end = int(previous[row, end])
        found.append(sorted(ends))
    return found


def _max_split_statistic(windows: np.ndarray, min_size: int) -> np.ndarray:
    """Per row: the largest |mean(w[k:]) − mean(w[:k])| · √(k(m−k)/m) over the splits k that leave
    min_size on each side. Permutations keep the window's sd, so it needs no scale."""
    # |mean(w[k:]) − mean(w[:k])| · √(k(m−k)/m) = |k·total − m·Σw[:k]| / √(m·k·(m−k)): the prefix
    # sums of the columns a split uses, then in place (every permutation of every test is here)
    m = windows.shape[-1]
    k = np.arange(min_size, m - min_size + 1)
    before_sum = np.cumsum(windows[..., : m - min_size], axis=-1)[..., min_size - 1 :]
    total = windows.sum(axis=-1, keepdims=True)
    spread = k * total - m * before_sum
    np.abs(spread, out=spread)
    spread *= 1 / np.sqrt(m * k * (m - k))
    return spread.max(axis=-1)


# Permutations drawn at a time where a test may stop early (_split_pvalue's stop_above): drawn in
# parts, they are the same permutations as drawn at once, and leave the generator in the same state.
_PERMUTATIONS_AT_A_TIME = 100


def _split_pvalue(window: np.ndarray, min_size: int, permutations: int, rng, stop_above: float | None = None) -> float:
    """Permutation p of "the window's level changes somewhere" (the max-split statistic).

    ``stop_above``: stop drawing as soon as p is sure to be above it (enough permutations already
    exceed) and return the p of those drawn, a lower bound that is above it too. For a caller that
    only asks "above or not?" and draws nothing after a yes (the whole series' gate): a flat
    series, most of them, costs a tenth of the permutations."""
    observed = _max_split_statistic(window[None, :], min_size)[0]
    step = permutations if stop_above is None else _PERMUTATIONS_AT_A_TIME
    exceed = drawn = 0
    while drawn < permutations:
        size = min(step, permutations - drawn)
        shuffled = np.take(window, permutation_orders(rng, size, len(window)))
        exceed += int(np.sum(_max_split_statistic(shuffled, min_size) >= observed * (1 - 1e-12)))
        drawn += size
        if stop_above is not None and (1 + exceed) / (1 + permutations) > stop_above:
            break
    return (1 + exceed) / (1 + permutations)


class PermutationOrders:
    """The column orders ``rng.permuted(np.tile(w, (size, 1)), axis=1)`` puts any w of length m
    in, for a generator in a given state, and its state after: every series' judging starts
    from the same seed, so its gate (and often its tests after) draw the permutations another
    series of its length drew already. Kept (least recently used out, within ``max_bytes``; 0:
    none kept), they are taken instead of drawn again, the generator set to the state drawing
    them leaves: the same permutations, the same p-values, a tenth of the time of shuffling."""

    def __init__(self, max_bytes: int = 64 << 20) -> None:
        self.max_bytes = max_bytes
        self.kept: dict[tuple, tuple[np.ndarray, dict]] = {}  # insertion order: least recent first
        self.bytes = 0
        self.lock = threading.Lock()  # judged in a thread beside the models, maybe in two

    def __call__(self, rng: np.random.Generator, size: int, m: int) -> np.ndarray:
        state = rng.bit_generator.state
        key = (repr(state), size, m)
        with self.lock:
            found = self.kept.pop(key, None)
            if found is not None:
                self.kept[key] = found
        if found is not None:
            rng.bit_generator.state = found[1]
            return found[0]
        orders = rng.permuted(np.tile(np.arange(m, dtype=np.intp), (size, 1)), axis=1)
        orders.flags.writeable = False  # shared by every test that takes it
        with self.lock:
            replaced = self.kept.pop(key, None)  # another thread drew it meanwhile
            self.bytes += orders.nbytes - (replaced[0].nbytes if replaced else 0)
            self.kept[key] = (orders, rng.bit_generator.state)
            while self.bytes > self.max_bytes and self.kept:
                self.bytes -= self.kept.pop(next(iter(self.kept)))[0].nbytes
        return orders

    def clear(self) -> None:
        with self.lock:
            self.kept.clear()
            self.bytes = 0


# the process's (pvbench_lab.bench_history sets its max_bytes to 0 to time drawing every one)
permutation_orders = PermutationOrders()


def _window_pvalue(y, bounds, b, min_size, permutations, rng, tested: dict) -> float:
    """The change point b's p: its window runs from the change point before to the one after
    (each window tested once: ``tested``)."""
    i = bounds.index(b)
    window = (bounds[i - 1], bounds[i + 1])
    if window not in tested:
        tested[window] = _split_pvalue(y[window[0] : window[1]], min_size, permutations, rng)
    return tested[window]


def _prune(y, bounds, alpha, min_size, permutations, rng, tested: dict) -> tuple[list[int], dict[int, float]]:
    """Drop the least significant candidate until all left have p ≤ alpha; p-values of the kept."""
    bounds = list(bounds)
    while len(bounds) > 2:
        p = {b: _window_pvalue(y, bounds, b, min_size, permutations, rng, tested) for b in bounds[1:-1]}
        worst = max(p, key=p.get)
        if p[worst] <= alpha:
            return bounds, p
        bounds.remove(worst)
    return bounds, {}


def _pooled_sd(y: np.ndarray, bounds: list[int], floor: float) -> tuple[float, float]:
    """sd of log means around their segment means, pooled over segments, on n − segments df;
    never below the occasions' own standard error."""
    rss = sum(_rss_flat(y[a:b]) for a, b in zip(bounds, bounds[1:]))
    df = len(y) - (len(bounds) - 1)
    if df < 1:
        return floor, 1.0
    return max(math.sqrt(rss / df), floor), float(df)


# ------------------------------------------------------------------ the drift


def _rss_flat(segment: np.ndarray) -> float:
    return float(np.sum((segment - segment.mean()) ** 2))


def _rss_line(segment: np.ndarray) -> float:
    x = np.arange(len(segment), dtype=float)
    slope, intercept = np.polyfit(x, segment, 1)
    return float(np.sum((segment - (intercept + slope * x)) ** 2))


def _merge_drifts(y, bounds, noise, penalty) -> tuple[list[int], set[int], int]:
    """Weigh each run of same-direction change points against one straight line over the segments
    it joins. ΔRSS = RSS_line − RSS_steps: ≤ 0 for two or more steps, the line fits at least as
    well with fewer parameters: the steps are a drift (removed). Within the run's penalty (k
    change points' worth), and for a single step even when the line fits better (10 occasions
    cannot tell a step with a bad day at one end from a line), the data cannot tell a step from
    a drift: kept, flagged ambiguous. Beyond: steps."""
    # ΔRSS varies with the actual variance, which heavy tails make larger than the robust σ̂
    # says: the scale here is the larger of the two
    scale2 = max(noise**2, _pooled_sd(y, bounds, 0.0)[0] ** 2)
    pen = penalty * scale2 * math.log(len(y))
    levels = [y[a:b].mean() for a, b in zip(bounds, bounds[1:])]
    signs = [np.sign(after - before) for before, after in zip(levels, levels[1:])]
    keep, ambiguous, explained, i = [0], set(), 0, 0
    while i < len(signs):
        j = i
        while j + 1 < len(signs) and signs[j + 1] == signs[i]:
            j += 1
        run = bounds[i + 1 : j + 2]  # change points i..j, joining segments i..j+1
        start, end = bounds[i], bounds[j + 2]
        steps = sum(_rss_flat(y[a:b]) for a, b in zip([start, *run], [*run, end]))
        excess = _rss_line(y[start:end]) - steps
        if excess <= 0 and len(run) > 1:  # a pile of steps a line fits as well: a drift
            explained += len(run)
        else:
            keep += run
            if excess <= len(run) * pen:
                ambiguous.update(run)
        i = j + 1
    return [*keep, len(y)], ambiguous, explained


def _drift(y: np.ndarray, bounds: list[int], drift_alpha: float, explained: int) -> Drift | None:
    if len(y) < 4:
        return None
    residual = np.concatenate([y[a:b] - y[a:b].mean() for a, b in zip(bounds, bounds[1:])])
    slope, low, high = _theil_sen(residual)
    p = _mann_kendall_p(residual)
    p = p if np.isfinite(p) else 1.0
    return Drift(
        slope_pct_per_occasion=100 * math.expm1(slope),
        slope_pct_ci95=(100 * math.expm1(low), 100 * math.expm1(high)),
        p_value=p,
        drifting=p < drift_alpha,
        steps_explained=explained,
    )


# Mann-Kendall and Theil-Sen against the occasion index, as scipy.stats.kendalltau (method 'auto',
# two-sided) and scipy.stats.theilslopes (alpha 0.95) compute them, step for step, so the numbers
# are theirs (sdk/tests/test_stats_changepoints.py compares them): importing scipy.stats (its ~100
# distributions) cost ~0.7 s of CPU in every aggregation that judges a history, more than judging
# every series of a 100,000-result campaign; scipy.special is imported there already.


def _mann_kendall_p(y: np.ndarray) -> float:
    """Two-sided p of Kendall's tau between 0, 1, …, n − 1 and ``y`` (NaN if y is constant)."""
    from scipy import special

    n = len(y)
    ranks = np.unique(y, return_inverse=True)[1].astype(np.intp) + 1  # dense ranks; the index has no ties
    dis = int(np.count_nonzero(np.triu(ranks[:, None] > ranks[None, :], 1)))  # discordant pairs
    counts = np.bincount(ranks).astype(np.int64)
    counts = counts[counts > 1]
    ytie = int((counts * (counts - 1) // 2).sum())
    y1 = int((counts * (counts - 1.0) * (2 * counts + 5)).sum())
    tot = n * (n - 1) // 2
    if ytie == tot:
        return math.nan
    if ytie == 0 and (n <= 33 or min(dis, tot - dis) <= 1):
        return _kendall_p_exact(n, tot - dis)
    m = n * (n - 1.0)
    var = (m * (2 * n + 5) - y1) / 18  # scipy's terms for ties in x are 0: the index has none
    z = (tot - ytie - 2 * dis) / np.sqrt(var)
    return float(2 * special.ndtr(-abs(z)))


def _kendall_p_exact(n: int, c: int) -> float:
    """The exact two-sided p of c concordant pairs among n untied values (Kendall 1970)."""
    c = int(min(c, (n * (n - 1)) // 2 - c))
    if n <= 2:
        prob = 1.0
    elif c == 0:
        prob = 2.0 / math.factorial(n) if n < 171 else 0.0
    elif c == 1:
        prob = 2.0 / math.factorial(n - 1) if n < 172 else 0.0
    elif 4 * c == n * (n - 1):
        prob = 1.0
    elif n < 171:
        new = np.zeros(c + 1)
        new[0:2] = 1.0
        for j in range(3, n + 1):
            new = np.cumsum(new)
            if j <= c:
                new[j:] -= new[: c + 1 - j]
        prob = 2.0 * np.sum(new) / math.factorial(n)
    else:
        new = np.zeros(c + 1)
        new[0:2] = 1.0
        for j in range(3, n + 1):
            new = np.cumsum(new) / j
            if j <= c:
                new[j:] -= new[: c + 1 - j]
        prob = np.sum(new)
    return float(np.clip(prob, 0, 1))


def _theil_sen(y: np.ndarray) -> tuple[float, float, float]:
    """Theil-Sen slope of ``y`` against 0, 1, …, n − 1, with its 95% interval (Sen 1968)."""
    from scipy import special

    x = np.arange(len(y), dtype=float)
    deltax = x[:, np.newaxis] - x
    deltay = y[:, np.newaxis] - y
    slopes = deltay[deltax > 0] / deltax[deltax > 0]
    slopes.sort()
    slope = np.median(slopes)
    z = special.ndtri((1.0 - 0.95) / 2.0)  # as theilslopes gets its alpha: 1 − 0.95, not 0.05
    ny = len(y)
    repeats = np.unique(y, return_counts=True)[1]
    sigsq = (
        1
        / 18.0
        * (ny * (ny - 1) * (2 * ny + 5) - sum(int(k) * (int(k) - 1) * (2 * int(k) + 5) for k in repeats if k > 1))
    )
    nt = len(slopes)
    sigma = np.sqrt(sigsq)
    high = min(int(np.round((nt - z * sigma) / 2.0)), nt - 1)
    low = max(int(np.round((nt + z * sigma) / 2.0)) - 1, 0)
    return float(slope), float(slopes[low]), float(slopes[high])


@functools.lru_cache(maxsize=1024)  # a history's occasions mostly share their repetitions' df
def _t_quantile(df: float) -> float:
    from scipy import special

    return float(special.stdtrit(df, 0.975))
