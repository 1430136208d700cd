"""Reading result documents from an S3 store some milliseconds away: how many GETs pvbench keeps in
flight, side by side (a script, not a timed test).

`pvbench aggregate` reads each run's ~1,000 result.json documents with S3Store.get_many: libcurl
GETs, up to $PVBENCH_S3_CONNECTIONS at once (default S3_CONNECTIONS), over connections kept from one
run to the next. A GET of a ~2 KB document is mostly a round trip, so how many are in flight
decides the time once the store is not on loopback (a MinIO on another node, a cloud bucket).
This puts a real MinIO on loopback behind Toxiproxy (Shopify's TCP proxy, built from the Go module
proxy into .tools/bin), which holds back every answer by the latency given, and prints:

1. one run's documents read (a fresh store, as one `pvbench aggregate --run` reads them) at each
   latency with each number of connections, alternated, ``--rounds`` times: the medians, and each
   over the median with the most connections;
2. ``--runs`` runs read one after the other (as a full aggregation reads them) with the shipped
   number of connections, kept from one run to the next (as shipped) or made again for every
   run (before), alternated: the medians of the wall time.

Usage: .venv/bin/python -m pvbench_lab.bench_s3_latency [--latencies 0,2,10,30] [--connections 16,64,128]
       [--rounds 3] [--runs 10]
Latency 0 reads the MinIO directly (no proxy, no Toxiproxy needed).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from rich.console import Console
from rich.table import Table

from pvbench.store import multi_get, open_store
from pvbench.store.layout import RESULT_FILE, results_prefix, run_of
from pvbench.store.s3 import S3_CONNECTIONS
from pvbench.testing.minio import free_port
from pvbench_lab.bench_aggregate import CAMPAIGN, minio_store, template_document, write_runs

REPO = Path(__file__).resolve().parents[2]
TOXIPROXY = ("github.com/Shopify/toxiproxy/v2/cmd/server", "v2.12.0")


def toxiproxy_binary() -> str:
    """Toxiproxy's server in .tools/bin, built once per machine (ci/go-tool.sh)."""
    tools = Path(os.environ.get("PVBENCH_TOOLS") or REPO / ".tools") / "bin"
    binary = tools / "toxiproxy-server"
    if not binary.exists():
        module, version = TOXIPROXY
        subprocess.run(
            ["bash", "-c", f'. ci/go-tool.sh && go_tool server {module} {version} "{tools}" toxiproxy-server'],
            cwd=REPO,
            check=True,
        )
    return str(binary)


