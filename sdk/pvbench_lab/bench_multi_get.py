"""Reading one run's result documents from MinIO: libcurl's multi interface against the minio SDK
in threads, side by side (a script, not a timed test).

`pvbench aggregate` reads a run's result.json documents through S3Store.get_many, which makes the
GETs with pycurl on URLs the SDK presigns (pvbench.store.multi_get). Before, each was an SDK
get_object in one of S3_READERS threads. This writes ``--runs`` runs of 1,000 documents
(pvbench_lab.bench_aggregate's copies of one real fio result) into a real MinIO on loopback, then reads
a run at a time alternately one way and the other (the same warm client), and prints each read's wall time and the CPU this process spent on it, then the medians and their
ratios. The MinIO server's own CPU is not in it.

Usage: .venv/bin/python -m pvbench_lab.bench_multi_get [--runs 6]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.table import Table

from pvbench.store.layout import RESULT_FILE, results_prefix, run_of
from pvbench.store.s3 import S3_READERS
from pvbench_lab.bench_aggregate import CAMPAIGN, minio_store, print_two_ways, template_document, write_runs


def read_with_libcurl(store, keys: list[str]) -> int:
    total = 0
    for _, content in store.get_many(keys):
        if isinstance(content, Exception):
            raise content
        total += len(content)
    return total


def read_with_sdk_threads(store, keys: list[str]) -> int:
    with ThreadPoolExecutor(S3_READERS) as pool:
        return sum(len(b) for b in pool.map(store.get_bytes, keys))


WAYS = {"libcurl multi (as shipped)": read_with_libcurl, f"SDK get_object, {S3_READERS} threads": read_with_sdk_threads}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=6)
    args = parser.parse_args()
    console = Console(width=160)
    with tempfile.TemporaryDirectory(prefix="pvbench-bench-get-") as tmp:
        work = Path(tmp)
        with minio_store(work, "bench-get") as store:
            # one run per read: each way reads runs the other has not read (no server cache favours either)
            write_runs(store, template_document(work), 0, args.runs * len(WAYS))
            keys = [o.key for o in store.list_objects(results_prefix(CAMPAIGN)) if o.key.endswith(RESULT_FILE)]
            runs: dict[str, list[str]] = {}
            for key in keys:
                runs.setdefault(run_of(key)[1], []).append(key)
            ordered = [runs[r] for r in sorted(runs)]
            read_with_libcurl(store, ordered[0][:50])  # connections and the bucket's region, once
            read_with_sdk_threads(store, ordered[0][:50])
            measured: dict[str, list[tuple[float, float]]] = {way: [] for way in WAYS}
            table = Table(title=f"reading 1,000 result documents from MinIO ({args.runs} rounds, alternating)")
            for col in ("round", "way", "documents", "MB", "wall s", "client CPU s"):
                table.add_column(col, justify="right" if col != "way" else "left")
            for round_ in range(args.runs):
                for i, (way, read) in enumerate(WAYS.items()):
                    run_keys = ordered[round_ * len(WAYS) + i]
                    t0, c0 = time.monotonic(), time.process_time()
                    size = read(store, run_keys)
                    wall, cpu = time.monotonic() - t0, time.process_time() - c0
                    measured[way].append((wall, cpu))
                    table.add_row(
                        str(round_ + 1), way, f"{len(run_keys):,}", f"{size / 1e6:.1f}", f"{wall:.3f}", f"{cpu:.3f}"
                    )
            console.print(table)
            print_two_ways(console, measured, "SDK threads ÷ libcurl", 3)


if __name__ == "__main__":
    main()
