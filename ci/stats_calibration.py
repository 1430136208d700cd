#!/usr/bin/env python3
"""Measure what `pvbench compare` promises: its false-positive rate and its power.

Synthetic repetitions (normal noise of a given CV around 1000) for baseline and candidate:

* identical distributions → how often is the verdict anything but "no meaningful difference"?
  (the false-positive rate; Holm keeps it at or below alpha for the whole family of metrics)
* candidate 10% worse → how often is the verdict "worse"? (the power)

    .venv/bin/python ci/stats_calibration.py            # the table in docs/statistics.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sdk"))

from pvbench.stats.compare import SAME, WORSE, CompareSettings, compare_many  # noqa: E402


def rate(rng, trials, n, shift, cv, metrics, settings, hit) -> float:
    count = 0
    for _ in range(trials):
        groups = [({"m": m}, "higher", rng.normal(1000, 1000 * cv, n), rng.normal(1000 * (1 + shift), 1000 * cv, n))
                  for m in range(metrics)]
        verdicts = [c.verdict for c in compare_many(groups, settings)]
        count += hit(verdicts)
    return count / trials


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    fast = dict(n_boot=200)  # the verdict does not depend on the bootstrap; keep the simulation quick
    print(f"{args.trials} trials per row; alpha 0.05; 'family' = Holm across that many metrics")
    print(f"{'case':44s} {'n/side':>6s} {'CV':>5s} {'metrics':>7s} {'rate':>7s}")
    rows = [
        ("identical, test only (min change 0)", 5, 0.05, 1, 0.0, CompareSettings(min_change=0, **fast), "any"),
        ("identical, test only (min change 0)", 10, 0.05, 1, 0.0, CompareSettings(min_change=0, **fast), "any"),
        ("identical, test only (min change 0)", 20, 0.05, 1, 0.0, CompareSettings(min_change=0, **fast), "any"),
        ("identical, family of 10, min change 0", 10, 0.05, 10, 0.0, CompareSettings(min_change=0, **fast), "any"),
        ("identical, defaults (min change 5%)", 5, 0.05, 1, 0.0, CompareSettings(**fast), "any"),
        ("identical, defaults (min change 5%)", 10, 0.10, 1, 0.0, CompareSettings(**fast), "any"),
        ("10% worse, detected as worse", 5, 0.02, 1, -0.10, CompareSettings(**fast), "worse"),
        ("10% worse, detected as worse", 5, 0.05, 1, -0.10, CompareSettings(**fast), "worse"),
        ("10% worse, detected as worse", 10, 0.05, 1, -0.10, CompareSettings(**fast), "worse"),
        ("10% worse, detected as worse", 20, 0.10, 1, -0.10, CompareSettings(**fast), "worse"),
    ]
    for label, n, cv, metrics, shift, settings, kind in rows:
        hit = (lambda v: any(x != SAME for x in v)) if kind == "any" else (lambda v: v[0] == WORSE)
        r = rate(rng, args.trials, n, shift, cv, metrics, settings, hit)
        print(f"{label:44s} {n:6d} {cv:5.0%} {metrics:7d} {r:7.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
