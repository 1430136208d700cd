"""Aggregation at scale, measured side by side in one run (a script, not a timed test).

For N synthetic results (default 1k, 10k, 100k) in a local directory store and in MinIO on
loopback, prints:
  read      reading every result.json's bytes (list + get, the way aggregation reads them)
  full      `pvbench aggregate` from nothing (every run compacted, the campaign's tables built)
  full ÷ read   each full aggregation over the read just before it: read and full alternate
            --repeat times (the compacts and snapshot removed in between), and the medians are
            shown (every pair is printed too: one run here can differ much from the next)
  verify    `pvbench aggregate` again, nothing new (every run listed and checked, no JSON read)
  add run   one more run of 1,000 results, then `pvbench aggregate --run <it>` (the snapshot
            the full aggregation wrote is read, and the runs added since beside it): the median
            of the SNAPSHOT_LAG additions that write nothing but their run's compact (timings
            here vary by up to 2x from one addition to the next), with the highest peak RSS
  … part    the same for the run that makes more than SNAPSHOT_LAG runs read beside the snapshot:
            that aggregation writes them as one more part of it (one addition in SNAPSHOT_LAG + 1)
  … merge   one more addition that merges every part into one (one addition in
            (SNAPSHOT_LAG + 1) · MAX_PARTS does): run with SNAPSHOT_LAG = 0 and MAX_PARTS = 1 set
            in its process, so this one addition does it; the merge itself is the shipped code's
  … Argo    the same addition as the Argo `aggregate` step makes it: the campaign's compacts and
            the run's results in the pod's directory (as argoexec leaves them; copied, not timed),
            `pvbench aggregate --run <it> --no-snapshot` there
  report    `pvbench report build` of the campaign's tables (local store, smallest and largest N:
            the build does not depend on the store, and its fixed cost is most of it): its bundles
            compiled (PVBENCH_REPORT_REUSE_BUNDLES=0, as a first build of the pages), then reused
            (after `pvbench report prime`, not timed), shown as "compiled / reused"
with each command's peak RSS, and full ÷ read. A second table sets the full aggregation against the
read, where the time goes:
  full: CPU  the CPU the full aggregation spent (user + system, its reader process's included;
            on MinIO, the server's too, which runs on the same cores); over the cores it may use
            and the read, the lowest full ÷ read that no use of those cores could beat (reading is
            one thread; an aggregation reads, validates and compacts)
  cold      a local store's read and full aggregation with the kernel's page cache dropped first
            (as root only; --no-cold skips them): the documents come from the disk, as they do
            after a reboot or once a year of other work has pushed them out of memory
The results are copies of one real fio result
(a 1 s run made here) with identity and values varied, each with a synthetic 30 s series: 20 storage classes × 10 workloads ×
5 repetitions per run (1,000 results per run), one occasion per run, four occasion labels.

Usage: .venv/bin/python -m pvbench_lab.bench_aggregate [--sizes 1000,10000,100000] [--stores local,minio] [--repeat 3]
                                              [--no-cold] [--no-report]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.table import Table

from pvbench.analytics.snapshot import SNAPSHOT_LAG
from pvbench.cells.cell import Cell
from pvbench.cells.run import TimingOverrides, plan_cell, run_cell
from pvbench.results.metrics import METRIC_LIST
from pvbench.results.schema import CellIdentity
from pvbench.store import LocalStore, open_store
from pvbench.store.layout import RESULT_FILE, compact_prefix, results_prefix, snapshot_prefix
from pvbench.store.s3 import S3_READERS
from pvbench.testing.documents import synthetic_series
from pvbench.testing.minio import MinioServer  # the tests' real MinIO on loopback

REPO = Path(__file__).resolve().parents[2]

PVBENCH = [str(REPO / ".venv" / "bin" / "pvbench")]
CLASSES, WORKLOADS, REPS = 20, 10, 5
# Seconds of series per result (cells run 15–60 s). PVBENCH_BENCH_SERIES_S=0: documents as they were
# before results had seconds, steady state and guards (what a commit before them can read: the A/B).
SERIES_S = int(os.environ.get("PVBENCH_BENCH_SERIES_S", "30"))
PER_RUN = CLASSES * WORKLOADS * REPS
OCCASIONS = ("weekday-office", "weekday-night", "weekend", "night")
CAMPAIGN = "bench"
CORES = len(os.sched_getaffinity(0))  # what every command here may use


def byte_compile(sdk: Path) -> None:
    """The pvbench under test with its bytecode written, as `pip install` leaves it (the runner
    image) and as a first run leaves an editable install. Where PYTHONDONTWRITEBYTECODE is set (the
    environment of the machine these figures come from sets it), Python would otherwise compile
    every pvbench module again in every timed command, which no installed pvbench does."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(sdk / "pvbench")], check=True)


