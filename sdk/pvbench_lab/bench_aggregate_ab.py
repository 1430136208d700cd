"""A full aggregation, or adding a run, at two commits, alternated on one store (a script, not a
timed test).

pvbench_lab.bench_aggregate runs one commit's code; between two of its runs this machine's timings move
by up to 30 %, more than most changes to the aggregation save. This script makes one synthetic
campaign (the same as bench_aggregate's) and times `pvbench aggregate` from nothing at the base
commit and at the working tree in turn, PAIRS times (the order swapped every other pair), with
the store's read (list + get) before each pair. It prints every timing, the medians, and the
median of each pair's ratio (working tree ÷ base), which is what the two share the same minute of
the machine for.

With --add, it times adding a run instead: the campaign aggregated once (the working tree's code,
which writes its snapshot), then, PAIRS times, one more run of 1,000 results written and
`pvbench aggregate --run <it>` at each commit in turn (each commit adds its own run: the store
grows by two runs a pair, and every (SNAPSHOT_LAG + 1)th addition also writes a snapshot part,
whichever commit makes it; the medians are what to read). --minio makes the store in a MinIO on
loopback instead of a local folder (PVBENCH_TOOLS or .tools/ must hold the minio binary).
--slower PCT makes the runs added PCT% slower than the campaign's: from the third addition on,
every series of the history has a step (as after a storage change that hurt).

With --verify, it times an aggregation with nothing new instead (every run listed and checked
against the snapshot, the campaign's tables made again): the campaign aggregated once (the working
tree's code), then `pvbench aggregate` at each commit in turn, PAIRS times; --minio as with --add.

A full aggregation and one with nothing new read the same results at both commits: the tables each
wrote last are then compared, row for row (a change meant to be faster should say "the same"). An
addition's are not: each commit adds a run of its own.

Where the two commits' compacts differ in format (COMPACT_FORMAT), each would take the other's
compacts and snapshot for stale and compact its runs again: --add and --verify then give each
commit a copy of the campaign of its own (the same results, aggregated once by its own code), and
say so.

The base runs from a git worktree made for it (removed after), with this checkout's virtualenv:
its pvbench package and analytics/ SQL, nothing else of it.

Usage: .venv/bin/python -m pvbench_lab.bench_aggregate_ab --base <commit> [--results 100000] [--pairs 5]
       [--tmpfs]   (the store in /dev/shm: the disk's waits taken out, CPU left)
       [--add [--minio] [--slower PCT]]   (adding a run instead of the full aggregation)
       [--verify [--minio]]   (an aggregation with nothing new instead)
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import re
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from pvbench.store import LocalStore, open_store
from pvbench.testing.tables import columns_of, differing_rows, rows_apart
from pvbench_lab.bench_aggregate import (
    CAMPAIGN,
    PER_RUN,
    REPO,
    byte_compile,
    full_aggregation,
    minio_store,
    read_bytes,
    template_document,
    timed,
    write_runs,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", required=True, help="the commit to compare the working tree with")
    parser.add_argument("--results", type=int, default=100_000)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--tmpfs", action="store_true", help="make the store in /dev/shm")
    parser.add_argument("--add", action="store_true", help="time adding a run, not the full aggregation")
    parser.add_argument("--verify", action="store_true", help="time an aggregation with nothing new")
    parser.add_argument(
        "--slower",
        type=float,
        default=0.0,
        help="with --add: the runs added this many %% slower (a step in every series)",
    )
    parser.add_argument("--minio", action="store_true", help="with --add or --verify: the store in a MinIO on loopback")
    args = parser.parse_args()
    if args.add and args.verify:
        parser.error("--add or --verify, not both")
    if args.minio and not (args.add or args.verify):
        parser.error("--minio goes with --add or --verify (the full aggregation's A/B is of a local store)")
    base = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", args.base], check=True, capture_output=True, text=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="pvbench-ab-") as tmp:
        work = Path(tmp)
        tree = work / "base"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), base], check=True)
        for sdk in (tree / "sdk", REPO / "sdk"):
            byte_compile(sdk)
        variants = {
            f"base {base}": {"PYTHONPATH": str(tree / "sdk"), "PVBENCH_ANALYTICS_DIR": str(tree / "analytics")},
            "working tree": {"PYTHONPATH": str(REPO / "sdk"), "PVBENCH_ANALYTICS_DIR": str(REPO / "analytics")},
        }
        runs = max(1, args.results // PER_RUN)
        try:
            with contextlib.ExitStack() as stack:
                formats = {name: compact_format(Path(extra["PYTHONPATH"])) for name, extra in variants.items()}
                own = (args.add or args.verify) and len(set(formats.values())) > 1
                if own:
                    print(
                        f"the compact's format differs ({' → '.join(formats.values())}): each commit reads a copy of its own"
                    )
                made = open_bench_stores(stack, work, args, len(variants) if own else 1)
                template = template_document(work)
                for store, url in made:
                    print(f"writing {runs * PER_RUN:,} results to {url} …", flush=True)
                    write_runs(store, template, 0, runs)
                os.sync()
                stores = dict(zip(variants, made if own else made * len(variants)))
                env = {name: {**os.environ, **extra} for name, extra in variants.items()}
                outs = {name: work / f"tables-{i}" for i, name in enumerate(variants)}
                same = None
                if args.add:
                    walls, cpus = additions(stores, template, runs, outs, env, args.pairs, 1 - args.slower / 100)
                elif args.verify:
                    walls, cpus = verifications(stores, outs, env, args.pairs)
                    same = same_tables(*outs.values())
                else:
                    store, url = stores["working tree"]
                    walls, cpus, reads = full_aggregations(store, url, outs, env, args.pairs)
                    same = same_tables(*outs.values())
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], check=False)
    old, new = walls[f"base {base}"], walls["working tree"]
    ratios = [n / o for n, o in zip(new, old)]
    where = "MinIO" if args.minio else "local store on " + ("tmpfs" if args.tmpfs else "disk")
    what = "adding a run to" if args.add else "nothing new in" if args.verify else "full aggregation of"
    timed_one = args.add or args.verify  # one command per variant and pair, no read to compare with
    print(f"\n{what} {runs * PER_RUN:,} results, {where}, {args.pairs} alternated pairs")
    # CPU: user + system of the command and its reader process; over the wall time, the cores it kept busy
    if timed_one:
        print(f"| code | each {'addition' if args.add else 'aggregation'} | median | CPU, median | CPU ÷ wall |")
        print("|---|---|---|---|---|")
    else:
        print("| code | full aggregation, each pair | median | median ÷ read | CPU, median | CPU ÷ wall |")
        print("|---|---|---|---|---|---|")
    for name, times in walls.items():
        over_read = "" if timed_one else f" | {statistics.median(t / r for t, r in zip(times, reads)):.1f}×"
        print(
            f"| {name} | {', '.join(f'{t:.{2 if timed_one else 1}f}' for t in times)} s"
            f" | {statistics.median(times):.{2 if timed_one else 1}f} s{over_read}"
            f" | {statistics.median(cpus[name]):.1f} s | {statistics.median(c / t for c, t in zip(cpus[name], times)):.2f} |"
        )
    if not timed_one:
        print(f"| read bytes | {', '.join(f'{r:.1f}' for r in reads)} s | {statistics.median(reads):.1f} s | | | |")
    print(
        f"\nworking tree ÷ base, each pair: {', '.join(f'{r:.2f}' for r in ratios)};"
        f" median {statistics.median(ratios):.2f}, faster in {sum(r < 1 for r in ratios)} of {len(ratios)}"
    )
    if same is not None:
        print(same)


# Tables whose rows differ only past this many significant digits are the same (rows_apart): two
# runs of the same code add in another order on a busy machine.
DIGITS = 9


def same_tables(base: Path, tree: Path) -> str:
    """A line saying which tables two aggregations wrote alike: the same columns and the same rows,
    each as often (the order of rows aside), their doubles to DIGITS significant digits (those
    named)."""
    names = sorted({p.name for p in base.glob("*.parquet")} | {p.name for p in tree.glob("*.parquet")})
    differing, last_digits = [], []
    for name in names:
        a, b = str(base / name), str(tree / name)
        if not (base / name).exists() or not (tree / name).exists():
            differing.append(f"{Path(name).stem} (written by one only)")
        elif columns_of(a) != columns_of(b):
            differing.append(f"{Path(name).stem} (columns)")
        elif rows := differing_rows(a, b):
            if rows_apart(a, b, DIGITS) == 0:
                last_digits.append(Path(name).stem)
            else:
                differing.append(f"{Path(name).stem} ({rows} row{'s' if rows != 1 else ''})")
    line = f"the tables each wrote: {len(names) - len(differing)} of {len(names)} the same"
    if last_digits:
        line += f" ({', '.join(last_digits)} to {DIGITS} significant digits)"
    return line + (f"; differing: {', '.join(differing)}" if differing else "")


def compact_format(sdk: Path) -> str:
    """The compact's format a commit's code writes (COMPACT_FORMAT in its compact.py, read, not imported)."""
    text = (sdk / "pvbench" / "analytics" / "compact.py").read_text()
    return re.search(r'^COMPACT_FORMAT = "([^"]+)"', text, re.MULTILINE).group(1)


def open_bench_stores(stack: contextlib.ExitStack, work: Path, args: argparse.Namespace, count: int) -> list[tuple]:
    """``count`` (store, its URL): prefixes of one MinIO bucket (--minio), else folders (in /dev/shm
    with --tmpfs), removed when ``stack`` closes."""
    if args.minio:
        first = stack.enter_context(minio_store(work, "bench-ab"))
        urls = ["s3://bench-ab/pvbench"] + [f"s3://bench-ab/pvbench-{i}" for i in range(1, count)]
        return [(first if i == 0 else open_store(url), url) for i, url in enumerate(urls)]
    stores = []
    for _ in range(count):
        root = Path(tempfile.mkdtemp(prefix="pvbench-ab-store-", dir="/dev/shm" if args.tmpfs else work))
        stack.callback(shutil.rmtree, root, True)
        stores.append((LocalStore(root), str(root)))
    return stores


def alternated(env: dict[str, dict], pairs: int, measure, before=lambda: "") -> tuple[dict, dict]:
    """``measure(name)`` (timed()'s result, None if the command failed) for each variant in turn,
    ``pairs`` times, the order swapped every other pair; ``before()`` runs ahead of each pair and
    says what it did for the pair's line. Returns (walls, CPUs) by variant."""
    walls: dict[str, list[float]] = {name: [] for name in env}
    cpus: dict[str, list[float]] = {name: [] for name in env}
    for pair in range(pairs):
        said = before()
        for name in list(env) if pair % 2 == 0 else list(reversed(env)):
            measured = measure(name)
            if measured is None:
                raise SystemExit(f"{name}: pvbench aggregate failed")
            walls[name].append(measured[0])
            cpus[name].append(measured[2])
        print(f"pair {pair + 1}: {said}" + ", ".join(f"{name} {walls[name][-1]:.2f} s" for name in env), flush=True)
    return walls, cpus


def full_aggregations(store, url: str, outs: dict[str, Path], env: dict[str, dict], pairs: int):
    """Each variant's full aggregation (its tables in its folder of ``outs``), alternated, the
    store's read before each pair: (walls, CPUs, reads)."""
    reads: list[float] = []

    def read() -> str:
        reads.append(read_bytes(store)[0])
        return f"read {reads[-1]:.1f} s; "

    walls, cpus = alternated(env, pairs, lambda name: full_aggregation(store, url, outs[name], env[name]), read)
    return walls, cpus, reads


def aggregated_once(stores: dict[str, tuple], outs: dict[str, Path], env: dict[str, dict]) -> None:
    """Each store's campaign aggregated once, the snapshot written: by the working tree's code where
    the variants share the store, else by each variant's own."""
    shared = len({url for _, url in stores.values()}) == 1
    for name in ["working tree"] if shared else list(stores):
        store, url = stores[name]
        if full_aggregation(store, url, outs[name], env[name]) is None:
            raise SystemExit("the first full aggregation failed")


def verifications(stores: dict[str, tuple], outs: dict[str, Path], env: dict[str, dict], pairs: int):
    """The campaign aggregated once (aggregated_once), then each variant aggregates it again with
    nothing new (its tables in its folder of ``outs``), in turn, ``pairs`` times: (walls, CPUs)."""
    aggregated_once(stores, outs, env)

    def verify(name: str):
        command = ["aggregate", "--store", stores[name][1], "--campaign", CAMPAIGN, "--out", str(outs[name])]
        return timed(command, env[name])

    return alternated(env, pairs, verify)


def additions(
    stores: dict[str, tuple],
    template: dict,
    runs: int,
    outs: dict[str, Path],
    env: dict[str, dict],
    pairs: int,
    level: float = 1.0,
):
    """The campaign aggregated once (aggregated_once), then each variant adds a run of its own in
    turn, ``pairs`` times, each at ``level`` (write_runs): (walls, CPUs)."""
    aggregated_once(stores, outs, env)
    indexes = itertools.count(runs)  # each addition a new run

    def add(name: str):
        store, url = stores[name]
        index = next(indexes)
        write_runs(store, template, index, 1, level=level)
        run = ["--run", f"run-{index:04d}", "--out", str(outs[name])]
        return timed(["aggregate", "--store", url, "--campaign", CAMPAIGN, *run], env[name])

    return alternated(env, pairs, add)


if __name__ == "__main__":
    main()
