"""How busy fio's job processes were with the CPU: on one, or waiting in a run queue for one.

fio's own usr+sys (its JSON) counts only the time a job was *on* a CPU. On a loaded machine a
CPU-bound job gets a fraction of a core and waits for the rest, so its usr+sys looks moderate
although it never waited for the storage. Linux's ``/proc/<pid>/task/<tid>/schedstat`` has both:
ns on a CPU and ns waiting on a run queue. ``CpuWatch`` samples it for fio's job tasks while fio
runs; a job whose (on-CPU + run-queue wait) / wall time is near 1 was limited by the client's CPU
(pvbench.cells.guards, rule ``client_cpu``).

fio's job processes are the children of fio's main process (the ``fio`` under the keeper that
``pvbench.stopping.start_group`` runs it with); with ``thread=1`` they are threads of the main
process. The main thread, and what a job runs itself (exec_prerun's shell, the barrier waiter),
are not jobs and are left out.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

# Often enough for a probe of a second, rarely enough to cost nothing (about 80 processes are read).
SAMPLE_INTERVAL_S = 0.25
# A task seen for less wall time than this says nothing reliable (it also misses up to one interval).
MIN_SAMPLED_S = 0.5
FIO_COMM = "fio"


@dataclass(frozen=True)
class JobCpu:
    """One fio job task over the part of its life that was sampled."""

    pid: int
    tid: int
    wall_s: float
    on_cpu_s: float
    waiting_s: float  # runnable, waiting on a run queue for a CPU

    @property
    def busy_share(self) -> float:
        """Share of its wall time it was on a CPU or waiting for one (never waiting for I/O)."""
        return min(1.0, (self.on_cpu_s + self.waiting_s) / self.wall_s) if self.wall_s > 0 else 0.0


def schedstat_available() -> bool:
    return Path("/proc/self/schedstat").exists()


def _stat(pid: int) -> tuple[str, int] | None:
    """(comm, ppid) of a process, or None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    end = text.rfind(")")  # comm may hold spaces and parentheses
    comm = text[text.find("(") + 1 : end]
    fields = text[end + 2 :].split()
    return comm, int(fields[1])


def _processes() -> dict[int, tuple[str, int]]:
    found = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            info = _stat(int(name))
            if info is not None:
                found[int(name)] = info
    return found


def job_tasks(root: int, processes: dict[int, tuple[str, int]]) -> list[tuple[int, int]]:
    """(pid, tid) of fio's job tasks under ``root`` (the keeper, or fio itself): every thread of a
    child of a fio main process, and a main process's threads other than its first (``thread=1``)."""
    children: dict[int, list[int]] = {}
    for pid, (_, ppid) in processes.items():
        children.setdefault(ppid, []).append(pid)
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    mains = [
        pid
        for pid in tree
        if processes.get(pid, ("", 0))[0] == FIO_COMM and processes.get(processes[pid][1], ("", 0))[0] != FIO_COMM
    ]
    tasks = []
    for main in mains:
        tasks += [(main, tid) for tid in _threads(main) if tid != main]
        for job in children.get(main, []):
            tasks += [(job, tid) for tid in _threads(job)]
    return tasks


def _threads(pid: int) -> list[int]:
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def _schedstat(pid: int, tid: int) -> tuple[int, int] | None:
    """(ns on a CPU, ns waiting on a run queue) of one task, or None once it is gone."""
    try:
        on_cpu, waiting, _ = Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()
    except (OSError, ValueError):
        return None
    return int(on_cpu), int(waiting)


class CpuWatch:
    """While inside, samples the schedstat of fio's job tasks under ``root`` (a process group's leader)
    in a thread; ``jobs()`` then gives each job's first-to-last sample. ``jobs()`` is None where
    schedstat does not exist (a kernel without CONFIG_SCHED_INFO)."""

    def __init__(self, root: int, interval_s: float = SAMPLE_INTERVAL_S):
        self.root = root
        self.interval_s = interval_s
        self.available = schedstat_available()
        # tid -> (pid, (wall ns, on-CPU ns, wait ns) first, the same last)
        self._first: dict[int, tuple[int, tuple[int, int, int]]] = {}
        self._last: dict[int, tuple[int, int, int]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pvbench-cpu-watch", daemon=True)

    def __enter__(self) -> "CpuWatch":
        if self.available:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.sample()
            except Exception:  # a measurement aid: never let it fail the run
                pass
            self._stop.wait(self.interval_s)

    def sample(self) -> None:
        for pid, tid in job_tasks(self.root, _processes()):
            stat = _schedstat(pid, tid)
            if stat is None:
                continue
            now = (time.monotonic_ns(), *stat)
            self._first.setdefault(tid, (pid, now))
            self._last[tid] = now

    def jobs(self) -> list[JobCpu] | None:
        if not self.available:
            return None
        found = []
        for tid, (pid, first) in self._first.items():
            last = self._last[tid]
            wall_s = (last[0] - first[0]) / 1e9
            if wall_s >= MIN_SAMPLED_S:
                found.append(JobCpu(pid, tid, wall_s, (last[1] - first[1]) / 1e9, (last[2] - first[2]) / 1e9))
        return found
