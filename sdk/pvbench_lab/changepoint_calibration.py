"""What the change points of a history promise, measured: pvbench.stats.changepoints on simulated
histories with a known truth.

A history is a series of occasion means; its day-to-day noise is multiplicative with a log-scale
sd of ``sd`` (4% by default: the median over the thesis's 40 cells, examples/thesis-azure-runs.csv,
is 4.3%). Three kinds of noise:

* normal;
* bad days, t3: Student's t on 3 df scaled to the same sd (rare days far off, as the upgrade
  gate's calibration in pvbench_lab.calibration draws them);
* bad days, 5% slow: normal, but 5% of the occasions are 2–3 sd slow.

Bars (asserted by sdk/tests/test_changepoint_calibration.py):

(a) flat series of 100 occasions: at most 1 false change point per 100 occasions;
(b) a −15% step with 5 + 5 and 10 + 10 occasions: found within ±1 occasion ≥ 90% of the time;
(c) a −10% linear drift over 30 occasions: reported as a drift with no clear step ≥ 80% of the
    time (a change point marked "step or drift" may stand beside it: at 4% noise such a drift and
    a −7% step halfway are hard to tell apart, and the result says so rather than guess).

    .venv/bin/python -m pvbench_lab.changepoint_calibration            # ~35 s of CPU
    .venv/bin/python -m pvbench_lab.changepoint_calibration --quick    # the test's, ~7 s of CPU
"""

from __future__ import annotations

import argparse
import inspect
import math
import sys
import time

import numpy as np

from pvbench.stats.changepoints import STEP as CLEAR_STEP
from pvbench.stats.changepoints import detect_changes, detect_changes_many

NOISES = ("normal", "bad days, t3", "bad days, 5% slow")
STEP = -0.15
DRIFT = -0.10
DRIFT_OCCASIONS = 30
FLAT_OCCASIONS = 100
QUICK_TRIALS = 200  # --quick, and the test: ~7 s of CPU


def noise(rng: np.random.Generator, kind: str, n: int, sd: float) -> np.ndarray:
    """Log-scale day-to-day noise of n occasion means."""
    if kind == "normal":
        return rng.normal(0, sd, n)
    if kind == "bad days, t3":
        return sd * rng.standard_t(3, n) / math.sqrt(3)  # t3 has variance 3
    if kind == "bad days, 5% slow":
        slow = rng.random(n) < 0.05
        return np.where(slow, -sd * rng.uniform(2, 3, n), rng.normal(0, sd, n))
    raise ValueError(kind)


def _history(log_level: np.ndarray, rng: np.random.Generator, kind: str, sd: float) -> list[tuple[int, float]]:
    values = 1000.0 * np.exp(log_level + noise(rng, kind, len(log_level), sd))
    return list(enumerate(values.tolist()))


def flat_rows(trials: int, sd: float, seed: int, **options) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for kind in NOISES:
        false_points = series_with_any = drifts = 0
        for trial in range(trials):
            result = detect_changes(_history(np.zeros(FLAT_OCCASIONS), rng, kind, sd), seed=trial, **options)
            false_points += len(result.change_points)
            series_with_any += bool(result.change_points)
            drifts += result.drift.drifting
        case = f"flat, {FLAT_OCCASIONS} occasions, {kind}"
        rows += [
            _row(
                "(a)",
                case,
                "false change points per 100 occasions",
                100 * false_points / (trials * FLAT_OCCASIONS),
                "≤ 1",
                trials,
            ),
            _row("", case, "series with any false change point", series_with_any / trials, "reported", trials),
            _row("", case, "series called drifting (false drift)", drifts / trials, "reported", trials),
        ]
    return rows


