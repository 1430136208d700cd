"""pvbench's own overhead, measured side by side in one run (a script, not a timed test).

Prints:
1. pvbench IOPS / bare fio IOPS on the same job and directory (alternating, median of N);
2. local-mode wall time / sum of fio ramp+runtime on a 24-cell matrix;
3. aggregation time for the 800 imported thesis results, local store.

Usage: .venv/bin/python -m pvbench_lab.bench_overhead [--target DIR] [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console

from pvbench.cells.cell import Cell
from pvbench.cells.publish import publish
from pvbench.cells.run import TimingOverrides, plan_cell, run_cell
from pvbench.importers.thesis_csv import read_documents
from pvbench.local.config import LocalConfig
from pvbench.local.runner import plan_run, run_local
from pvbench.pipeline import aggregate
from pvbench.profiles import render_jobfile
from pvbench.store import open_store

REPO = Path(__file__).resolve().parents[2]


def bare_fio_iops(jobfile: str) -> float:
    # in a directory of its own: the job file's interval logs (pvbench.fio.series) go to fio's working directory
    with tempfile.TemporaryDirectory(prefix="pvbench-bare-") as workdir:
        job = Path(workdir) / "job.fio"
        job.write_text(jobfile)
        out = subprocess.run(
            ["fio", "--output-format=json", str(job)], cwd=workdir, capture_output=True, text=True, check=True
        )
    data = json.loads(out.stdout[out.stdout.find("{") :])
    return sum(j["read"]["iops"] + j["write"]["iops"] for j in data["jobs"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", type=Path, default=None, help="directory to benchmark (default: a temp dir)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    console = Console()
    with tempfile.TemporaryDirectory(prefix="pvbench-bench-") as tmp:
        target = args.target or Path(tmp) / "target"
        target.mkdir(parents=True, exist_ok=True)
        cell = Cell(
            campaign="bench",
            run="r",
            occasion="o",
            storage_class="bench",
            profile="dbench",
            workload="randread-iops",
            rep=1,
        )
        plan = plan_cell(cell, target, TimingOverrides(ramp="1s", runtime="3s", size="256M"))
        jobfile = render_jobfile(plan.profile, [plan.test], plan.timing, target)
        bare_fio_iops(jobfile)  # lay out the file once, outside the measurement
        ratios = []
        for _ in range(args.rounds):
            bare = bare_fio_iops(jobfile)
            doc, _ = run_cell(plan)
            ours = sum(m.iops for m in doc.metrics)
            ratios.append(ours / bare)
            console.print(f"  bare fio {bare:>12,.0f} IOPS   pvbench {ours:>12,.0f} IOPS   ratio {ours / bare:.3f}")
        console.print(
            f"[bold]1. pvbench IOPS / bare fio IOPS[/] (randread 4k QD64, {target}): "
            f"median {statistics.median(ratios):.3f} over {args.rounds} alternating pairs "
            f"(min {min(ratios):.3f}, max {max(ratios):.3f})"
        )

        config = LocalConfig(
            campaign="bench",
            store=str(Path(tmp) / "store"),
            spool=Path(tmp) / "spool",
            storage_classes={"disk": Path(tmp) / "disk", "tmpfs": Path("/dev/shm/pvbench-bench")},
            profiles=["dbench"],
            tests=["randread-iops", "randwrite-iops", "randread-lat", "seqread"],
            repetitions=3,
            occasions=["o"],
            ramp="500ms",
            runtime="1s",
            size="64M",
        )
        plans = plan_run(config, "bench")
        assert len(plans) == 24
        t0 = time.monotonic()
        report = run_local(config, plans, "bench", Console(stderr=True, quiet=True))
        wall = time.monotonic() - t0
        console.print(
            f"[bold]2. local-mode wall time / sum of fio ramp+runtime[/] (24 cells): "
            f"{wall:.1f} s / {report.fio_seconds:.1f} s = {wall / report.fio_seconds:.2f}"
        )

        store = open_store(Path(tmp) / "thesis")
        for doc in read_documents(REPO / "examples" / "thesis-azure-runs.csv", "thesis"):
            publish(doc, None, store, None)
        t0 = time.monotonic()
        aggregate(store, "thesis", out=Path(tmp) / "parquet")
        console.print(
            f"[bold]3. aggregation[/] of 800 results (local store, all models + Parquet): {time.monotonic() - t0:.2f} s"
        )
    subprocess.run(["rm", "-rf", "/dev/shm/pvbench-bench"])


if __name__ == "__main__":
    sys.exit(main())
