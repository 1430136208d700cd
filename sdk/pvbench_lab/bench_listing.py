"""Listing a local store of 100,000 results in one thread, in four, and as shipped (one thread
until the disk is what it waits on, then four), warm and cold (a script, not a timed test).

This writes ``--runs`` runs of 1,000 results (pvbench_lab.bench_aggregate's synthetic copies of one
real fio result), then lists them each way: with the page cache warm (the median of ``--rounds``
listings), and, when this process may write /proc/sys/vm/drop_caches (root), cold, right after
dropping the cache. It prints the wall time and the CPU this process spent.

Usage: .venv/bin/python -m pvbench_lab.bench_listing [--runs 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

import pvbench.store.local as local_store
from pvbench.store.layout import RESULT_FILE, results_prefix
from pvbench_lab.bench_aggregate import CAMPAIGN, drop_caches, template_document, write_runs

# (LIST_THREADS, DISK_READ_BLOCKS): below 0 blocks, every folder after the first goes to the threads
WAYS = {
    "one thread": (1, -1),
    "four threads": (4, -1),
    "as shipped": (local_store.LIST_THREADS, local_store.DISK_READ_BLOCKS),
}


def listed(store, way: str) -> tuple[float, float, int]:
    local_store.LIST_THREADS, local_store.DISK_READ_BLOCKS = WAYS[way]
    t0, c0 = time.monotonic(), time.process_time()
    n = sum(1 for o in store.list_objects(results_prefix(CAMPAIGN)) if o.key.endswith(RESULT_FILE))
    return time.monotonic() - t0, time.process_time() - c0, n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    console = Console(width=140)
    with tempfile.TemporaryDirectory(prefix="pvbench-bench-list-") as tmp:
        store = local_store.LocalStore(Path(tmp) / "store")
        console.print(f"writing {args.runs * 1000:,} results …")
        write_runs(store, template_document(Path(tmp)), 0, args.runs)
        os.sync()
        table = Table(title=f"listing {args.runs * 1000:,} results in a local store")
        for col in ("way", "warm: wall s (median)", "warm: CPU s", "cold: wall s", "cold: CPU s"):
            table.add_column(col, justify="right")
        for way in WAYS:
            listed(store, way)  # warm the cache
            warm = [listed(store, way) for _ in range(args.rounds)]
            cold = listed(store, way) if drop_caches() else None
            table.add_row(
                way,
                f"{statistics.median(w for w, _, _ in warm):.2f}",
                f"{statistics.median(c for _, c, _ in warm):.2f}",
                f"{cold[0]:.2f}" if cold else "– (not root)",
                f"{cold[1]:.2f}" if cold else "–",
            )
        console.print(table)


if __name__ == "__main__":
    main()
