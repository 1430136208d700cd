"""The report build side by side: its bundles compiled or reused, and its peak memory with and
without glibc's malloc settings (a script, not a timed test).

Variants (``--variants``, default all), alternated round by round, each build in its own process:
  compiled          `pvbench report build` with PVBENCH_REPORT_REUSE_BUNDLES=0: Vite compiles the
                    server and client bundles, then every page is prerendered (what every build
                    did before reports/scripts/sveltekit-bundles.mjs, and what the first build of
                    a set of pages still does)
  reused            `pvbench report build` as shipped, after `pvbench report prime` (not timed)
                    compiled the bundles: they are reused, with SvelteKit's analysis of the
                    routes, and only the pages are prerendered
  reused, routes analysed again
                    as ``reused``, with the cached analysis of the routes (analysis.v8 beside
                    the bundles) moved aside during the build: SvelteKit analyses them again, in
                    a worker that loads the server bundle (what every build that reused the
                    bundles did before the analysis was cached with them)
  compiled, without the malloc settings
                    as ``compiled``, with pvbench.report.build.MALLOC_ENV emptied in the pvbench
                    process (glibc's malloc settings that give freed memory back)
It prints every build's wall time and peak RSS (the largest process of the build: Vite's Node),
then the medians of each variant. The campaign: ``--data DIR``, a directory of report_*.parquet
tables (`pvbench aggregate --out`), or ``--runs`` synthetic runs of 1,000 results each
(pvbench_lab.bench_aggregate's copies of one real fio result).

Usage: .venv/bin/python -m pvbench_lab.bench_report_build [--data DIR | --runs 1] [--rounds 2] [--variants compiled,reused]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from pvbench.report.build import reports_dir
from pvbench.report.bundles import ANALYSIS_FILE, CACHE_DIR
from pvbench.store import LocalStore
from pvbench_lab.bench_aggregate import CAMPAIGN, PVBENCH, template_document, timed, write_runs

WITHOUT_MALLOC = [
    sys.executable,
    "-c",
    "import sys, pvbench.report.build as build; build.MALLOC_ENV = {};"
    " from pvbench.cli.main import main; sys.argv[0] = 'pvbench'; main()",
]
COMPILE = {"PVBENCH_REPORT_REUSE_BUNDLES": "0"}
ANALYSED_AGAIN = "reused, routes analysed again"
# name → (command, environment added)
VARIANTS = {
    "compiled": (PVBENCH, COMPILE),
    "reused": (PVBENCH, {}),
    ANALYSED_AGAIN: (PVBENCH, {}),
    "compiled, without the malloc settings": (WITHOUT_MALLOC, COMPILE),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="report_*.parquet tables to build (else --runs synthetic runs)")
    parser.add_argument("--runs", type=int, default=1, help="runs of 1,000 results in the campaign (without --data)")
    parser.add_argument("--rounds", type=int, default=2, help="builds of each variant, alternated")
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of: {'; '.join(VARIANTS)}")
    args = parser.parse_args()
    # split at the commas between names, not at those within a name (", " in "compiled, without …")
    chosen = [name.strip() for name in re.split(r",(?! )", args.variants) if name.strip()]
    if unknown := [name for name in chosen if name not in VARIANTS]:
        sys.exit(f"unknown variant(s) {unknown}; choose from {list(VARIANTS)}")
    console = Console(width=160)
    env = {name: value for name, value in os.environ.items() if not name.startswith("MALLOC_")}
    with tempfile.TemporaryDirectory(prefix="pvbench-bench-report-") as tmp:
        work = Path(tmp)
        tables = args.data
        if tables is None:
            store = LocalStore(work / "store")
            write_runs(store, template_document(work), 0, args.runs)
            tables = work / "tables"
            aggregate = ["aggregate", "--store", str(store.root), "--campaign", CAMPAIGN, "--out", str(tables)]
            if timed(aggregate, env) is None:
                sys.exit("the aggregation failed")
        if not any(tables.glob("report_*.parquet")):
            sys.exit(f"{tables} holds no report_*.parquet tables")
        if any(name.startswith("reused") for name in chosen) and timed(["report", "prime"], env) is None:
            sys.exit("pvbench report prime failed")
        builds: dict[str, list[tuple[float, float]]] = {name: [] for name in chosen}
        for round_ in range(args.rounds):
            for name in chosen:
                command, added = VARIANTS[name]
                site = work / f"site-{len(builds[name])}"
                aside = _cached_analysis_aside() if name == ANALYSED_AGAIN else contextlib.nullcontext()
                with aside:
                    measured = timed(
                        ["report", "build", "--data", str(tables), "--out", str(site)], {**env, **added}, command
                    )
                if measured is None:
                    sys.exit(f"the report build ({name}) failed")
                builds[name].append(measured[:2])
                console.print(f"round {round_ + 1}, {name}: {measured[0]:.1f} s · {measured[1]:.2f} GiB")
    what = f"the tables in {args.data}" if args.data else f"{args.runs * 1000:,} results"
    table = Table(title=f"pvbench report build, {what} (each build in its own process)")
    for column in ("variant", "builds (wall · peak RSS)", "median wall", "median peak RSS"):
        table.add_column(column)
    for name, measured in builds.items():
        table.add_row(
            name,
            ", ".join(f"{wall:.1f} s · {rss:.2f} GiB" for wall, rss in measured),
            f"{statistics.median(wall for wall, _ in measured):.1f} s",
            f"{statistics.median(rss for _, rss in measured):.2f} GiB",
        )
    console.print(table)


@contextlib.contextmanager
def _cached_analysis_aside():
    """The routes' analysis cached beside each kept bundle, moved aside meanwhile, then back."""
    moved = []
    for analysis in (reports_dir() / CACHE_DIR).glob(f"*/{ANALYSIS_FILE}"):
        analysis.rename(analysis.with_name("analysis.v8.aside"))
        moved.append(analysis)
    if not moved:
        sys.exit("no cached analysis to move aside: are the bundles compiled by the installed patch?")
    try:
        yield
    finally:
        for analysis in moved:
            analysis.with_name("analysis.v8.aside").rename(analysis)


if __name__ == "__main__":
    main()