def template_document(work: Path) -> dict:
    """One real result: fio randread 4k for 1 s on a temporary directory."""
    target = work / "target"
    target.mkdir()
    cell = Cell(
        campaign=CAMPAIGN,
        run="r",
        occasion="o",
        storage_class="bench",
        profile="dbench",
        workload="randread-iops",
        rep=1,
    )
    doc, _ = run_cell(plan_cell(cell, target, TimingOverrides(ramp="0s", runtime="1s", size="16M")))
    return json.loads(doc.to_json())


def run_documents(template: dict, run_index: int, seed: int, campaign: str = CAMPAIGN, level: float = 1.0):
    """(key, bytes) of one synthetic run: each class a level, each result a little noise. ``level``:
    the run's speed against the others' (0.85: every class 15% slower, as after a storage change
    that hurt; its history then has a step)."""
    rng = random.Random(seed + run_index)
    workloads = [f"wl-{w:02d}" for w in range(WORKLOADS)]
    for c in range(CLASSES):
        for w in workloads:
            for rep in range(1, REPS + 1):
                doc = copy.deepcopy(template)
                ident = doc["identity"]
                ident.update(
                    campaign=campaign,
                    run=f"run-{run_index:04d}",
                    occasion=OCCASIONS[run_index % 4],
                    storage_class=f"sc-{c:02d}",
                    workload=w,
                    rep=rep,
                    order=(c * WORKLOADS + workloads.index(w)) * REPS + rep,
                )
                factor = rng.lognormvariate(0, 0.1) * (1 + c / 10) * level
                for m in doc["metrics"]:
                    for metric in METRIC_LIST:  # a faster class: higher IOPS and bandwidth, lower latency
                        if metric.source == "fio" and m.get(metric.name):
                            m[metric.name] *= factor if metric.better == "higher" else 1 / factor
                # its seconds (SERIES_S of one direction, as fio's interval logs give them): what the
                # compaction keeps as lists and computes the stability of, at the level of this result
                first = doc["metrics"][0]
                if SERIES_S:
                    doc["series"] = synthetic_series(
                        rng,
                        first.get("iops") or 1000.0,
                        first.get("lat_mean_us") or 100.0,
                        SERIES_S,
                        first["direction"],
                    )
                else:
                    for field in ("series", "steady_state", "guards"):
                        doc.pop(field, None)
                key = CellIdentity(**ident).result_key()
                yield key, json.dumps(doc, indent=2).encode()


def write_runs(store, template: dict, first: int, count: int, campaign: str = CAMPAIGN, level: float = 1.0) -> None:
    def put(item):
        store.put_bytes(*item)

    with ThreadPoolExecutor(1 if isinstance(store, LocalStore) else S3_READERS) as pool:
        for r in range(first, first + count):
            list(pool.map(put, run_documents(template, r, seed=7, campaign=campaign, level=level)))


@contextlib.contextmanager
def minio_store(work: Path, bucket: str):
    """A real MinIO on loopback (its data under ``work``) with one bucket, and this process's
    environment set for s3:// stores: yields the store s3://<bucket>/pvbench; stops the server
    after (the scripts that compare two ways of reading one store: pvbench_lab.bench_multi_get,
    pvbench_lab.bench_s3_listing)."""
    minio = MinioServer(work / "minio-data")
    minio.start()
    try:
        os.environ.update(minio.env)
        minio.make_bucket(bucket)
        yield open_store(f"s3://{bucket}/pvbench")
    finally:
        minio.stop()


def print_two_ways(console: Console, measured: dict[str, list[tuple[float, float]]], ratio: str, digits: int) -> None:
    """The median wall time and CPU of each of two ways (as shipped first), and the second's over
    the first's (``ratio`` names them): what pvbench_lab.bench_multi_get and pvbench_lab.bench_s3_listing end with."""
    medians = {
        way: (statistics.median(w for w, _ in m), statistics.median(c for _, c in m)) for way, m in measured.items()
    }
    (fast, (fw, fc)), (slow, (sw, sc)) = medians.items()
    console.print(f"median {fast}: {fw:.{digits}f} s wall, {fc:.{digits}f} s CPU")
    console.print(f"median {slow}: {sw:.{digits}f} s wall, {sc:.{digits}f} s CPU")
    console.print(f"ratio ({ratio}): wall {sw / fw:.1f}×, client CPU {sc / fc:.1f}×")