@contextlib.contextmanager
def toxiproxy(upstream: str, latencies: list[int]):
    """Toxiproxy on loopback with a proxy to ``upstream`` per latency (ms; answers held back by
    it): yields {latency: "host:port"}, 0 → ``upstream`` itself."""
    endpoints = {0: upstream}
    delayed = [ms for ms in latencies if ms > 0]
    if not delayed:
        yield endpoints
        return
    api_port = free_port()
    server = subprocess.Popen(
        [toxiproxy_binary(), "-host", "127.0.0.1", "-port", str(api_port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    api = f"http://127.0.0.1:{api_port}"
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                urllib.request.urlopen(f"{api}/version", timeout=1).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        for ms in delayed:
            listen = f"127.0.0.1:{free_port()}"
            post(f"{api}/proxies", {"name": f"s3-{ms}ms", "listen": listen, "upstream": upstream})
            toxic = {"type": "latency", "stream": "downstream", "attributes": {"latency": ms, "jitter": 0}}
            post(f"{api}/proxies/s3-{ms}ms/toxics", toxic)
            endpoints[ms] = listen
        yield endpoints
    finally:
        server.terminate()
        server.wait()


def post(url: str, body: dict) -> None:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=5).read()


def store_at(url: str, endpoint: str, connections: int):
    """A fresh S3 store (no connection open yet) at ``endpoint``, reading ``connections`` at once."""
    os.environ["PVBENCH_S3_ENDPOINT"] = endpoint
    os.environ["PVBENCH_S3_CONNECTIONS"] = str(connections)
    return open_store(url)


def read_run(store, keys: list[str]) -> float:
    t0 = time.monotonic()
    for _, content in store.get_many(keys):
        if isinstance(content, Exception):
            raise content
    return time.monotonic() - t0


def read_runs_one_by_one(store, runs: list[list[str]], kept: bool) -> tuple[float, int]:
    """Every run read in turn, as a full aggregation reads them; ``kept``: connections kept from one
    run to the next (as shipped), else a new set for every run (before). Returns the wall time and
    the connections made (libcurl's count)."""
    shares = []
    t0 = time.monotonic()
    for keys in runs:
        if not kept or not shares:
            shares.append(multi_get.Connections())
            store._connections = shares[-1]
        read_run(store, keys)
    return time.monotonic() - t0, sum(share.made for share in shares)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latencies", default="0,2,10,30", help="ms, comma-separated (0: no proxy)")
    parser.add_argument("--connections", default="16,64,128", help="comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=10, help="runs read one after the other (table 2)")
    args = parser.parse_args()
    latencies = [int(x) for x in args.latencies.split(",")]
    counts = [int(x) for x in args.connections.split(",")]
    console = Console(width=160)
    with tempfile.TemporaryDirectory(prefix="pvbench-bench-s3-latency-") as tmp:
        work = Path(tmp)
        with minio_store(work, "bench-latency") as store:
            url, upstream = store.url, os.environ["PVBENCH_S3_ENDPOINT"]
            runs_needed = max(args.runs, 2)
            write_runs(store, template_document(work), 0, runs_needed)
            keys = [o.key for o in store.list_objects(results_prefix(CAMPAIGN)) if o.key.endswith(RESULT_FILE)]
            by_run: dict[str, list[str]] = {}
            for key in keys:
                by_run.setdefault(run_of(key)[1], []).append(key)
            runs = [by_run[r] for r in sorted(by_run)]
            with toxiproxy(upstream, latencies) as endpoints:
                one_run(console, url, endpoints, latencies, counts, runs, args.rounds)
                one_after_another(console, url, endpoints, latencies, runs[: args.runs], args.rounds)


def one_run(console, url, endpoints, latencies, counts, runs, rounds) -> None:
    measured = {(ms, n): [] for ms in latencies for n in counts}
    for round_ in range(rounds):
        for ms in latencies:
            order = counts if round_ % 2 == 0 else counts[::-1]
            for i, n in enumerate(order):
                keys = runs[(round_ + i) % len(runs)]
                measured[(ms, n)].append(read_run(store_at(url, endpoints[ms], n), keys))
    table = Table(title=f"one run's {len(runs[0]):,} documents read by a fresh store (medians of {rounds})")
    table.add_column("latency")
    for n in counts:
        table.add_column(f"{n} connections" + (" (shipped)" if n == S3_CONNECTIONS else ""), justify="right")
    base = S3_CONNECTIONS if S3_CONNECTIONS in counts else max(counts)
    table.add_column(f"each ÷ {base}", justify="right")
    for ms in latencies:
        medians = {n: statistics.median(measured[(ms, n)]) for n in counts}
        ratios = ", ".join(f"{medians[n] / medians[base]:.1f}×" for n in counts)
        table.add_row(f"{ms} ms" if ms else "0 (loopback)", *(f"{medians[n]:.3f} s" for n in counts), ratios)
    console.print(table)


def one_after_another(console, url, endpoints, latencies, runs, rounds) -> None:
    table = Table(
        title=f"{len(runs)} runs read one after the other, {S3_CONNECTIONS} connections (medians of {rounds}):"
        " wall time · connections made"
    )
    for col in ("latency", "connections kept (shipped)", "new for every run (before)", "new ÷ kept, wall"):
        table.add_column(col, justify="left" if col == "latency" else "right")
    for ms in latencies:
        measured: dict[bool, list[tuple[float, int]]] = {True: [], False: []}
        for round_ in range(rounds):
            for kept in (True, False) if round_ % 2 == 0 else (False, True):
                store = store_at(url, endpoints[ms], S3_CONNECTIONS)
                measured[kept].append(read_runs_one_by_one(store, runs, kept))
        shown = {
            kept: (statistics.median(w for w, _ in m), statistics.median(c for _, c in m))
            for kept, m in measured.items()
        }
        (kw, kc), (nw, nc) = shown[True], shown[False]
        table.add_row(
            f"{ms} ms" if ms else "0 (loopback)", f"{kw:.2f} s · {kc:.0f}", f"{nw:.2f} s · {nc:.0f}", f"{nw / kw:.2f}×"
        )
    console.print(table)


if __name__ == "__main__":
    main()
