"""How much memory and how many threads DuckDB may use: what this process may use, not the host's.

DuckDB's defaults are 80% of the machine's RAM and one thread per host CPU. In a pod with a 4 GiB
limit on a 64 GiB node that is 51 GiB: the kernel kills the step long before DuckDB would spill.
So the limits come from the cgroup (v2, then v1) when there is one, else from the machine, and
DuckDB gets half the memory (Python, the Parquet writer and the page cache need the rest), spilling
to a temporary directory beyond it. PVBENCH_DUCKDB_MEMORY (e.g. 2GiB) and PVBENCH_DUCKDB_THREADS
override.

And what a connection needs to read an S3 store (``readable``): the pinned httpfs and a secret,
set up at the first s3:// path it is given.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from pathlib import Path

import duckdb

from pvbench.analytics.tables import AnalyticsError
from pvbench.store import S3Store, Store

SHARE = 0.5
FLOOR_BYTES = 256 * 2**20
_UNITS = {"": 1, "b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "kib": 2**10, "mib": 2**20, "gib": 2**30}


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def memory_limit_bytes() -> int:
    """What this process may use: the cgroup's memory limit, else the machine's RAM."""
    limits = []
    v2 = _read("/sys/fs/cgroup/memory.max")
    if v2 and v2 != "max":
        limits.append(int(v2))
    v1 = _read("/sys/fs/cgroup/memory/memory.limit_in_bytes")
    if v1 and v1.isdigit() and int(v1) < 2**60:
        limits.append(int(v1))
    try:
        limits.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError):
        pass
    return min(limits) if limits else 4 * 2**30


def cpu_limit() -> int:
    """CPUs this process may use: the cgroup's quota, else the CPUs it is allowed to run on."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    quota = _read("/sys/fs/cgroup/cpu.max")
    if quota and not quota.startswith("max"):
        q, period = quota.split()[:2]
        cpus = min(cpus, max(1, math.ceil(int(q) / int(period))))
    else:
        q, period = _read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), _read("/sys/fs/cgroup/cpu/cpu.cfs_period_us")
        if q and period and q.lstrip("-").isdigit() and int(q) > 0:
            cpus = min(cpus, max(1, math.ceil(int(q) / int(period))))
    return max(1, cpus)


def parse_size(text: str) -> int:
    match = re.fullmatch(r"\s*([0-9.]+)\s*([a-zA-Z]*)\s*", text)
    if not match or match.group(2).lower() not in _UNITS:
        raise ValueError(f"not a size: {text!r} (e.g. 2GiB, 512MiB)")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def duckdb_settings() -> dict[str, str | int | bool]:
    env_memory = os.environ.get("PVBENCH_DUCKDB_MEMORY")
    memory = parse_size(env_memory) if env_memory else max(FLOOR_BYTES, int(memory_limit_bytes() * SHARE))
    threads = int(os.environ.get("PVBENCH_DUCKDB_THREADS") or cpu_limit())
    return {
        "memory_limit": f"{memory // 2**20}MiB",
        "threads": threads,
        # row order of a table is never relied on (every model orders what it shows): lets
        # DuckDB stream and spill instead of holding whole intermediate results in order
        "preserve_insertion_order": False,
        "temp_directory": os.path.join(tempfile.gettempdir(), "pvbench-duckdb-spill"),
        # the compacts are read through views, once per model that reads them: their footers
        # are parsed once, not by every model again
        "parquet_metadata_cache": True,
        # DuckDB's default is the machine's time zone, in which the difference of two timestamps
        # is a calendar one: a campaign's wall time over a DST change was an hour off, and the
        # same store gave other tables on another machine
        "TimeZone": "UTC",
    }


def compaction_threads() -> int:
    """DuckDB's threads while runs are compacted: one fewer than the process may use. The
    compactor's reader (pvbench.analytics.compact._ReadAhead: a thread, and a second process for a
    local store's full aggregation) lists, reads and validates the next runs in Python beside
    DuckDB and keeps a core busy; a second DuckDB thread on that core only contends with it (on
    2 cores, compacting with two threads was slower than with one, and cost more CPU). Only where
    there is a next batch to read: adding one run (one batch, read before DuckDB starts) keeps
    every thread."""
    return max(1, int(duckdb_settings()["threads"]) - 1)


def configure(con: duckdb.DuckDBPyConnection) -> None:
    for name, value in duckdb_settings().items():
        con.execute(f"SET {name} = ?", [value])


def httpfs_extension_path() -> Path:
    import duckdb_extension_httpfs

    base = Path(duckdb_extension_httpfs.__file__).parent
    found = sorted(base.glob(f"extensions/v{duckdb.__version__}/httpfs.duckdb_extension"))
    if not found:
        raise AnalyticsError(f"no httpfs extension for DuckDB {duckdb.__version__} in {base}")
    return found[0]


def readable(con: duckdb.DuckDBPyConnection, store: Store, key: str) -> str:
    """``key`` as a path DuckDB reads on ``con``: a local store's file, or an s3:// URL.

    The first s3:// path sets S3 up on the connection: the pinned httpfs, loaded offline, and the
    store's credentials as a secret. Not at every connect: adding a run reads local copies of the
    compacts only, and loading httpfs was ~30 ms of each of its two connections."""
    if (
        isinstance(store, S3Store)
        and not con.execute("SELECT count(*) FROM duckdb_secrets() WHERE name = 'pvbench_s3'").fetchone()[0]
    ):
        con.execute(f"LOAD '{httpfs_extension_path()}'")
        s = store.settings
        con.execute(
            "CREATE OR REPLACE SECRET pvbench_s3"
            " (TYPE s3, KEY_ID ?, SECRET ?, ENDPOINT ?, URL_STYLE 'path', USE_SSL ?, REGION ?)",
            [s.access_key, s.secret_key, s.endpoint, s.secure, s.region or "us-east-1"],
        )
    return store.duckdb_path(key)
