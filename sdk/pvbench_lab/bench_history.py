"""Judging a campaign's histories, and what keeping the permutations saves (a script, not a timed
test).

Series shaped as pvbench_lab.bench_aggregate's campaign makes them (20 classes × 10 workloads: 200
headline series, one occasion a run, ~4% day-to-day noise), of two kinds: flat, and with a −20%
step halfway in every series (the history's worst case: every series segmented and tested window by
window). Each kind is judged as pvbench.stats.history judges a series (HistorySettings.detect),
ROUNDS times, alternating two ways of getting the permutations:

  kept    pvbench's: the column orders a generator in a given state draws are kept and taken again
          (changepoints.PermutationOrders: every series starts from the same seed), none kept at
          the start of a round, as at the start of an aggregation;
  drawn   none kept (max_bytes 0): drawn every time (rng.permuted), as before they were kept.

It prints the CPU seconds of each (medians over the rounds), their ratio, and whether the two gave
the same verdicts (they must: the same permutations either way).

Usage: .venv/bin/python -m pvbench_lab.bench_history [--series 200] [--occasions 110] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from pvbench.stats import changepoints
from pvbench.stats.changepoints import Occasion
from pvbench.stats.history import HistorySettings

NOISE = 0.04  # sd of the log occasion means
STEP = -0.2  # the step of the "step" kind, as a ratio


def make_series(kind: str, series: int, occasions: int, seed: int = 1) -> list[list[Occasion]]:
    rng = np.random.default_rng(seed)
    made = []
    for _ in range(series):
        y = rng.normal(0.0, NOISE, occasions) + np.log(rng.uniform(1_000, 50_000))
        if kind == "step":
            y[occasions // 2 :] += np.log1p(STEP)
        made.append([Occasion(float(i), float(m)) for i, m in enumerate(np.exp(y))])
    return made


def judge(histories: list[list[Occasion]], keep: bool) -> tuple[float, list]:
    """CPU seconds to judge every series, and the verdicts."""
    settings = HistorySettings()
    orders = changepoints.permutation_orders
    max_bytes = orders.max_bytes
    orders.clear()
    orders.max_bytes = max_bytes if keep else 0
    try:
        started = time.process_time()
        verdicts = [settings.detect(points) for points in histories]
        return time.process_time() - started, verdicts
    finally:
        orders.clear()
        orders.max_bytes = max_bytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--series", type=int, default=200)
    parser.add_argument("--occasions", type=int, default=110)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"judging {args.series} series × {args.occasions} occasions, {args.rounds} rounds alternated")
    print()
    print("| series | change points found | kept | drawn | kept ÷ drawn | same verdicts |")
    print("|---|---|---|---|---|---|")
    judge(make_series("step", 2, args.occasions), True)  # the imports and first calls, not timed
    for kind in ("flat", "step"):
        histories = make_series(kind, args.series, args.occasions)
        times: dict[bool, list[float]] = {True: [], False: []}
        verdicts: dict[bool, list] = {}
        for round_ in range(args.rounds):
            for keep in (True, False) if round_ % 2 == 0 else (False, True):
                seconds, verdicts[keep] = judge(histories, keep)
                times[keep].append(seconds)
        found = sum(len(v.change_points) for v in verdicts[True])
        same = "yes" if repr(verdicts[True]) == repr(verdicts[False]) else "NO"
        kept, drawn = statistics.median(times[True]), statistics.median(times[False])
        print(f"| {kind} | {found} | {kept:.2f} s | {drawn:.2f} s | {kept / drawn:.2f} | {same} |")


if __name__ == "__main__":
    main()
