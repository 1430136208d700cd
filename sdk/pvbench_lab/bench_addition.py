"""Where adding a run spends its time, phase by phase, in the aggregation itself (a script, not a
timed test).

pvbench_lab.bench_aggregate times `pvbench aggregate --run` whole; bench_fixed_costs times parts
on their own. This makes the same synthetic campaign (20 classes × 10 workloads × 5 repetitions
a run, 30 s of seconds per result), aggregates it once, then adds --additions runs one by one, each
aggregated in a fresh process the way `pvbench aggregate --run <it> --out DIR` does it
(pvbench.pipeline.tables.aggregate), with each phase timed where it runs:

  start-up     the process's start to pvbench and its aggregation imported
  compaction   listing the run and compacting its documents (runner.refresh_compacts)
  loading      the rest of the aggregation: the campaign's compacts and snapshot read as tables,
               the inputs installed, the campaign's lock
  models       the campaign's SQL models, two at a time where they do not read each other (the
               slowest are listed: wall times, which share the cores), and the Python steps
  beside       the Python steps computed and written in threads beside the models (the
               comparisons, the history's judging): their wall times, summed (the runner logs
               each); they share the 2 cores and the GIL with the models
  writing      the tables written as Parquet
  total        the process's start to its end

Wall seconds and the process's CPU seconds (every thread's) during the phase, medians over the
additions, and the largest models' medians.

--slower PCT: the runs added are PCT% slower than the campaign's (every class, every workload: a
storage change that hurt), so from the third addition on every series of the history has a step
(its judging is then at its dearest: each series segmented, its change point tested and sized).

--without comparisons,history: what the Python steps' judging costs an addition. Each addition is
then followed by one with that judging skipped (no comparison rows, no verdict on any history series;
what they read is still read), alternated on the same campaign, and both
are shown side by side with the median ratio of the pairs: how much wall time the step's Python,
sharing the cores and the GIL with the models, adds.

Usage: .venv/bin/python -m pvbench_lab.bench_addition [--results 100000] [--additions 5]
                                                      [--slower PCT] [--without comparisons,history]
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

PHASES = ("start-up", "compaction", "loading", "models", "beside", "writing", "total")
# The Python steps' judging --without can skip: (module, function) replaced by one returning no rows.
SKIPPABLE = {
    "comparisons": ("pvbench.stats.tables", "report_comparison_rows"),
    "history": ("pvbench.stats.history", "judge_all"),
}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _since_start() -> float:
    """Seconds since this process started (/proc: the kernel's start time, in clock ticks)."""
    ticks = os.sysconf("SC_CLK_TCK")
    start = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19]) / ticks
    return float(Path("/proc/uptime").read_text().split()[0]) - start


