"""Does the adaptive-repetition rule, as shipped, save runs against the thesis's fixed design?

Replays pvbench's own rule (pvbench.stats.adaptive.needs_more, the function behind local
mode's rounds and `pvbench stats ci-check`) on the thesis's raw runs
(examples/thesis-azure-runs.csv: 4 storage solutions × 10 metrics = 40 cells, each 4 occasions ×
5 runs = 800 runs). Runs are drawn with replacement from the occasion's own 5 runs.

As shipped, the rule works per occasion: local mode keys its rounds by occasion × class ×
profile × workload, ci-check defaults to run × occasion, and the Argo template checks only its
own run (one occasion) without --pool-occasions. So each of a cell's 4 occasions starts with
min_repetitions runs and gets one more per round while *that occasion's* 95% CI half-width is
above the target, up to the cap.

For each target the table gives
  runs        total over the 40 cells (mean over the simulated campaigns) against the fixed 800;
  within      share of cell × occasion CIs at or below the target when the rule stops;
  cell CI     the median cell's 95% CI half-width over its occasions (mean of the 4 occasion
              means, t with 3 df: repetitions inside one occasion are not independent), with the
              fixed design's in brackets;
  |error|     median across cells of mean |adaptive mean − full 20-run mean| divided by the same for
              the fixed design (5 runs per occasion drawn the same way); below 1 is better;
  coverage    how often the CI the rule stopped on (one occasion's) contains that occasion's mean;
              in brackets the same for the fixed design's 5 runs. Draws from only 5 values make
              every CI here too narrow, so compare the two rather than either with 95%.

A last row per target replays what the README used to claim: the same rule with occasions pooled
(ci-check --pool-occasions) and runs drawn round-robin over the occasions, which neither local mode
nor the Argo loop can do (their rounds repeat cells within the current occasion), with a CI that
ignores occasions. Its coverage is of the full 20-run mean.

    .venv/bin/python -m pvbench_lab.adaptive_resample          # the table in docs/statistics.md
    .venv/bin/python -m pvbench_lab.adaptive_resample --min 3  # fewer planned runs per occasion
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from pvbench.stats.adaptive import AdaptiveSettings, needs_more, relative_half_width

REPO = Path(__file__).resolve().parents[2]
DEFAULT_CSV = REPO / "examples" / "thesis-azure-runs.csv"


def load_cells(path: Path) -> dict[tuple[str, str], list[list[float]]]:
    """(solution, metric) → the values of each occasion (occasions in order), in run order."""
    cells: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            cells[(row["solution"], row["metric"])][row["occasion"]].append(float(row["value"]))
    return {k: [vs for _, vs in sorted(occ.items(), key=lambda kv: int(kv[0]))] for k, occ in cells.items()}


def stop(values: list[float], settings: AdaptiveSettings) -> int:
    """How many of ``values`` the rule uses: the planned min_repetitions, then one more per round
    while ``needs_more`` (exactly local mode's plan_stream and ci-check's loop for one cell)."""
    n = min(settings.min_repetitions, settings.max_repetitions)
    while needs_more(values[:n], settings):
        n += 1
    return n


def occasion_half_width(means: list[float], confidence: float = 0.95) -> float:
    """95% CI half-width of the mean of occasion means (t, k−1 df), relative."""
    return relative_half_width(means, confidence)


def replay_cell(
    occasions: list[list[float]],
    settings: AdaptiveSettings,
    sims: int,
    fixed_per_occasion: int,
    rng: np.random.Generator,
) -> dict:
    truth = float(np.mean([v for vs in occasions for v in vs]))
    occ_truth = [float(np.mean(vs)) for vs in occasions]
    cap, target = settings.max_repetitions, settings.target_half_width
    runs, within, covered, covered_f, err_a, err_f, hw_a, hw_f = [], [], [], [], [], [], [], []
    pooled_runs, pooled_err, pooled_cov = [], [], []
    k = len(occasions)
    for _ in range(sims):
        draws = [list(np.asarray(vs)[rng.integers(0, len(vs), size=cap)]) for vs in occasions]
        # as shipped: per occasion
        means, total = [], 0
        for o, x in enumerate(draws):
            n = stop(x, settings)
            total += n
            hw = relative_half_width(x[:n], settings.confidence)
            within.append(hw <= target)
            m = sum(x[:n]) / n
            covered.append(abs(m - occ_truth[o]) <= hw * abs(m))
            means.append(m)
        runs.append(total)
        est = sum(means) / k
        err_a.append(abs(est - truth))
        hw_a.append(occasion_half_width(means, settings.confidence))
        # the fixed design, drawn the same way: the first fixed_per_occasion draws of each occasion
        fixed_means = [sum(x[:fixed_per_occasion]) / fixed_per_occasion for x in draws]
        for o, x in enumerate(draws):
            hw = relative_half_width(x[:fixed_per_occasion], settings.confidence)
            covered_f.append(abs(fixed_means[o] - occ_truth[o]) <= hw * abs(fixed_means[o]))
        err_f.append(abs(sum(fixed_means) / k - truth))
        hw_f.append(occasion_half_width(fixed_means, settings.confidence))
        # not shipped: occasions pooled, drawn round-robin (the earlier claim)
        start = int(rng.integers(0, k))
        seq = [draws[(start + j) % k][j // k] for j in range(cap)]
        n = stop(seq, settings)
        m = sum(seq[:n]) / n
        pooled_runs.append(n)
        pooled_err.append(abs(m - truth))
        pooled_cov.append(abs(m - truth) <= relative_half_width(seq[:n], settings.confidence) * abs(m))
    return {
        "runs": float(np.mean(runs)),
        "within": float(np.mean(within)),
        "coverage": float(np.mean(covered)),
        "fixed_coverage": float(np.mean(covered_f)),
        "error_ratio": float(np.mean(err_a) / np.mean(err_f)) if np.mean(err_f) else 1.0,
        "cell_half_width": float(np.median(hw_a)),
        "fixed_cell_half_width": float(np.median(hw_f)),
        "pooled_runs": float(np.mean(pooled_runs)),
        "pooled_coverage": float(np.mean(pooled_cov)),
        "pooled_error_ratio": float(np.mean(pooled_err) / np.mean(err_f)) if np.mean(err_f) else 1.0,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", type=Path, default=DEFAULT_CSV)
    ap.add_argument(
        "--target",
        type=float,
        action="append",
        help="target half-width(s); default: the fixed design's worst cell, and 0.05",
    )
    ap.add_argument("--min", type=int, default=5, dest="min_n", help="min_repetitions (per occasion, as shipped)")
    ap.add_argument("--cap", type=int, default=20, help="max_repetitions (per occasion, as shipped)")
    ap.add_argument("--sims", type=int, default=1000, help="simulated campaigns per cell")
    ap.add_argument("--seed", type=int, default=20230421)
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args(argv)

    cells = load_cells(args.csv)
    per_occasion = {len(vs) for occ in cells.values() for vs in occ}
    if len(per_occasion) != 1:
        raise SystemExit(f"expected the same number of runs in every occasion, got {sorted(per_occasion)}")
    fixed_per_occasion = per_occasion.pop()
    fixed_runs = sum(len(vs) for occ in cells.values() for vs in occ)
    pooled_hw = {k: relative_half_width([v for vs in occ for v in vs]) for k, occ in cells.items()}
    worst = max(pooled_hw.values())
    targets = args.target or [round(worst, 3), 0.05]
    result: dict = {
        "cells": len(cells),
        "fixed_runs": fixed_runs,
        "fixed_per_occasion": fixed_per_occasion,
        "min_repetitions": args.min_n,
        "cap": args.cap,
        "sims": args.sims,
        "worst_fixed_half_width_ignoring_occasions": worst,
        "targets": [],
    }
    for target in targets:
        settings = AdaptiveSettings(target_half_width=target, min_repetitions=args.min_n, max_repetitions=args.cap)
        rng = np.random.default_rng(args.seed)
        per_cell = {k: replay_cell(cells[k], settings, args.sims, fixed_per_occasion, rng) for k in sorted(cells)}
        rows = list(per_cell.values())
        result["targets"].append(
            {
                "target": target,
                "shipped": {
                    "runs": sum(r["runs"] for r in rows),
                    "within": float(np.mean([r["within"] for r in rows])),
                    "cell_half_width_median": float(np.median([r["cell_half_width"] for r in rows])),
                    "fixed_cell_half_width_median": float(np.median([r["fixed_cell_half_width"] for r in rows])),
                    "error_ratio_median": float(np.median([r["error_ratio"] for r in rows])),
                    "cells_with_larger_error": sum(r["error_ratio"] > 1 for r in rows),
                    "coverage": float(np.mean([r["coverage"] for r in rows])),
                    "fixed_coverage": float(np.mean([r["fixed_coverage"] for r in rows])),
                },
                "pooled_round_robin": {
                    "runs": sum(r["pooled_runs"] for r in rows),
                    "error_ratio_median": float(np.median([r["pooled_error_ratio"] for r in rows])),
                    "cells_with_larger_error": sum(r["pooled_error_ratio"] > 1 for r in rows),
                    "coverage": float(np.mean([r["pooled_coverage"] for r in rows])),
                },
                "per_cell": [{"solution": k[0], "metric": k[1], **v} for k, v in per_cell.items()],
            }
        )

    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
        return 0
    print(
        f"thesis: {len(cells)} cells × {len(next(iter(cells.values())))} occasions × {fixed_per_occasion} runs = "
        f"{fixed_runs} runs; rule as shipped: per occasion, min {args.min_n}, cap {args.cap}; "
        f"{args.sims} simulated campaigns per cell"
    )
    print(f"fixed design's worst 95% CI (runs pooled, occasions ignored): ±{worst:.1%}")
    print()
    print(
        f"{'target':>7s}  {'rule':34s} {'runs':>6s} {'vs 800':>7s} {'within':>7s} {'cell CI (fixed)':>16s} "
        f"{'|error| ×':>10s} {'larger':>7s} {'coverage (fixed)':>17s}"
    )
    for t in result["targets"]:
        s, p = t["shipped"], t["pooled_round_robin"]
        print(
            f"{t['target']:>7.1%}  {'as shipped (per occasion)':34s} {s['runs']:6.0f} {s['runs'] / fixed_runs:7.0%} "
            f"{s['within']:7.0%} {s['cell_half_width_median']:7.1%} ({s['fixed_cell_half_width_median']:5.1%}) "
            f"{s['error_ratio_median']:10.2f} {s['cells_with_larger_error']:4d}/40 {s['coverage']:9.1%} "
            f"({s['fixed_coverage']:5.1%})"
        )
        print(
            f"{'':7s}  {'not shipped: pooled, round-robin':34s} {p['runs']:6.0f} {p['runs'] / fixed_runs:7.0%} "
            f"{'':7s} {'':16s} {p['error_ratio_median']:10.2f} {p['cells_with_larger_error']:4d}/40 "
            f"{p['coverage']:9.1%}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
