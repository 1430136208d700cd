"""Judging a campaign's histories: the series judged together, and what keeping the permutations
saves (a script, not a timed test).

Series shaped as pvbench_lab.bench_aggregate's campaign makes them (20 classes × 10 workloads: 200
headline series, one occasion a run, ~4% day-to-day noise), of two kinds: flat, and with a −20%
step halfway in every series (the history's worst case: every series segmented and tested window by
window). Each kind is judged ROUNDS times, three ways in turn (the order rotated every round):

  together    pvbench's (pvbench.stats.history.judge_all: HistorySettings.detect_many): the series
              of one length segmented at once (changepoints.pelt_l2_many), the column orders a
              generator in a given state draws kept and taken again (changepoints.PermutationOrders:
              every series starts from the same seed), none kept at the start of a round, as at the
              start of an aggregation;
  one by one  each series judged alone (HistorySettings.detect), the orders kept as above;
  drawn       together, but no order kept (max_bytes 0): drawn every time (rng.permuted).

It prints the CPU seconds of each (medians over the rounds), the ratios to pvbench's way, and
whether the three gave the same verdicts (they must: the same permutations and segmentations).

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


WAYS = ("together", "one by one", "drawn")


def judge(histories: list[list[Occasion]], way: str) -> tuple[float, list]:
    """CPU seconds to judge every series ``way`` (one of WAYS), and the verdicts."""
    settings = HistorySettings()
    orders = changepoints.permutation_orders
    max_bytes = orders.max_bytes
    orders.clear()
    orders.max_bytes = 0 if way == "drawn" else max_bytes
    try:
        started = time.process_time()
        if way == "one by one":
            verdicts = [settings.detect(points) for points in histories]
        else:
            verdicts = settings.detect_many(histories)
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
    print(f"judging {args.series} series × {args.occasions} occasions, {args.rounds} rounds, the ways rotated")
    print()
    print(
        "| series | change points found | together | one by one | drawn "
        "| together ÷ one by one | together ÷ drawn | same verdicts |"
    )
    print("|---|---|---|---|---|---|---|---|")
    judge(make_series("step", 2, args.occasions), "together")  # the imports and first calls, not timed
    for kind in ("flat", "step"):
        histories = make_series(kind, args.series, args.occasions)
        times: dict[str, list[float]] = {way: [] for way in WAYS}
        verdicts: dict[str, list] = {}
        for round_ in range(args.rounds):
            for way in WAYS[round_ % 3 :] + WAYS[: round_ % 3]:
                seconds, verdicts[way] = judge(histories, way)
                times[way].append(seconds)
        found = sum(len(v.change_points) for v in verdicts["together"])
        same = "yes" if len({repr(v) for v in verdicts.values()}) == 1 else "NO"
        median = {way: statistics.median(times[way]) for way in WAYS}
        print(
            f"| {kind} | {found} | {median['together']:.2f} s | {median['one by one']:.2f} s | {median['drawn']:.2f} s "
            f"| {median['together'] / median['one by one']:.2f} | {median['together'] / median['drawn']:.2f} | {same} |"
        )


if __name__ == "__main__":
    main()
