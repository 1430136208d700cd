#!/usr/bin/env python3
"""How many runs does the adaptive-repetition rule need, against the thesis's fixed 20?

Resamples the raw per-run values of the thesis (examples/thesis-azure-runs.csv:
4 storage solutions × 10 metrics = 40 cells, 20 runs each = 800 runs) and replays the rule of
pvbench.stats.adaptive on them: draw runs one at a time, stop when the 95% CI half-width of the
mean is within the target (relative to the mean) and at least min runs were made, or at the cap.

Three questions, each answered over many simulated campaigns:

1. Same guarantee: the fixed design's worst cell had a CI of ±H. Asking every cell for ±H,
   how many runs does the adaptive rule spend in total?
2. The default target (±5%): how many runs, and how many cells reach it, versus fixed 20?
3. Matched per cell: each cell asks for exactly the precision its 20 runs gave.

And an honesty check: stopping as soon as the CI looks narrow ("optional stopping") makes CIs
too optimistic; the coverage column says how often the CI at stopping contains the cell's
full 20-run mean.

    .venv/bin/python ci/adaptive_resample.py                  # the figures in docs/statistics.md
    .venv/bin/python ci/adaptive_resample.py --scheme iid     # draw from all 20 runs, ignoring occasions
    .venv/bin/python ci/adaptive_resample.py --min 3          # why min_repetitions defaults to 5
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy import stats

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CSV = REPO / "examples" / "thesis-azure-runs.csv"


def load_cells(path: Path) -> dict[tuple[str, str], dict[str, list[float]]]:
    """(solution, metric) → occasion → values, in run order."""
    cells: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            cells[(row["solution"], row["metric"])][row["occasion"]].append(float(row["value"]))
    return cells


def half_width(values: np.ndarray) -> float:
    n = len(values)
    return float(stats.t.ppf(0.975, n - 1) * values.std(ddof=1) / np.sqrt(n) / abs(values.mean()))


def draws(by_occasion: dict[str, list[float]], sims: int, cap: int, scheme: str,
          rng: np.random.Generator) -> np.ndarray:
    """(sims, cap) values drawn with replacement: i.i.d. from all runs, or round-robin over occasions."""
    if scheme == "iid":
        pool = np.array([v for vs in by_occasion.values() for v in vs])
        return pool[rng.integers(0, len(pool), size=(sims, cap))]
    occasions = [np.array(vs) for _, vs in sorted(by_occasion.items())]
    start = rng.integers(0, len(occasions), size=sims)  # which occasion a campaign starts on
    out = np.empty((sims, cap))
    for j in range(cap):
        which = (start + j) % len(occasions)
        for k, occ in enumerate(occasions):
            rows = which == k
            out[rows, j] = occ[rng.integers(0, len(occ), size=rows.sum())]
    return out


def replay(x: np.ndarray, target: np.ndarray | float, min_n: int, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """Stop index (runs used) and the CI half-width (relative) at stopping, per simulated campaign."""
    n = np.arange(1, cap + 1)
    csum, csq = np.cumsum(x, axis=1), np.cumsum(x * x, axis=1)
    mean = csum / n
    var = np.where(n > 1, (csq - n * mean * mean) / np.maximum(n - 1, 1), np.inf)
    t = np.where(n > 1, stats.t.ppf(0.975, np.maximum(n - 1, 1)), np.inf)
    hw = t * np.sqrt(np.maximum(var, 0)) / np.sqrt(n) / np.abs(mean)
    target = np.broadcast_to(np.asarray(target, dtype=float).reshape(-1, 1) if np.ndim(target) else target, hw.shape)
    ok = (hw <= target) & (n >= min_n)
    ok[:, -1] = True  # the cap
    stop = ok.argmax(axis=1)
    rows = np.arange(len(x))
    return stop + 1, hw[rows, stop], mean[rows, stop]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", type=Path, default=DEFAULT_CSV)
    ap.add_argument("--target", type=float, default=0.05, help="default target half-width (question 2)")
    ap.add_argument("--min", type=int, default=5, dest="min_n", help="min_repetitions")
    ap.add_argument("--cap", type=int, default=20, help="max_repetitions (the thesis's 20 by default)")
    ap.add_argument("--sims", type=int, default=4000, help="simulated campaigns per cell")
    ap.add_argument("--scheme", choices=("iid", "occasions"), default="occasions",
                    help="draw runs from all 20 at random, or round-robin over the occasions")
    ap.add_argument("--seed", type=int, default=20230421)
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args(argv)

    cells = load_cells(args.csv)
    rng = np.random.default_rng(args.seed)
    fixed_n = {k: sum(len(v) for v in occ.values()) for k, occ in cells.items()}
    fixed_hw = {k: half_width(np.array([v for vs in occ.values() for v in vs])) for k, occ in cells.items()}
    full_mean = {k: float(np.mean([v for vs in occ.values() for v in vs])) for k, occ in cells.items()}
    worst = max(fixed_hw.values())
    questions = {
        "same_guarantee": ("every cell within ±{:.1%} (the fixed design's worst cell)".format(worst), worst),
        "default_target": (f"every cell within ±{args.target:.0%} (the default target)", args.target),
        "matched": ("each cell as precise as its own 20 runs", None),
    }
    result: dict = {"cells": len(cells), "fixed_runs": sum(fixed_n.values()), "scheme": args.scheme,
                    "min_repetitions": args.min_n, "cap": args.cap, "sims": args.sims,
                    "fixed_cells_within_target": sum(h <= args.target for h in fixed_hw.values()),
                    "worst_fixed_half_width": worst, "questions": {}}
    per_cell = []
    for name, (label, target) in questions.items():
        runs, within, covered = 0.0, 0.0, 0.0
        for key in sorted(cells):
            x = draws(cells[key], args.sims, args.cap, args.scheme, rng)
            goal = fixed_hw[key] if target is None else target
            n, hw, mean = replay(x, goal, args.min_n, args.cap)
            runs += n.mean()
            within += (hw <= goal + 1e-12).mean()
            covered += (np.abs(mean - full_mean[key]) <= hw * np.abs(mean)).mean()
            if name == "default_target":
                per_cell.append({"solution": key[0], "metric": key[1], "fixed_half_width": fixed_hw[key],
                                 "mean_runs": float(n.mean()), "median_runs": float(np.median(n)),
                                 "share_capped_short": float(((n == args.cap) & (hw > goal)).mean())})
        result["questions"][name] = {"label": label, "target": target, "mean_total_runs": runs,
                                     "cells_within_target": within, "ci_coverage": covered / len(cells)}
    result["per_cell_default_target"] = per_cell

    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
        return 0
    print(f"thesis cells: {len(cells)} (solution × metric), fixed design {result['fixed_runs']} runs "
          f"(20 per cell); scheme {args.scheme}, min {args.min_n}, cap {args.cap}, {args.sims} simulated "
          f"campaigns per cell")
    print(f"fixed 20 runs: {result['fixed_cells_within_target']} of {len(cells)} cells within ±{args.target:.0%}; "
          f"worst cell ±{worst:.1%}")
    print()
    print(f"{'question':58s} {'runs (mean)':>12s} {'vs fixed':>9s} {'cells within':>13s} {'CI coverage':>12s}")
    for q in result["questions"].values():
        print(f"{q['label']:58s} {q['mean_total_runs']:12.0f} {q['mean_total_runs'] / result['fixed_runs']:9.0%} "
              f"{q['cells_within_target']:13.1f} {q['ci_coverage']:12.1%}")
    print()
    print(f"per cell at ±{args.target:.0%}: runs the rule makes (mean, median) vs the 20-run CI half-width")
    for c in sorted(per_cell, key=lambda c: -c["mean_runs"]):
        print(f"  {c['solution']:20s} {c['metric']:24s} ±{c['fixed_half_width']:6.1%} at 20 runs → "
              f"{c['mean_runs']:5.1f} / {c['median_runs']:4.0f} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