def step_rows(trials: int, sd: float, seed: int, sides: tuple[int, ...] = (5, 10), **options) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for side in sides:
        level = np.r_[np.zeros(side), np.full(side, math.log1p(STEP))]
        for kind in NOISES:
            found = exact = clear = extra = covered = as_drift = 0
            for trial in range(trials):
                result = detect_changes(_history(level, rng, kind, sd), seed=trial, **options)
                near = [c for c in result.change_points if abs(c.index - side) <= 1]
                found += bool(near)
                exact += any(c.index == side for c in near)
                clear += any(c.kind == CLEAR_STEP for c in near)
                extra += len(result.change_points) - min(1, len(near))
                if near:
                    low, high = near[0].change_pct_ci95
                    covered += low <= 100 * STEP <= high
                as_drift += result.drift.drifting and not result.change_points
            case = f"{STEP:+.0%} step, {side} + {side} occasions, {kind}"
            rows += [
                _row("(b)", case, "found within ±1 occasion", found / trials, "≥ 90%", trials),
                _row("", case, "found at the exact occasion", exact / trials, "reported", trials),
                _row(
                    "", case, "found and called a clear step (not 'step or drift')", clear / trials, "reported", trials
                ),
                _row(
                    "",
                    case,
                    "95% CI of the change covers the truth (when found)",
                    covered / max(found, 1),
                    "reported",
                    found,
                ),
                _row("", case, "other (false) change points per series", extra / trials, "reported", trials),
                _row("", case, "called a drift instead", as_drift / trials, "reported", trials),
            ]
    return rows


def drift_rows(trials: int, sd: float, seed: int, **options) -> list[dict]:
    rng = np.random.default_rng(seed)
    level = np.linspace(0, math.log1p(DRIFT), DRIFT_OCCASIONS)
    true_slope = 100 * math.expm1(math.log1p(DRIFT) / (DRIFT_OCCASIONS - 1))
    rows = []
    for kind in NOISES:
        as_drift = with_steps = ambiguous = covered = 0
        for trial in range(trials):
            result = detect_changes(_history(level, rng, kind, sd), seed=trial, **options)
            clear_steps = [c for c in result.change_points if c.kind == CLEAR_STEP]
            as_drift += result.drift.drifting and not clear_steps
            with_steps += bool(clear_steps)
            ambiguous += len(result.change_points) > len(clear_steps)
            low, high = result.drift.slope_pct_ci95
            covered += low <= true_slope <= high
        case = f"{DRIFT:+.0%} linear drift over {DRIFT_OCCASIONS} occasions, {kind}"
        rows += [
            _row("(c)", case, "reported as a drift, no clear step", as_drift / trials, "≥ 80%", trials),
            _row("", case, "reported with clear steps", with_steps / trials, "reported", trials),
            _row("", case, "with a change point flagged 'step or drift'", ambiguous / trials, "reported", trials),
            _row("", case, "95% CI of the slope covers the truth", covered / trials, "reported", trials),
        ]
    return rows


def _row(bar: str, case: str, measure: str, value: float, bound: str, trials: int) -> dict:
    return {"bar": bar, "case": case, "measure": measure, "value": value, "bound": bound, "trials": trials}


def calibration_rows(trials: int, sd: float = 0.04, seed: int = 1) -> list[dict]:
    """Every row; flat series are 100 occasions each, so they get a fifth of the trials."""
    return (
        flat_rows(max(20, trials // 5), sd, seed) + step_rows(trials, sd, seed + 1) + drift_rows(trials, sd, seed + 2)
    )


def format_table(rows: list[dict]) -> str:
    lines = ["| bar | case | measure | value | bound | trials |", "|---|---|---|---|---|---|"]
    for r in rows:
        value = f"{r['value']:.2f}" if "per " in r["measure"] else f"{r['value']:.1%}"
        lines.append(f"| {r['bar']} | {r['case']} | {r['measure']} | {value} | {r['bound']} | {r['trials']} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=1000, help="simulated histories per step and drift row")
    ap.add_argument("--quick", action="store_true", help=f"{QUICK_TRIALS} trials: the test's run")
    ap.add_argument("--sd", type=float, default=0.04, help="log-scale day-to-day sd of occasion means")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    trials = QUICK_TRIALS if args.quick else args.trials
    defaults = inspect.signature(detect_changes_many).parameters
    started = time.process_time()
    rows = calibration_rows(trials, args.sd, args.seed)
    print(format_table(rows))
    print(
        f"\n(day-to-day sd {args.sd:.0%} on the log scale, α = {defaults['alpha'].default} for change points, "
        f"{defaults['drift_alpha'].default} for drift, {defaults['permutations'].default} permutations, "
        f"seed {args.seed}; {time.process_time() - started:.0f} s of CPU)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
