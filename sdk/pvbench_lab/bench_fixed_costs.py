"""Where an aggregation's time goes, in parts each timed on its own (a script, not a timed test).

docs/aggregation.md (*Where it still falls short*) says what an addition and a full aggregation
spend their time on; this prints those parts on the machine it runs on:

  imports     each in a fresh interpreter, the median of --repeat: Python alone, then what an
              aggregation imports (pvbench's CLI and its aggregation, DuckDB, the result schema's
              pydantic models, NumPy, scipy.special) and, for contrast, scipy.stats (which no
              aggregation imports); each also shown beyond what it needs first
  documents   one run's 1,000 result.json (pvbench_lab.bench_aggregate's synthetic copies of one real
              fio result), per document: reading its bytes from a local store, json.loads, the
              compactor's validation (compact.validate: pydantic), and its run's listing handed
              to the reader process of a full aggregation and back, pickled, the way it was
              (StoredObjects) and the way it is (flat lists)
  functions   a Python function called from SQL, per row (the models' f_pvalue, t_quantile and
              warmup_pvalue are): a trivial one and f_pvalue, against the same p-values computed
              on the whole column at once; 1,400 rows are the cells of the benchmark's campaign
  compaction  one batch of --batch documents through DuckDB, set up and stepped as a full
              aggregation compacts each batch (runner.prepare_compaction: one DuckDB thread fewer
              than the process may use, one on 2 cores; compact.compaction_steps): every model of
              the compact, the split of its tables into each run's files (a batch of two runs or
              more), the documents table

Usage: .venv/bin/python -m pvbench_lab.bench_fixed_costs [--repeat 5] [--batch 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from rich.console import Console
from rich.table import Table

from pvbench.analytics import compact, runner
from pvbench.analytics.connection import connect
from pvbench.analytics.models import analytics_dir, compaction_models, discover_models
from pvbench.store import LocalStore
from pvbench_lab.bench_aggregate import CAMPAIGN, PER_RUN, REPO, byte_compile, template_document, write_runs

# (what, the import statement, the row it is measured beyond)
IMPORTS = [
    ("Python alone", "pass", None),
    ("pvbench.cli.main (the command)", "import pvbench.cli.main", "Python alone"),
    (
        "… and pvbench.pipeline.tables (aggregate)",
        "import pvbench.cli.main, pvbench.pipeline.tables",
        "pvbench.cli.main (the command)",
    ),
    ("duckdb", "import duckdb", "Python alone"),
    ("pvbench.results.schema (pydantic)", "import pvbench.results.schema", "Python alone"),
    ("numpy", "import numpy", "Python alone"),
    ("numpy, scipy.special (every aggregation)", "import numpy, scipy.special", "numpy"),
    ("numpy, scipy.stats (no aggregation)", "import numpy, scipy.stats", "numpy"),
]


def import_times(repeat: int) -> dict[str, float]:
    """Each import's median wall time in a fresh interpreter, the rows interleaved round by round."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}  # as the pvbench command sets it
    measured: dict[str, list[float]] = {what: [] for what, _, _ in IMPORTS}
    for _ in range(repeat):
        for what, statement, _ in IMPORTS:
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", statement], check=True, env=env)
            measured[what].append(time.perf_counter() - started)
    return {what: statistics.median(times) for what, times in measured.items()}


def per_item(ways: dict[str, Callable[[], object]], repeat: int, items: int, warm_up: bool = False) -> dict[str, float]:
    """Each way's median wall time over ``repeat`` calls, divided by the ``items`` a call handles."""
    out = {}
    for what, way in ways.items():
        if warm_up:
            way()
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            way()
            times.append(time.perf_counter() - started)
        out[what] = statistics.median(times) / items
    return out


def print_per_item(
    console: Console, title: str, columns: tuple[str, str, str], measured: dict[str, float], digits: int, scale: int
) -> None:
    """A table of per_item's figures: µs per item (``digits`` decimals), and seconds per ``scale`` items."""
    table = Table(title=title)
    for column in columns:
        table.add_column(column, justify="left" if column == columns[0] else "right")
    for what, seconds in measured.items():
        table.add_row(what, f"{seconds * 1e6:.{digits}f} µs", f"{seconds * scale:.3f} s")
    console.print(table)


def document_times(store: LocalStore, repeat: int) -> dict[str, float]:
    """Per document of one run: reading, json.loads, validation, and handing the run's listing to
    the reader process and back (the medians of ``repeat``)."""
    listing = next(iter(compact.iter_runs(store, CAMPAIGN)))
    keys = [o.key for o in listing.objects]
    contents = [store.get_bytes(k) for k in keys]

    def as_objects() -> None:  # until 67b79ba: the listing there, and back inside the ReadRun
        pickle.loads(pickle.dumps(listing))
        pickle.loads(pickle.dumps(listing))

    def as_lists() -> None:  # as the read-ahead hands a run to the reader process; the ReadRun back without it
        _, _, *flat = pickle.loads(pickle.dumps(compact.flat_listing(listing)))
        tuple(compact.listed_objects(*flat))

    ways = {
        "read the bytes (local store)": lambda: [store.get_bytes(k) for k in keys],
        "json.loads": lambda: [json.loads(c) for c in contents],
        "validate (pydantic, as the compactor does)": lambda: [compact.validate(c) for c in contents],
        "its listing to the reader process and back, as StoredObjects (pickled)": as_objects,
        "the same as flat lists, as handed over since 67b79ba": as_lists,
    }
    return per_item(ways, repeat, len(keys))


