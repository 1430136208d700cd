"""Listing a campaign's result documents on MinIO: pvbench's pages (one signed ListObjectsV2
request each, read by ElementTree's C parser) against the minio SDK's listing, side by side (a
script, not a timed test).

S3Store.list_objects used to be the SDK's list_objects, which makes a Python object of every key,
its date parsed; every aggregation lists the campaign's documents, and adding a run lists the
run's and the campaign's compacts. This writes ``--runs`` runs of 1,000 documents
(pvbench_lab.bench_aggregate's copies of one real fio result) into a real MinIO on loopback, then lists
the campaign ``--rounds`` times each way, alternating, and prints each listing's wall time and
the CPU this process spent on it, the medians and their ratios. The MinIO server's own CPU is not
in it (it shares the machine's cores, so less client CPU also shortens the wall time).

Usage: .venv/bin/python -m pvbench_lab.bench_s3_listing [--runs 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from pvbench.store.layout import results_prefix
from pvbench_lab.bench_aggregate import CAMPAIGN, minio_store, print_two_ways, template_document, write_runs


def list_as_shipped(store) -> int:
    return sum(1 for _ in store.list_objects(results_prefix(CAMPAIGN)))


def list_with_sdk(store) -> int:
    return sum(1 for _ in store.sdk_list_objects(results_prefix(CAMPAIGN), None, len(store.prefix) + 1))


WAYS = {"pages parsed by ElementTree (as shipped)": list_as_shipped, "minio SDK list_objects": list_with_sdk}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    console = Console(width=160)
    with tempfile.TemporaryDirectory(prefix="pvbench-bench-list-") as tmp:
        work = Path(tmp)
        with minio_store(work, "bench-list") as store:
            write_runs(store, template_document(work), 0, args.runs)
            for list_ in WAYS.values():  # imports, connections and the bucket's region, once each
                list_(store)
            measured: dict[str, list[tuple[float, float]]] = {way: [] for way in WAYS}
            table = Table(title=f"listing {args.runs:,} runs of result documents on MinIO (alternating)")
            for col in ("round", "way", "objects", "wall s", "client CPU s"):
                table.add_column(col, justify="right" if col != "way" else "left")
            for round_ in range(args.rounds):
                for way, list_ in WAYS.items():
                    t0, c0 = time.monotonic(), time.process_time()
                    n = list_(store)
                    wall, cpu = time.monotonic() - t0, time.process_time() - c0
                    measured[way].append((wall, cpu))
                    table.add_row(str(round_ + 1), way, f"{n:,}", f"{wall:.2f}", f"{cpu:.2f}")
            console.print(table)
            print_two_ways(console, measured, "SDK ÷ as shipped", 2)


if __name__ == "__main__":
    main()
