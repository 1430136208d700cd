"""Guards: rules that say a cell may have measured something other than the storage.

Each rule is defined here once (the catalog, exported to SQL as ``guard_catalog`` for the
methodology page and the statistics); ``check`` evaluates them for a finished cell and returns the
``GuardFlag`` of each rule that tripped. A flag's ``bias`` says which way the measurement is off:
``understates`` (the client, not the storage, was the limit: the storage is at least this fast) or
``overstates`` (a cache or never-written data answered: the storage is at most this fast).

``client_cpu`` trips at or above its threshold; ``page_cache`` and ``unwritten_reads`` at or below
it (``TRIPS_AT_OR_BELOW``). The rules read the host (its CPUs, its memory, fio's files), so
``check`` runs where fio ran, before the target is cleaned up; each rule's arithmetic is a
function of plain numbers (``client_cpu_flag``, ``page_cache_flag``, ``unwritten_reads_flag``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Literal

from pvbench.fio.cpu_watch import JobCpu
from pvbench.fio.target import client_dirs, fio_files
from pvbench.profiles.model import parse_size
from pvbench.results.schema import GuardFlag

Bias = Literal["understates", "overstates"]


@dataclass(frozen=True)
class Guard:
    rule: str  # as GuardFlag.rule names it
    title: str  # as the report prints it
    threshold: float  # what value trips it (see ``unit``; TRIPS_AT_OR_BELOW says which side)
    unit: str
    bias: Bias
    excluded: bool  # left out of rankings and verdicts by default when it trips
    description: str  # one line for the methodology page


GUARD_LIST: tuple[Guard, ...] = (
    Guard(
        "client_cpu",
        "Measured the client, not the storage",
        0.9,
        "share of the run fio's busiest job was on a CPU or waiting for one",
        "understates",
        True,
        "trips at 0.9 or more: a fio job that was on a CPU or waiting in the run queue for one (Linux schedstat) "
        "almost all its run never waited for the storage, so the client's CPU was the limit; fio's own usr+sys "
        "(its JSON) alone misses the waiting on a loaded node, and is the fallback where schedstat is missing",
    ),
    Guard(
        "page_cache",
        "Measured memory, not the storage",
        1.0,
        "working set / memory available to the page cache",
        "overstates",
        True,
        "trips at 1.0 or less: buffered I/O (direct=0) whose files (size x numjobs) fit in the memory the page "
        "cache may use (the cgroup's limit, else the node's memory), so reads and writes may never reach the "
        "device; on tmpfs or ramfs the class is memory itself: flagged whatever direct says, not excluded",
    ),
    Guard(
        "unwritten_reads",
        "Read data that was never written",
        0.9,
        "share of the read files' size actually allocated",
        "overstates",
        True,
        "trips at 0.9 or less: a read test whose files were sparse (holes, st_blocks x 512 < st_size) when fio "
        "finished; a thin or fresh volume answers such reads without touching a disk. fio writes the files it "
        "lays out for a read test, so this trips only on a file that existed sparse at fio's path",
    ),
)
GUARDS = {g.rule: g for g in GUARD_LIST}
# The rules whose flagged results every statistic keeps, where a command is not told (--keep-flagged):
# comma-separated; the benchmark template's keep-flagged parameter sets it in its statistics steps.
KEEP_FLAGGED_ENV = "PVBENCH_KEEP_FLAGGED"


def split_rules(text: str | None) -> list[str]:
    """'client_cpu, page_cache' (--keep-flagged, $PVBENCH_KEEP_FLAGGED) as its rule names; unchecked."""
    return [r.strip() for r in (text or "").split(",") if r.strip()]


TRIPS_AT_OR_BELOW = frozenset({"page_cache", "unwritten_reads"})

# Filesystems whose files live in memory: the page cache is the storage.
MEMORY_FILESYSTEMS = frozenset({"tmpfs", "ramfs"})
READ_MODES = frozenset({"read", "randread", "rw", "readwrite", "randrw"})
# A cgroup memory limit at or above this is "no limit" (v1 writes 2^63 rounded down to a page).
NO_LIMIT = 2**60


def _flag(rule: str, value: float, detail: str, excluded: bool | None = None) -> GuardFlag:
    guard = GUARDS[rule]
    return GuardFlag(
        rule=rule,
        value=round(value, 4),
        threshold=guard.threshold,
        excluded=guard.excluded if excluded is None else excluded,
        detail=detail,
    )


def _trips(rule: str, value: float) -> bool:
    threshold = GUARDS[rule].threshold
    return value <= threshold if rule in TRIPS_AT_OR_BELOW else value >= threshold


# --- the rules' arithmetic, on plain numbers -------------------------------------------------------


def client_cpu_flag(jobs: list[JobCpu] | None, usr_sys_percent: list[float], cpus: float) -> GuardFlag | None:
    """``jobs``: fio's job tasks as CpuWatch saw them (None: schedstat unavailable, an empty list: none
    seen long enough); ``usr_sys_percent``: fio's usr_cpu + sys_cpu of each job entry of its JSON;
    ``cpus``: the CPUs the client had."""
    reported = sum(usr_sys_percent)
    entries = max(1, len(usr_sys_percent))
    share_of = f"{cpus:g} CPU(s)"
    if jobs:
        busiest = max(jobs, key=lambda j: j.busy_share)
        value = busiest.busy_share
        detail = (
            f"fio's busiest job was on a CPU or waiting for one {value:.0%} of its run "
            f"({busiest.on_cpu_s:.1f} s on, {busiest.waiting_s:.1f} s waiting, of {busiest.wall_s:.1f} s); "
            f"fio reported usr+sys {reported:.0f}% of a CPU"
        )
    else:
        # each job uses at most one CPU; more jobs than CPUs share them
        value = reported / 100 / max(min(entries, cpus), 1e-9)
        why = "schedstat unavailable" if jobs is None else "no job ran long enough to sample"
        detail = f"fio reported usr+sys {reported:.0f}% of a CPU over {entries} job(s) on {share_of} ({why})"
    # fio's JSON has one entry per job (without group_reporting): more than the CPUs, they shared them
    if entries > cpus:
        detail += f"; {entries} jobs shared {share_of}"
    if not _trips("client_cpu", value):
        return None
    return _flag("client_cpu", value, detail)


def page_cache_flag(
    direct: bool, filesystem: str | None, working_set_bytes: int, memory_bytes: int
) -> GuardFlag | None:
    """``memory_bytes``: what the page cache may use (the cgroup's limit, else the node's memory)."""
    value = working_set_bytes / memory_bytes if memory_bytes > 0 else 0.0
    sizes = f"working set {working_set_bytes / 2**20:,.0f} MiB, memory {memory_bytes / 2**30:,.1f} GiB"
    if filesystem in MEMORY_FILESYSTEMS:
        # tmpfs keeps its files in the page cache whatever O_DIRECT says: the class is memory
        return _flag("page_cache", value, f"{filesystem}: the storage is memory itself ({sizes})", excluded=False)
    if direct or memory_bytes <= 0 or not _trips("page_cache", value):  # memory unknown: no claim
        return None
    return _flag("page_cache", value, f"buffered I/O (direct=0) whose files fit in memory ({sizes})")


def unwritten_reads_flag(reads: bool, allocated_bytes: int, size_bytes: int, files: int) -> GuardFlag | None:
    if not reads or size_bytes <= 0:
        return None
    value = min(1.0, allocated_bytes / size_bytes)
    if not _trips("unwritten_reads", value):
        return None
    return _flag(
        "unwritten_reads",
        value,
        f"the read files were {value:.0%} allocated ({allocated_bytes / 2**20:,.0f} of {size_bytes / 2**20:,.0f} MiB "
        f"in {files} file(s)): the rest were holes, never written",
    )


# --- what the host says ----------------------------------------------------------------------------


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _cgroup_files(name_v2: str, name_v1: str, controller: str) -> list[Path]:
    """The cgroup files that may hold this process's limit: the namespaced root (what a container
    sees) and its own cgroup's path (a host's), for v2 and v1."""
    root = Path("/sys/fs/cgroup")
    paths = [root / name_v2, root / controller / name_v1]
    for line in (_read(Path("/proc/self/cgroup")) or "").splitlines():
        hierarchy, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        rel = path.lstrip("/")
        if hierarchy == "0" and not controllers:
            paths.append(root / rel / name_v2)
        elif controller in controllers.split(","):
            paths.append(root / controller / rel / name_v1)
    return paths


def cpus_available() -> float:
    """The CPUs this process may use: its affinity, lowered by a cgroup CPU quota (v2 cpu.max, v1 cfs)."""
    cpus = float(len(os.sched_getaffinity(0)))
    for path in _cgroup_files("cpu.max", "cpu.cfs_quota_us", "cpu"):
        text = _read(path)
        if not text:
            continue
        if path.name == "cpu.max":
            quota, _, period = text.partition(" ")
        else:
            quota, period = text, _read(path.with_name("cpu.cfs_period_us")) or ""
        if quota.lstrip("-").isdigit() and int(quota) > 0 and period.isdigit() and int(period) > 0:
            cpus = min(cpus, int(quota) / int(period))
    return cpus


def page_cache_memory() -> int:
    """Bytes the page cache may use here: the cgroup's memory limit if any, else MemTotal."""
    memory = 0
    for line in (_read(Path("/proc/meminfo")) or "").splitlines():
        if line.startswith("MemTotal:"):
            memory = int(line.split()[1]) * 1024
    for path in _cgroup_files("memory.max", "memory.limit_in_bytes", "memory"):
        text = _read(path)
        if text and text.isdigit() and int(text) < NO_LIMIT:
            memory = min(memory, int(text)) if memory else int(text)
    return memory