def sql_function_times(repeat: int, rows: int = 10_000) -> dict[str, float]:
    """Per row: a Python function called from SQL (as the models call f_pvalue, t_quantile,
    warmup_pvalue), trivial and f_pvalue itself, against the same F p-values computed at once on
    the column by scipy.special (the medians of ``repeat``)."""
    import numpy as np
    from duckdb.sqltypes import DOUBLE
    from scipy import special

    from pvbench.stats.functions import register_functions

    con = connect()  # as an aggregation connects (its pandas guard included)
    register_functions(con)
    con.create_function("pvbench_bench_trivial", lambda f, df1, df2: 0.5, [DOUBLE, DOUBLE, DOUBLE], DOUBLE)
    con.execute(f"CREATE TABLE f_stats AS SELECT 3 * random() AS f, 3.0 AS df1, 400.0 AS df2 FROM range({rows})")
    ways = {
        "a trivial Python function, from SQL": lambda: con.execute(
            "SELECT sum(pvbench_bench_trivial(f, df1, df2)) FROM f_stats"
        ).fetchall(),
        "f_pvalue (scipy.special.fdtrc), from SQL": lambda: con.execute(
            "SELECT sum(f_pvalue(f, df1, df2)) FROM f_stats"
        ).fetchall(),
        "the same p-values, the column at once (NumPy)": lambda: special.fdtrc(
            *(np.asarray(c) for c in con.execute("SELECT df1, df2, f FROM f_stats").fetchnumpy().values())
        ).sum(),
    }
    try:
        return per_item(ways, repeat, rows, warm_up=True)  # SciPy's first call, DuckDB's first plan untimed
    finally:
        con.close()


def compaction_times(store: LocalStore, repeat: int) -> dict[str, float]:
    """One batch of every run in ``store`` through the compaction, step by step, as a full
    aggregation compacts it (the medians of ``repeat`` passes)."""
    models, _ = compaction_models(discover_models(analytics_dir()))
    reads = [compact.read_run(store, listing) for listing in compact.iter_runs(store, CAMPAIGN)]
    measured: dict[str, list[float]] = {}
    try:
        for _ in range(repeat):
            con = connect()
            runner.prepare_compaction(con, many_runs=True)  # as a full aggregation compacts a batch
            for what, step in compact.compaction_steps(con, reads, models):
                started = time.perf_counter()
                step()
                measured.setdefault(what, []).append(time.perf_counter() - started)
            con.close()  # the next pass's split replaces the files this one put in the runs' folders
    finally:
        for r in reads:
            r.cleanup()
    return {what: statistics.median(times) for what, times in measured.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="passes of each measurement (medians shown)")
    parser.add_argument(
        "--batch", type=int, default=10_000, help="documents compacted at once (a full aggregation's batch)"
    )
    args = parser.parse_args()
    console = Console(width=max(120, Console().width))
    byte_compile(REPO / "sdk")

    imports = import_times(args.repeat)
    table = Table(title=f"Imports: a fresh interpreter each, median of {args.repeat}")
    for column in ("import", "wall", "beyond", "beyond what"):
        table.add_column(column, justify="right" if column in ("wall", "beyond") else "left")
    for what, _, beyond in IMPORTS:
        extra = f"{imports[what] - imports[beyond]:.2f} s" if beyond else ""
        table.add_row(what, f"{imports[what]:.2f} s", extra, beyond or "")
    console.print(table)

    with tempfile.TemporaryDirectory(prefix="pvbench-fixed-costs-") as tmp:
        work = Path(tmp)
        (work / "fio").mkdir()
        template = template_document(work / "fio")
        store = LocalStore(work / "store")
        write_runs(store, template, 0, max(1, args.batch // PER_RUN))

        print_per_item(
            console,
            f"Per document, one run of {PER_RUN:,} (median of {args.repeat})",
            ("step", "per document", "per 100,000"),
            document_times(store, args.repeat),
            digits=0,
            scale=100_000,
        )
        print_per_item(
            console,
            f"Python functions in SQL, per row of 10,000 (median of {args.repeat})",
            ("call", "per row", "per 1,400 rows"),
            sql_function_times(args.repeat),
            digits=1,
            scale=1400,
        )

        steps = compaction_times(store, args.repeat)
        total = sum(steps.values())
        documents_in_batch = max(1, args.batch // PER_RUN) * PER_RUN
        table = Table(
            title=f"Compacting one batch of {documents_in_batch:,} documents, {runner.compaction_threads()} DuckDB thread(s)"
            f" (median of {args.repeat})"
        )
        for column in ("step", "wall", "share"):
            table.add_column(column, justify="left" if column == "step" else "right")
        for what, seconds in steps.items():
            table.add_row(what, f"{seconds:.3f} s", f"{seconds / total:.0%}")
        table.add_row("all", f"{total:.3f} s", f"{total / documents_in_batch * 100_000:.1f} s per 100,000 documents")
        console.print(table)


if __name__ == "__main__":
    main()
