"""`pvbench compare` on a large campaign: as shipped beside the row-by-row selection it replaced
(a script, not a timed test).

`pvbench compare` used to build every table of the campaign, fetch all of its measurements as
Python dicts (~1.4 million at 100,000 results) and pick the sides, the metrics and the history
row by row. It now builds only ``measurements`` and selects in DuckDB (pvbench.pipeline.compare).
This script makes bench_aggregate's synthetic campaign (N results in a local store), aggregates it
once (the compacts every later command finds), then runs each comparison both ways, alternated
ROUNDS times, each in its own process:

  as shipped   `pvbench compare BASELINE CANDIDATE --campaign bench --fail-on never`
  row by row   the same comparison with the old selection (row_by_row below; also the oracle that
               tests/test_stats_report_tables.py checks the shipped selection against)

for two classes (sc-01 against sc-02: every run) and two runs (the first against the last: the
earlier runs are the classes' history), printing the wall time, CPU and peak RSS of every
process, the medians and row by row ÷ as shipped.

Usage: .venv/bin/python -m pvbench_lab.bench_compare [--results 100000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from pvbench.store import LocalStore, open_store

REPO = Path(__file__).resolve().parents[2]


def row_by_row(store, baseline, candidate, metrics: str = "headline"):
    """The SideComparison `pvbench compare` made before it selected in DuckDB: every model built,
    every measurement of the campaign fetched, the sides, metrics and history picked in Python."""
    from pvbench.pipeline import build_tables
    from pvbench.stats.compare import CompareSettings
    from pvbench.stats.sides import MEASUREMENT_COLUMNS, Side, compare_groups, match_keys, wanted_metrics

    keys, wanted = match_keys(baseline, candidate), wanted_metrics(metrics)

    def rows(side):
        con = build_tables(store, side.campaign, side.run, extras=False, only_run=side.run is not None)
        try:
            cursor = con.execute(f"select {', '.join(MEASUREMENT_COLUMNS)}, epoch(started_at) from measurements")
            every = [dict(zip(MEASUREMENT_COLUMNS + ("started_at",), row)) for row in cursor.fetchall()]
        finally:
            con.close()
        headline = wanted is not None and "headline" in wanted
        return [r for r in every if wanted is None or r["metric"] in wanted or (headline and r["is_headline"])]

    history = []
    if baseline.campaign == candidate.campaign and "storage_class" in keys:
        every = rows(Side(baseline.campaign))
        base = [r for r in every if baseline.matches(r)]
        cand = [r for r in every if candidate.matches(r)]
        starts = [r["started_at"] for r in cand if r["started_at"] is not None]
        history = [
            r
            for r in every
            if starts
            and not baseline.matches(r)
            and not candidate.matches(r)
            and r["started_at"] is not None
            and r["started_at"] < min(starts)
        ]
    else:
        base = [r for r in rows(baseline) if baseline.matches(r)]
        cand = [r for r in rows(candidate) if candidate.matches(r)]
    return compare_groups(base, cand, keys, CompareSettings(), baseline, candidate, history_rows=history)


def _shown(measured: tuple[float, float, float]) -> str:
    wall, cpu, rss = measured
    return f"{wall:.2f} s · {cpu:.2f} s · {rss:.2f} GiB"


def _row_by_row_main(store: str, campaign: str, baseline: str, candidate: str) -> None:
    """What the "row by row" process runs (this module with --row-by-row)."""
    from pvbench.stats.sides import Side

    result = row_by_row(open_store(store), Side.parse(baseline, campaign), Side.parse(candidate, campaign))
    print(f"{len(result.comparisons)} comparisons")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--row-by-row", nargs=4, metavar=("STORE", "CAMPAIGN", "BASELINE", "CANDIDATE"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.row_by_row:  # the timed process: it imports what `pvbench compare` imports, not the benchmark
        _row_by_row_main(*args.row_by_row)
        return
    from rich.console import Console
    from rich.table import Table

    from pvbench_lab.bench_aggregate import (
        CAMPAIGN,
        PER_RUN,
        PVBENCH,
        byte_compile,
        template_document,
        timed,
        write_runs,
    )

    console = Console(width=180)
    byte_compile(REPO / "sdk")
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="pvbench-bench-compare-") as tmp:
        work = Path(tmp)
        store = LocalStore(work / "store")
        runs = max(2, args.results // PER_RUN)
        console.print(f"writing {runs * PER_RUN:,} results to {store.root} …")
        write_runs(store, template_document(work), 0, runs)
        subprocess.run(
            [*PVBENCH, "aggregate", "--store", str(store.root), "--campaign", CAMPAIGN, "--out", str(work / "tables")],
            check=True,
            env=env,
            capture_output=True,
        )
        pairs = {
            "two classes": ("storage_class=sc-01", "storage_class=sc-02"),
            "two runs": ("run-0000", f"run-{runs - 1:04d}"),
        }
        ways = {
            "as shipped": lambda b, c: timed(
                ["compare", b, c, "--store", str(store.root), "--campaign", CAMPAIGN, "--fail-on", "never"], env
            ),
            "row by row": lambda b, c: timed(
                ["--row-by-row", str(store.root), CAMPAIGN, b, c],
                env,
                [sys.executable, "-m", "pvbench_lab.bench_compare"],
            ),
        }
        table = Table(title=f"pvbench compare over {runs * PER_RUN:,} results (wall · CPU · peak RSS)")
        table.add_column("comparison")
        table.add_column("way")
        for n in range(args.rounds):
            table.add_column(f"round {n + 1}", justify="right")
        table.add_column("median", justify="right")
        medians: dict[tuple[str, str], tuple[float, float, float]] = {}
        for pair, (baseline, candidate) in pairs.items():
            measured: dict[str, list] = {way: [] for way in ways}
            for n in range(args.rounds):
                order = list(ways) if n % 2 == 0 else list(reversed(ways))
                for way in order:
                    measured[way].append(ways[way](baseline, candidate))
            for way, runs_of_way in measured.items():
                done = [m for m in runs_of_way if m is not None]
                if done:
                    medians[(pair, way)] = tuple(statistics.median(m[i] for m in done) for i in (0, 2, 1))
                shown = [_shown((m[0], m[2], m[1])) if m else "failed" for m in runs_of_way]
                table.add_row(pair, way, *shown, _shown(medians[(pair, way)]) if (pair, way) in medians else "–")
        console.print(table)
        for pair in pairs:
            if (pair, "as shipped") in medians and (pair, "row by row") in medians:
                (fw, fc, fr), (sw, sc, sr) = medians[(pair, "as shipped")], medians[(pair, "row by row")]
                console.print(
                    f"{pair}: row by row ÷ as shipped: wall {sw / fw:.1f}×, CPU {sc / fc:.1f}×, peak RSS {sr / fr:.1f}×"
                )


if __name__ == "__main__":
    main()