def allocation(targets: Iterable[Path]) -> tuple[int, int, int]:
    """(bytes allocated, bytes of size, files) of fio's work files in ``targets`` and their client directories."""
    allocated = size = count = 0
    for target in targets:
        for path in fio_files(target) + [f for d in client_dirs(target) for f in fio_files(d)]:
            try:
                st = path.stat()
            except OSError:
                continue
            allocated += min(st.st_blocks * 512, st.st_size)
            size += st.st_size
            count += 1
    return allocated, size, count


def _is_true(value: object) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def is_direct(options: dict) -> bool:
    """fio's O_DIRECT: direct=1, or buffered=0 (its inverse); buffered I/O is fio's default."""
    if "direct" in options:
        return _is_true(options["direct"])
    return "buffered" in options and not _is_true(options["buffered"])


def reads(options: dict) -> bool:
    return str(options.get("rw") or options.get("readwrite") or "read").split(":")[0].strip() in READ_MODES


def working_set(options: dict, fallback_bytes: int) -> int:
    """size x numjobs as fio ran them (``fallback_bytes`` where ``size`` is not a plain size, e.g. a percentage)."""
    try:
        size = parse_size(options["size"])
    except (KeyError, ValueError, TypeError):
        size = 0
    numjobs = int(options["numjobs"]) if str(options.get("numjobs", "")).isdigit() else 1
    return size * numjobs if size > 0 else fallback_bytes


