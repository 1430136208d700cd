"""What the report step spends making its writable copy of the Evidence project, side by side
(a script, not a timed test): the whole project copied (`cp -a`, what the step did until the
image named a working copy; what the image holds: not the template copy, site and tables a local
build leaves), against pvbench.report.build.working_copy (its files copied,
node_modules linked). Each into a fresh folder on the same filesystem as --into, alternated,
--rounds times; prints the medians, the bytes and files each writes, and the ratio.

The report step's pod does this on its /tmp emptyDir before every report build, reading the
project from the image (the page cache warm after the first round here, as on a node that ran
the image before).

Usage: .venv/bin/python -m pvbench_lab.bench_working_copy [--rounds 5] [--into /tmp]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from pvbench.report.build import check_installed, working_copy


def _size(folder: Path) -> tuple[int, int]:
    """(bytes, files) under ``folder``, links not followed."""
    total = count = 0
    for root, _, names in os.walk(folder):
        for name in names:
            total += os.lstat(os.path.join(root, name)).st_size
            count += 1
    return total, count


# What the report image's project holds besides node_modules: its Dockerfile removes what the
# priming build left (Evidence's copy of its template, the site, the tables), so a copy of it did
# not copy those; a local project may have them.
_NOT_IN_THE_IMAGE = {"build", "data", ".evidence/template"}


def _copy_all(project: Path, dest: Path) -> None:
    """`cp -a` of the project as the image holds it (the step's `cp -a "$src/." "$dst/"`)."""
    for entry in project.iterdir():
        if entry.name in _NOT_IN_THE_IMAGE:
            continue
        if entry.name == ".evidence":
            (dest / ".evidence").mkdir()
            items = [str(i) for i in entry.iterdir() if f".evidence/{i.name}" not in _NOT_IN_THE_IMAGE]
            if items:
                subprocess.run(["cp", "-a", *items, str(dest / ".evidence")], check=True)
            continue
        subprocess.run(["cp", "-a", str(entry), str(dest)], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="copies made each way (medians shown)")
    parser.add_argument("--into", type=Path, default=Path(tempfile.gettempdir()), help="where the copies go")
    args = parser.parse_args()
    project = check_installed()
    if not (project / "node_modules").is_dir():
        sys.exit(f"{project}/node_modules is missing: run ci/install-report.sh first")
    ways = {
        "the whole project (cp -a)": lambda dest: _copy_all(project, dest),
        "working copy (node_modules linked)": lambda dest: working_copy(project, dest),
    }
    times: dict[str, list[float]] = {way: [] for way in ways}
    sizes: dict[str, tuple[int, int]] = {}
    with tempfile.TemporaryDirectory(prefix="pvbench-bench-copy-", dir=args.into) as tmp:
        for round_ in range(args.rounds):
            for way, make in ways.items():
                dest = Path(tmp) / f"copy-{round_}-{len(times[way])}"
                dest.mkdir()
                started = time.perf_counter()
                make(dest)
                times[way].append(time.perf_counter() - started)
                sizes[way] = _size(dest)
                shutil.rmtree(dest)
    table = Table(title=f"A writable copy of {project}, {args.rounds} rounds alternated")
    for column in ("copy", "each round", "median", "written"):
        table.add_column(column, justify="left" if column == "copy" else "right")
    medians = {way: statistics.median(t) for way, t in times.items()}
    for way, t in times.items():
        written, files = sizes[way]
        table.add_row(
            way,
            ", ".join(f"{x:.2f}" for x in t) + " s",
            f"{medians[way]:.2f} s",
            f"{written / 2**20:,.0f} MiB, {files:,} files",
        )
    console = Console()
    console.print(table)
    whole, linked = medians.values()
    console.print(f"working copy ÷ whole copy: {linked / whole:.3f} (median wall time)")


if __name__ == "__main__":
    main()
