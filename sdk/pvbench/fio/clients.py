"""Run N fio clients at once, released together behind a barrier (pvbench.fio.barrier).

Each client is one fio process with its own job file (its own directory or volume), in its own
process group and working directory (fio writes the barrier command's output there). The
clients lay out their files, wait at the barrier; once every job of every client is ready, the
barrier opens and they all ramp and measure the same seconds. Each client's json+ output is
kept as it is; ``pvbench.fio.merge`` makes the cell's totals from them.

Failures end the whole cell, never silently shrink it: a client whose fio fails, ends before
the barrier, or does not reach it in time stops the others (the same stop as ``run_fio``'s:
its signal to each process group, SIGKILL after the grace period) and the error names the
client. SIGTERM/SIGINT (``stop_on_signals``) stop every client and are re-raised.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from pvbench.fio.barrier import POLL_S, Barrier
from pvbench.fio.cpu_watch import CpuWatch
from pvbench.fio.runner import FioError, FioRun, fio_result, read_series_logs
from pvbench.stopping import Interrupted, check_interrupted, deferred_signals, start_group, stop_group


@dataclass
class ClientRun:
    """One client's fio run and its barrier times (wall-clock ns, one per fio job)."""

    client: int
    run: FioRun
    ready_ns: list[int] = field(default_factory=list)
    released_ns: list[int] = field(default_factory=list)


@dataclass
class _Client:
    number: int
    jobfile: str
    workdir: Path
    proc: subprocess.Popen | None = None

    @property
    def out_path(self) -> Path:
        return self.workdir / "out.json"

    @property
    def err_path(self) -> Path:
        return self.workdir / "stderr.txt"

    def result(self) -> FioRun:
        raw = self.out_path.read_text() if self.out_path.exists() else ""
        stderr = self.err_path.read_text(errors="replace").strip() if self.err_path.exists() else ""
        run = fio_result(self.proc.returncode, raw, stderr, self.jobfile)
        run.logs = read_series_logs(self.workdir)  # fio's interval logs, written in its working directory
        return run

    def prerun_messages(self) -> str:
        """What the barrier waiter said (fio saves exec_prerun's output as <job>.prerun.txt)."""
        texts = [p.read_text(errors="replace").strip() for p in self.workdir.glob("*.prerun.txt")]
        return " | ".join(t for t in texts if t)


def _stop_all(clients: list[_Client], signum: int) -> None:
    """Signal every client's group at once (they stop in parallel), then wait for each as run_fio does."""
    for client in clients:
        if client.proc is not None and client.proc.poll() is None:
            try:
                os.killpg(client.proc.pid, signum)
            except (ProcessLookupError, PermissionError):
                pass
    for client in clients:
        if client.proc is not None:
            stop_group(client.proc, signum)


def run_fio_clients(
    jobfiles: list[str],
    barrier: Barrier,
    jobs_per_client: int,
    timeout_s: float,
    release: Callable[[], None] | None = None,
    fio: str = "fio",
) -> list[ClientRun]:
    """Run one fio per job file at once, release them together, return each client's run (client 1 first).

    Every job file must carry ``exec_prerun=barrier.prerun(client)`` (client numbers from 1, in
    the list's order). ``release``, if given, is called once every client is at the barrier and
    before it opens (the hook a pod uses to wait for the other pods). Raises FioError naming the
    failing client; ``Interrupted`` after stopping every client.
    """
    exe = shutil.which(fio)
    if not exe:
        raise FioError("fio is not installed (apt-get install fio, or use the pvbench runner image)")
    total = len(jobfiles)
    expected = total * jobs_per_client
    deadline = time.monotonic() + timeout_s
    with ExitStack() as stack:
        clients = []
        for number, jobfile in enumerate(jobfiles, start=1):
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=f"pvbench-client{number}-")))
            (workdir / "job.fio").write_text(jobfile)
            clients.append(_Client(number, jobfile, workdir))
        check_interrupted()
        try:
            with ExitStack() as files, deferred_signals(raise_after=False):  # no stop before watching
                for client in clients:
                    err = files.enter_context(client.err_path.open("w"))
                    client.proc = start_group(
                        [exe, "--output-format=json+", f"--output={client.out_path}", "job.fio"],
                        cwd=client.workdir,
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,
                        stderr=err,
                    )
            check_interrupted()
            _wait_at_barrier(clients, barrier, expected, deadline)
            if release is not None:
                release()
            barrier.release()
            # watched from the release on: before it, the jobs only waited at the barrier
            with ExitStack() as watching:
                cpu_watches = [watching.enter_context(CpuWatch(client.proc.pid)) for client in clients]
                for client in clients:
                    remaining = max(0.0, deadline - time.monotonic())
                    try:
                        client.proc.wait(timeout=remaining)
                    except subprocess.TimeoutExpired as exc:
                        _stop_all(clients, signal.SIGKILL)
                        raise FioError(
                            f"client {client.number} of {total}: fio did not finish within {timeout_s:.0f} s "
                            "(storage hung?)"
                        ) from exc
        except BaseException as exc:  # Interrupted, KeyboardInterrupt, FioError: no client left running
            _stop_all(clients, exc.signum if isinstance(exc, Interrupted) else signal.SIGTERM)
            raise
        ready, released = barrier.ready(), barrier.released()
        runs = []
        for client, cpu_watch in zip(clients, cpu_watches):
            try:
                run = client.result()
            except FioError as exc:
                raise FioError(f"client {client.number} of {total}: {exc}") from None
            run.job_cpu = cpu_watch.jobs()
            got = released.get(client.number, [])
            if len(got) < jobs_per_client:
                why = client.prerun_messages() or "its barrier wait failed"
                raise FioError(
                    f"client {client.number} of {total}: {jobs_per_client - len(got)} of its fio jobs did not "
                    f"start behind the barrier ({why}); no result for this cell"
                )
            runs.append(ClientRun(client.number, run, ready.get(client.number, []), got))
    return runs


def _wait_at_barrier(clients: list[_Client], barrier: Barrier, expected: int, deadline: float) -> None:
    """Until every job of every client is at the barrier; a client that ends or is late fails the cell."""
    total = len(clients)
    while barrier.count_ready() < expected:
        for client in clients:
            if client.proc.poll() is not None:
                try:
                    client.result()
                    why = "fio ended before reaching the start barrier"
                except FioError as exc:
                    why = str(exc)
                raise FioError(f"client {client.number} of {total}: {why}; the other clients were stopped")
        if time.monotonic() > deadline:
            ready = barrier.ready()
            late = [str(c.number) for c in clients if not ready.get(c.number)]
            raise FioError(
                f"client(s) {', '.join(late) or '?'} of {total} did not reach the start barrier in time "
                "(laying out their files?); the other clients were stopped"
            )
        time.sleep(POLL_S * 5)