def read_bytes(store) -> tuple[float, int]:
    """Seconds to list and read every result.json, the way the compactor reads them
    (Store.get_many: S3 GETs overlap)."""
    t0 = time.monotonic()
    keys = [o.key for o in store.list_objects(results_prefix(CAMPAIGN)) if o.key.endswith(RESULT_FILE)]
    total = 0
    for _, content in store.get_many(keys):
        if isinstance(content, Exception):
            raise content
        total += len(content)
    return time.monotonic() - t0, total


def full_aggregation(
    store, url: str, out: Path, env: dict, cold: bool = False, server: MinioServer | None = None
) -> tuple[float, float, float] | None:
    """timed() `pvbench aggregate` of the campaign from nothing: what an earlier one wrote (the
    store's compacts and snapshot, the tables in ``out``) removed first, so every run is compacted.
    ``cold``: the page cache dropped after that (drop_caches), so the documents come from the disk.
    ``server``: the MinIO it reads, whose CPU meanwhile is added to the command's (it runs on the
    same cores)."""
    for prefix in (compact_prefix(CAMPAIGN) + "/", snapshot_prefix(CAMPAIGN) + "/"):
        for key in list(store.list_keys(prefix)):
            store.delete(key)
    shutil.rmtree(out, ignore_errors=True)
    if cold:
        drop_caches()
    before = process_cpu(server.proc.pid) if server else 0.0
    measured = timed(["aggregate", "--store", url, "--campaign", CAMPAIGN, "--out", str(out)], env)
    if measured is None or server is None:
        return measured
    wall, rss, cpu = measured
    return wall, rss, cpu + process_cpu(server.proc.pid) - before


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) a running process has spent so far (Linux: /proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


DROP_CACHES = Path("/proc/sys/vm/drop_caches")


def drop_caches() -> bool:
    """Empty the kernel's page cache (dirty pages written back first), as a store is after a reboot
    or once other work has pushed its files out: True if done, False where this process may not
    (only root may write /proc/sys/vm/drop_caches)."""
    try:
        os.sync()
        DROP_CACHES.write_text("3\n")
        return True
    except OSError:
        return False


# `pvbench` with the snapshot's thresholds set so that the next addition merges its parts
MERGING = [
    sys.executable,
    "-c",
    "import sys; from pvbench.analytics import snapshot; snapshot.SNAPSHOT_LAG = 0; snapshot.MAX_PARTS = 1;"
    " from pvbench.cli.main import main; sys.argv[0] = 'pvbench'; main()",
]


def timed(args: list[str], env: dict, command: list[str] = PVBENCH) -> tuple[float, float, float] | None:
    """(wall seconds, peak RSS in GiB, CPU seconds: user + system, its reader process's included)
    of one pvbench command in its own process."""
    t0 = time.monotonic()
    proc = subprocess.Popen(command + args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    if status != 0:  # said, and shown as failed in the table; the other measurements go on
        print(f"pvbench {' '.join(args)} failed:\n{proc.stderr.read().decode()[-2000:]}", file=sys.stderr)
        return None
    return wall, usage.ru_maxrss / 2**20, usage.ru_utime + usage.ru_stime


def argo_step(pod: Path, store, template: dict, index: int, env: dict) -> tuple[float, float] | None:
    """The Argo `aggregate` step adding a run: argoexec has put the campaign's compacts and the new
    run's results into the pod's directory (copied here, not timed), which is aggregated with
    --no-snapshot (the pod writes back its run's compact only), every earlier run read from its
    compact. What it does not time: argoexec fetching those objects."""
    shutil.rmtree(pod, ignore_errors=True)
    local = LocalStore(pod)
    for key in store.list_keys(compact_prefix(CAMPAIGN) + "/"):
        local.put_bytes(key, store.get_bytes(key))
    write_runs(local, template, index, 1)
    run = ["--run", f"run-{index:04d}", "--out", str(pod / "tables"), "--no-snapshot"]
    measured = timed(["aggregate", "--store", str(pod), "--campaign", CAMPAIGN, *run], env)
    shutil.rmtree(pod, ignore_errors=True)
    return measured


def report_builds(tables: Path, site: Path, env: dict) -> tuple:
    """The report of ``tables`` built with its bundles compiled (PVBENCH_REPORT_REUSE_BUNDLES=0, as
    the first build of a set of pages), then with them reused (`pvbench report prime` first, not
    timed, so that they are there whatever built before): (compiled, reused), each timed()."""
    compiled = timed(
        ["report", "build", "--data", str(tables), "--out", str(site)], {**env, "PVBENCH_REPORT_REUSE_BUNDLES": "0"}
    )
    timed(["report", "prime"], env)
    reused = timed(["report", "build", "--data", str(tables), "--out", str(site)], env)
    return compiled, reused


def shown_report(report: tuple) -> str:
    compiled, reused = report
    return f"{shown(compiled)} / {shown(reused)}"


def typical(measured: list[tuple[float, float] | None]) -> tuple[float, float] | None:
    """The median wall time of several measurements and their highest peak RSS (None if one failed)."""
    if any(m is None for m in measured):
        return None
    return statistics.median(m[0] for m in measured), max(m[1] for m in measured)


def spread(measured: list[tuple[float, float] | None]) -> str:
    return ", ".join("FAILED" if m is None else f"{m[0]:.1f}" for m in measured)


def shown(measured: tuple[float, float] | None) -> str:
    return "FAILED" if measured is None else f"{measured[0]:.1f} s · {measured[1]:.2f} GiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--stores", default="local,minio")
    parser.add_argument("--repeat", type=int, default=3, help="reads and full aggregations, alternated")
    parser.add_argument(
        "--no-cold",
        dest="cold",
        action="store_false",
        help="skip the reads and full aggregations of a local store with the page cache dropped (done as root only)",
    )
    parser.add_argument("--no-report", dest="report", action="store_false", help="skip the report builds")
    args = parser.parse_args()
    byte_compile(REPO / "sdk")
    sizes = [int(s) for s in args.sizes.split(",")]
    kinds = args.stores.split(",")
    console = Console(width=200)
    rows, against_read = [], []
    with tempfile.TemporaryDirectory(prefix="pvbench-bench-agg-") as tmp:
        work = Path(tmp)
        template = template_document(work)
        minio = None
        if "minio" in kinds:
            minio = MinioServer(work / "minio-data")
            minio.start()
        try:
            for kind in kinds:
                for n in sizes:
                    runs = max(1, n // PER_RUN)
                    env = dict(os.environ)
                    if kind == "local":
                        url = str(work / f"store-{n}")
                    else:
                        env.update(minio.env)
                        os.environ.update(minio.env)
                        bucket = f"bench-{n}"
                        minio.make_bucket(bucket)
                        url = f"s3://{bucket}/pvbench"
                    store = open_store(url)
                    console.print(f"[bold]{kind}, {runs * PER_RUN:,} results[/]: writing …")
                    write_runs(store, template, 0, runs)
                    # the writes flushed first, as a year of results long is: measured while the
                    # kernel still writes 125,000 folders back, reading and aggregating both slowed
                    os.sync()
                    out = work / f"tables-{kind}-{n}"
                    reads, fulls = [], []
                    for _ in range(args.repeat):
                        read_s, total = read_bytes(store)
                        reads.append(read_s)
                        fulls.append(full_aggregation(store, url, out, env, server=minio if kind == "minio" else None))
                    read_s, full = statistics.median(reads), typical(fulls)
                    ratio = None if full is None else statistics.median(f[0] / r for f, r in zip(fulls, reads))
                    console.print(f"  read {', '.join(f'{r:.1f}' for r in reads)} s; full {spread(fulls)} s")
                    # the CPU a full aggregation spent, over the cores it may use: no use of them
                    # could bring its wall time under that
                    floor = None if full is None else statistics.median(f[2] / CORES / r for f, r in zip(fulls, reads))
                    cpu = None if full is None else statistics.median(f[2] for f in fulls)
                    cold = None
                    if kind == "local" and args.cold and drop_caches():
                        cold_reads, cold_fulls = [], []
                        for _ in range(args.repeat):
                            drop_caches()
                            cold_reads.append(read_bytes(store)[0])
                            cold_fulls.append(full_aggregation(store, url, out, env, cold=True))
                        console.print(
                            f"  cold: read {', '.join(f'{r:.1f}' for r in cold_reads)} s; full {spread(cold_fulls)} s"
                        )
                        cold_full = typical(cold_fulls)
                        cold = (
                            statistics.median(cold_reads),
                            cold_full,
                            None
                            if cold_full is None
                            else statistics.median(f[0] / r for f, r in zip(cold_fulls, cold_reads)),
                        )
                    against_read.append((kind, runs * PER_RUN, read_s, full, ratio, cpu, floor, cold))
                    verify = timed(["aggregate", "--store", url, "--campaign", CAMPAIGN, "--out", str(out)], env)

                    def add_run(index: int, command: list[str] = PVBENCH):
                        write_runs(store, template, index, 1)
                        return timed(
                            [
                                "aggregate",
                                "--store",
                                url,
                                "--campaign",
                                CAMPAIGN,
                                "--run",
                                f"run-{index:04d}",
                                "--out",
                                str(out),
                            ],
                            env,
                            command,
                        )

                    # the full aggregation wrote the snapshot: the first addition reads one run beside it
                    additions = [add_run(runs)]
                    step = argo_step(work / f"pod-{kind}-{n}", store, template, runs + 1, env)
                    report = (
                        report_builds(out, work / f"site-{n}", env)
                        if args.report and kind == "local" and n in (min(sizes), max(sizes))
                        else False  # not built: the build does not depend on the store
                    )
                    # more runs until more than SNAPSHOT_LAG are read beside the snapshot: the
                    # last addition writes them as a part (one in SNAPSHOT_LAG + 1 does)
                    additions += [add_run(runs + extra) for extra in range(1, SNAPSHOT_LAG)]
                    added = typical(additions)
                    part = add_run(runs + SNAPSHOT_LAG)
                    merged = add_run(runs + SNAPSHOT_LAG + 1, MERGING)
                    rows.append(
                        (kind, runs * PER_RUN, total, read_s, full, ratio, verify, added, part, merged, step, report)
                    )
                    console.print(
                        f"  read {read_s:.1f} s, full {shown(full)} (medians of {args.repeat}), verify {shown(verify)}, add run {shown(added)}"
                        f" (median of {len(additions)}: {spread(additions)})"
                        f", add run writing a part {shown(part)}, add run merging the parts {shown(merged)}"
                        f", add run as the Argo step {shown(step)}"
                        + (f", report {shown_report(report)}" if report is not False else "")
                    )
        finally:
            if minio:
                minio.stop()
    table = Table(
        title="pvbench aggregation at scale (2 cores; each command in its own process; peak RSS;"
        f" read, full and full ÷ read: medians of {args.repeat})"
    )
    for col in (
        "store",
        "results",
        "MB",
        "read bytes",
        "full",
        "full ÷ read",
        "verify (nothing new)",
        f"add a run (median of {SNAPSHOT_LAG})",
        "add a run, part written",
        "add a run, parts merged",
        "add a run, Argo step",
        "report build, bundles compiled / reused",
    ):
        table.add_column(col, justify="right")
    for kind, n, total, read_s, full, ratio, verify, added, part, merged, step, report in rows:
        table.add_row(
            kind,
            f"{n:,}",
            f"{total / 1e6:.0f}",
            f"{read_s:.1f} s",
            shown(full),
            "–" if ratio is None else f"{ratio:.1f}×",
            shown(verify),
            shown(added),
            shown(part),
            shown(merged),
            shown(step),
            "–" if report is False else shown_report(report),
        )
    console.print(table)
    print_markdown(table)
    table = Table(
        title=f"Full aggregation against the read: where the time goes ({CORES} cores; medians of {args.repeat})"
    )
    for col in (
        "store",
        "results",
        "read bytes",
        "full",
        "full ÷ read",
        "full: CPU",
        f"full: CPU ÷ {CORES} cores ÷ read",
        "cold: read bytes",
        "cold: full",
        "cold: full ÷ read",
    ):
        table.add_column(col, justify="right")
    for kind, n, read_s, full, ratio, cpu, floor, cold in against_read:
        if cold is None:  # not measured: an S3 store, --no-cold, or not root
            cold_cells = ["–", "–", "–"]
        else:
            cold_read, cold_full, cold_ratio = cold
            cold_cells = [f"{cold_read:.1f} s", shown(cold_full), "–" if cold_ratio is None else f"{cold_ratio:.1f}×"]
        table.add_row(
            kind,
            f"{n:,}",
            f"{read_s:.1f} s",
            shown(full),
            "–" if ratio is None else f"{ratio:.1f}×",
            "–" if cpu is None else f"{cpu:.1f} s",
            "–" if floor is None else f"{floor:.1f}×",
            *cold_cells,
        )
    console.print(table)
    print_markdown(table)


def print_markdown(table: Table) -> None:
    """The table again, as the README's performance section shows it."""
    print("\n| " + " | ".join(c.header for c in table.columns) + " |")
    print("|" + "---|" * len(table.columns))
    for i in range(table.row_count):
        print("| " + " | ".join(str(c._cells[i]) for c in table.columns) + " |")


if __name__ == "__main__":
    main()
