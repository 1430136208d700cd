"""Measure what pvbench's statistics promise, in one run: the table in docs/statistics.md.

* summary 95% CIs (the shipped summary.sql) — coverage at ICC 0, 0.5, 0.8;
* comparisons (the shipped pvbench.stats.compare) — CI coverage, false verdicts, power for a
  true 10% change, false equivalence at a true +5%, run against run;
* the upgrade gate with the moderated variance on simulated campaigns (1 to 12 baseline
  occasions, normal and heavy-tailed bad days) and how many occasions reach 60% / 80% power;
* real runs (examples/thesis-azure-runs.csv, or any CSV of that layout given with --runs): the
  upgrade replay and class against class at 2 × 3;
* warm-up and outlier flags — false flags per cell on null data.

    .venv/bin/python -m pvbench_lab.stats_calibration               # ~1 min on 2 cores
    .venv/bin/python -m pvbench_lab.stats_calibration --trials 500  # quicker, rougher
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from pvbench_lab.calibration import (
    Design,
    comparison_rows,
    format_table,
    gate_rows,
    occasions_for_power,
    summary_coverage,
    thesis_rows,
)
from pvbench_lab.calibration_flags import flag_rows

REPO = Path(__file__).resolve().parents[2]

SUMMARY_DESIGNS = [
    Design(4, 5, icc=0.0),
    Design(4, 5, icc=0.5),
    Design(4, 5, icc=0.8),
    Design(10, 3, icc=0.5),
    Design(2, 3, icc=0.5),
    Design(1, 5, icc=0.0),
    Design(1, 5, icc=0.5),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=2000, help="synthetic trials per row")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--runs",
        type=Path,
        nargs="+",
        default=[REPO / "examples" / "thesis-azure-runs.csv"],
        help="CSVs of real runs in the thesis layout (platform, solution, occasion, …, metric, unit, value)",
    )
    args = ap.parse_args()
    started = time.monotonic()
    rows = summary_coverage(SUMMARY_DESIGNS, args.trials, args.seed)
    rows += comparison_rows(args.trials, args.seed + 1)
    gate = gate_rows(args.trials, args.seed + 3)
    rows += gate
    # how long a history users need: the same gate where every metric is steadier (CV 2–10%)
    gate += gate_rows(args.trials // 4, args.seed + 5, tails=("normal",), cv=(0.02, 0.10))
    for runs in args.runs:
        rows += thesis_rows(runs, trials=max(50, args.trials // 10))
    # one row per detector: the worst design (the anomalies section of docs/statistics.md
    # has the full per-design tables, printed by `python -m pvbench_lab.calibration_flags`)
    worst: dict[str, dict] = {}
    count: dict[str, int] = {}
    for r in flag_rows(args.trials, args.seed + 2):
        count[r["detector"]] = count.get(r["detector"], 0) + 1
        if r["detector"] not in worst or r["false_flag_rate"] > worst[r["detector"]]["false_flag_rate"]:
            worst[r["detector"]] = r
    for detector, r in worst.items():
        rows.append(
            {
                "section": f"flag: {detector.replace('_', '-')}",
                "case": f"worst of {count[detector]} null designs: {r['design']}",
                "measure": "false flags per cell",
                "value": r["false_flag_rate"],
                "bound": "≤ 5%",
                "trials": r["trials"],
            }
        )
    print(format_table(rows))
    print("\nBaseline occasions (+ 1 candidate occasion × 3 repetitions) to find a 20% regression:\n")
    print("| metrics' CV, day-to-day variation | 60% of the time | 80% of the time |\n|---|---|---|")
    for tail, reached in occasions_for_power(gate).items():
        cells = [f"{reached[level]} occasions" if reached[level] else "more than 12" for level in (0.6, 0.8)]
        print(f"| {tail} | {cells[0]} | {cells[1]} |")
    print(
        f"\n(α = 0.05, smallest meaningful change 5%, {args.trials} synthetic trials per row, seed {args.seed}; "
        f"measured in {time.monotonic() - started:.0f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