# --- one finished cell -----------------------------------------------------------------------------


def check(
    output: dict,
    job_cpu: list[JobCpu] | None,
    options: dict,
    targets: list[Path],
    filesystem: str | None,
    clients_here: int = 1,
) -> list[GuardFlag]:
    """The guards that tripped for one fio run (``output``: its JSON; ``options``: its global and job
    options) on ``targets`` (where its files still are: call before cleanup). ``clients_here``: fio
    clients on this host running the same job, whose files share its page cache."""
    jobs = output.get("jobs") or []
    usr_sys = [float(j.get("usr_cpu", 0)) + float(j.get("sys_cpu", 0)) for j in jobs]
    allocated, size, files = allocation(targets)
    flags = [
        client_cpu_flag(job_cpu, usr_sys, cpus_available()),
        page_cache_flag(is_direct(options), filesystem, working_set(options, size) * clients_here, page_cache_memory()),
        unwritten_reads_flag(reads(options), allocated, size, files),
    ]
    return [f for f in flags if f is not None]


def worst_of_clients(per_client: dict[int, list[GuardFlag]]) -> list[GuardFlag]:
    """A multi-client cell trips a rule when any client does: per rule the flag of the client furthest
    past the threshold, its detail naming that client (and how many tripped)."""
    total = len(per_client)
    merged = []
    for guard in GUARD_LIST:
        tripped = [(n, f) for n, flags in sorted(per_client.items()) for f in flags if f.rule == guard.rule]
        if not tripped:
            continue
        below = guard.rule in TRIPS_AT_OR_BELOW
        client, flag = (min if below else max)(tripped, key=lambda nf: nf[1].value)
        also = f" ({len(tripped)} of {total} clients tripped)" if len(tripped) > 1 else ""
        merged.append(flag.model_copy(update={"detail": f"client {client} of {total}: {flag.detail}{also}"}))
    return merged
