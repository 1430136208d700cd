"""A full aggregation at two commits, alternated on one store (a script, not a timed test).

ci/bench_aggregate.py runs one commit's code; between two of its runs this machine's timings move
by up to 30 %, more than most changes to the aggregation save. This script makes one synthetic
campaign (the same as bench_aggregate's) and times `pvbench aggregate` from nothing at the base
commit and at the working tree in turn, PAIRS times (the order swapped every other pair), with
the store's read (list + get) before each pair. It prints every timing, the medians, and the
median of each pair's ratio (working tree ÷ base), which is what the two share the same minute of
the machine for.

The base runs from a git worktree made for it (removed after), with this checkout's virtualenv:
its pvbench package and analytics/ SQL, nothing else of it.

Usage: .venv/bin/python ci/bench_aggregate_ab.py --base <commit> [--results 100000] [--pairs 5]
       [--tmpfs]   (the store in /dev/shm: the disk's waits taken out, CPU left)
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from bench_aggregate import PER_RUN, REPO, byte_compile, full_aggregation, read_bytes, template_document, write_runs

from pvbench.store import LocalStore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", required=True, help="the commit to compare the working tree with")
    parser.add_argument("--results", type=int, default=100_000)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--tmpfs", action="store_true", help="make the store in /dev/shm")
    args = parser.parse_args()
    base = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", args.base], check=True, capture_output=True, text=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="pvbench-ab-") as tmp:
        work = Path(tmp)
        tree = work / "base"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), base], check=True)
        for sdk in (tree / "sdk", REPO / "sdk"):
            byte_compile(sdk)
        store_root = Path(tempfile.mkdtemp(prefix="pvbench-ab-store-", dir="/dev/shm" if args.tmpfs else tmp))
        try:
            variants = {
                f"base {base}": {"PYTHONPATH": str(tree / "sdk"), "PVBENCH_ANALYTICS_DIR": str(tree / "analytics")},
                "working tree": {"PYTHONPATH": str(REPO / "sdk"), "PVBENCH_ANALYTICS_DIR": str(REPO / "analytics")},
            }
            store = LocalStore(store_root)
            runs = max(1, args.results // PER_RUN)
            print(f"writing {runs * PER_RUN:,} results to {store_root} …", flush=True)
            write_runs(store, template_document(work), 0, runs)
            os.sync()
            out = work / "tables"
            walls: dict[str, list[float]] = {name: [] for name in variants}
            cpus: dict[str, list[float]] = {name: [] for name in variants}
            reads = []
            for pair in range(args.pairs):
                reads.append(read_bytes(store)[0])
                order = list(variants) if pair % 2 == 0 else list(reversed(variants))
                for name in order:
                    measured = full_aggregation(store, str(store_root), out, {**os.environ, **variants[name]})
                    if measured is None:
                        raise SystemExit(f"{name}: pvbench aggregate failed")
                    walls[name].append(measured[0])
                    cpus[name].append(measured[2])
                print(
                    f"pair {pair + 1}: read {reads[-1]:.1f} s; "
                    + ", ".join(f"{name} {walls[name][-1]:.1f} s" for name in variants),
                    flush=True,
                )
        finally:
            shutil.rmtree(store_root, ignore_errors=True)
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], check=False)
    old, new = walls[f"base {base}"], walls["working tree"]
    ratios = [n / o for n, o in zip(new, old)]
    where = "tmpfs" if args.tmpfs else "disk"
    print(f"\nfull aggregation of {runs * PER_RUN:,} results, local store on {where}, {args.pairs} alternated pairs")
    # CPU: user + system of the command and its reader process; over the wall time, the cores it kept busy
    print("| code | full aggregation, each pair | median | median ÷ read | CPU, median | CPU ÷ wall |")
    print("|---|---|---|---|---|---|")
    for name, times in walls.items():
        print(
            f"| {name} | {', '.join(f'{t:.1f}' for t in times)} s | {statistics.median(times):.1f} s"
            f" | {statistics.median(t / r for t, r in zip(times, reads)):.1f}×"
            f" | {statistics.median(cpus[name]):.1f} s | {statistics.median(c / t for c, t in zip(cpus[name], times)):.2f} |"
        )
    print(f"| read bytes | {', '.join(f'{r:.1f}' for r in reads)} s | {statistics.median(reads):.1f} s | | | |")
    print(
        f"\nworking tree ÷ base, each pair: {', '.join(f'{r:.2f}' for r in ratios)};"
        f" median {statistics.median(ratios):.2f}, faster in {sum(r < 1 for r in ratios)} of {len(ratios)}"
    )


if __name__ == "__main__":
    main()
