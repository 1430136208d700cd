"""The report build's peak memory with and without glibc's malloc settings, side by side (a script,
not a timed test).

`pvbench report build` runs Evidence's Node with glibc's malloc set to give freed memory back
(pvbench.report.build.MALLOC_ENV). This builds the same campaign's report alternately as shipped
and with MALLOC_ENV emptied in the pvbench process (nothing else differs), each build in its own
process, and prints every build's wall time and peak RSS (the largest process of the build: Vite's
Node), then the median of each variant. The campaign: ``--runs`` synthetic runs of 1,000 results
each (ci/bench_aggregate.py's copies of one real fio result); the build's memory does not depend
on the campaign's size (ci/bench_aggregate.py prints it at 1,000 and 100,000 results).

Usage: .venv/bin/python ci/bench_report_build.py [--runs 1] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_aggregate import CAMPAIGN, PVBENCH, template_document, timed, write_runs  # noqa: E402

from pvbench.store import LocalStore  # noqa: E402

VARIANTS = {
    "as shipped": PVBENCH,
    "without the malloc settings": [
        sys.executable,
        "-c",
        "import sys, pvbench.report.build as build; build.MALLOC_ENV = {};"
        " from pvbench.cli.main import main; sys.argv[0] = 'pvbench'; main()",
    ],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="runs of 1,000 results in the campaign")
    parser.add_argument("--rounds", type=int, default=2, help="builds of each variant, alternated")
    args = parser.parse_args()
    console = Console(width=160)
    env = {name: value for name, value in os.environ.items() if not name.startswith("MALLOC_")}
    with tempfile.TemporaryDirectory(prefix="pvbench-bench-report-") as tmp:
        work = Path(tmp)
        store = LocalStore(work / "store")
        write_runs(store, template_document(work), 0, args.runs)
        tables = work / "tables"
        if timed(["aggregate", "--store", str(store.root), "--campaign", CAMPAIGN, "--out", str(tables)], env) is None:
            sys.exit("the aggregation failed")
        builds: dict[str, list[tuple[float, float]]] = {name: [] for name in VARIANTS}
        for round_ in range(args.rounds):
            for name, command in VARIANTS.items():
                site = work / f"site-{len(builds[name])}"
                measured = timed(["report", "build", "--data", str(tables), "--out", str(site)], env, command)
                if measured is None:
                    sys.exit(f"the report build ({name}) failed")
                builds[name].append(measured)
                console.print(f"round {round_ + 1}, {name}: {measured[0]:.1f} s · {measured[1]:.2f} GiB")
    table = Table(title=f"pvbench report build, {args.runs * 1000:,} results (each build in its own process)")
    for column in ("variant", "builds (wall · peak RSS)", "median peak RSS"):
        table.add_column(column)
    for name, measured in builds.items():
        table.add_row(
            name,
            ", ".join(f"{wall:.1f} s · {rss:.2f} GiB" for wall, rss in measured),
            f"{statistics.median(rss for _, rss in measured):.2f} GiB",
        )
    console.print(table)


if __name__ == "__main__":
    main()