def one_addition(store_url: str, campaign: str, run: str, out: Path, skipped: Sequence[str] = ()) -> dict:
    """Add ``run`` as `pvbench aggregate --run` does, each phase timed; in a fresh process.
    ``skipped``: SKIPPABLE steps whose judging returns no rows."""
    started = time.monotonic() - _since_start()
    import pvbench.cli.main  # noqa: F401  (what the command imports before it aggregates)
    from pvbench.analytics import outputs, runner
    from pvbench.pipeline import tables
    from pvbench.store import open_store

    for step in skipped:
        module, function = SKIPPABLE[step]
        setattr(importlib.import_module(module), function, lambda *args, **kwargs: [])

    spans: dict[str, list[float]] = {"start-up": [time.monotonic() - started, _cpu()]}
    marks: dict[str, tuple[float, float]] = {}
    models: dict[str, float] = {}
    beside: list[float] = []

    def timed(name, fn):
        def wrapper(*args, **kwargs):
            wall, cpu = time.monotonic(), _cpu()
            try:
                return fn(*args, **kwargs)
            finally:
                marks[name] = (time.monotonic() - wall, _cpu() - cpu)

        return wrapper

    class Timings(logging.Handler):  # what the runner logs: each model's time, each Python step's
        def emit(self, record):
            if record.msg == "model %s: %.2f s":
                models[record.args[0]] = record.args[1]
            elif record.msg.startswith("beside the models"):
                beside.append(record.args[-1])

    runner.refresh_compacts = timed("compaction", runner.refresh_compacts)
    runner.run_models = timed("models", runner.run_models)
    outputs.write_parquet = timed("writing", outputs.write_parquet)
    logger = logging.getLogger("pvbench.analytics")
    logger.addHandler(Timings())
    logger.setLevel(logging.DEBUG)

    build = time.monotonic(), _cpu()
    tables.aggregate(open_store(store_url), campaign, run, out=out)
    total = time.monotonic() - started, _cpu()
    # loading: what build_tables did besides compacting and running the models
    build_wall = sum(marks[p][0] for p in ("compaction", "models", "writing"))
    build_cpu = sum(marks[p][1] for p in ("compaction", "models", "writing"))
    loading = (total[0] - spans["start-up"][0] - build_wall, total[1] - build[1] - build_cpu)
    phases = {
        "start-up": spans["start-up"],
        "compaction": list(marks["compaction"]),
        "loading": list(loading),
        "models": list(marks["models"]),
        "beside": [sum(beside), None],
        "writing": list(marks["writing"]),
        "total": list(total),
    }
    return {"phases": phases, "models": models}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", type=int, default=100_000)
    parser.add_argument("--additions", type=int, default=5)
    parser.add_argument("--slower", type=float, default=0.0, help="the runs added this many %% slower")
    parser.add_argument(
        "--without", default="", help=f"comma-separated, of {', '.join(SKIPPABLE)}: also time additions without it"
    )
    parser.add_argument("--one", nargs=4, metavar=("STORE", "CAMPAIGN", "RUN", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--skipped", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        store, campaign, run, out = args.one
        print(json.dumps(one_addition(store, campaign, run, Path(out), _steps(args.skipped))))
        return
    without = _steps(args.without)
    unknown = sorted(set(without) - set(SKIPPABLE))
    if unknown:
        parser.error(f"--without: no step {', '.join(unknown)} (one of: {', '.join(SKIPPABLE)})")

    from rich.console import Console
    from rich.table import Table

    from pvbench.store import LocalStore
    from pvbench_lab.bench_aggregate import CAMPAIGN, PER_RUN, REPO, byte_compile, template_document, write_runs

    byte_compile(REPO / "sdk")
    console = Console(width=160)
    runs = max(1, args.results // PER_RUN)
    variants = [()] + ([without] if without else [])  # alternated: each addition, then one without
    label = {variant: f"without {' and '.join(variant)}" for variant in variants if variant}
    measured: dict[tuple, list[dict]] = {variant: [] for variant in variants}
    with tempfile.TemporaryDirectory(prefix="pvbench-bench-addition-") as tmp:
        work = Path(tmp)
        store = LocalStore(work / "store")
        template = template_document(work)
        console.print(f"writing {runs * PER_RUN:,} results …")
        write_runs(store, template, 0, runs)
        out = work / "tables"
        pvbench = str(REPO / ".venv" / "bin" / "pvbench")
        full = ["aggregate", "--store", str(store.root), "--campaign", CAMPAIGN, "--out", str(out)]
        done = subprocess.run([pvbench, *full], capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"pvbench {' '.join(full)} failed:\n{done.stderr[-2000:]}")
        index = runs
        for _ in range(args.additions):
            for variant in variants:
                write_runs(store, template, index, 1, level=1 - args.slower / 100)
                one = [str(store.root), CAMPAIGN, f"run-{index:04d}", str(out)]
                done = subprocess.run(
                    [sys.executable, "-m", "pvbench_lab.bench_addition", "--one", *one, "--skipped", ",".join(variant)],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                measured[variant].append(json.loads(done.stdout.strip().splitlines()[-1]))
                total = measured[variant][-1]["phases"]["total"]
                shown = f" ({label[variant]})" if variant else ""
                console.print(f"  run-{index:04d}{shown}: {total[0]:.2f} s, {total[1]:.2f} s of CPU")
                index += 1

    def median(values):
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None

    table = Table(
        title=f"adding a run of {PER_RUN:,} results to {runs * PER_RUN:,} (medians of {args.additions} additions)"
    )
    table.add_column("phase")
    for variant in variants:
        shown = f", {label[variant]}" if variant else ""
        table.add_column(f"wall{shown}", justify="right")
        table.add_column(f"CPU (every thread){shown}", justify="right")
    for phase in PHASES:
        cells = []
        for variant in variants:
            wall = median(m["phases"][phase][0] for m in measured[variant])
            cpu = median(m["phases"][phase][1] for m in measured[variant])
            cells += [f"{wall:.2f} s", "–" if cpu is None else f"{cpu:.2f} s"]
        table.add_row(phase, *cells)
    console.print(table)
    with_all = measured[()]
    names = {name for m in with_all for name in m["models"]}
    slowest = sorted(names, key=lambda n: -median(m["models"].get(n) for m in with_all))[:8]
    console.print(
        "slowest models: " + ", ".join(f"{n} {median(m['models'].get(n) for m in with_all):.2f} s" for n in slowest),
        soft_wrap=True,  # one line, whatever the terminal's width
    )
    if without:
        pairs = [b["phases"]["total"][0] / a["phases"]["total"][0] for a, b in zip(with_all, measured[without])]
        console.print(
            f"{label[without]}: median pair ratio {median(pairs):.2f} of the total wall time "
            f"({len(pairs)} pair{'' if len(pairs) == 1 else 's'})"
        )


def _steps(text: str) -> tuple[str, ...]:
    return tuple(step.strip() for step in text.split(",") if step.strip())


if __name__ == "__main__":
    main()
