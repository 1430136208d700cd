"""Run fio on a job file and return its json+ output, or a readable error.

fio runs in its own process group. When pvbench is asked to stop (SIGTERM from Kubernetes or
``kill``, SIGINT from Ctrl-C) while fio runs, ``stop_on_signals`` turns the signal into
``Interrupted``; ``run_fio`` then passes the signal on to fio's whole group, waits for it to
end (SIGKILL after a grace period), removes its temporary files and re-raises, so callers
clean the target, keep what is stored and exit non-zero. No fio is left running as an orphan.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterator

# How long fio may take to stop after the forwarded signal before it is killed (Kubernetes
# gives a pod 30 s in all between SIGTERM and SIGKILL).
STOP_GRACE_S = 10.0
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class FioError(RuntimeError):
    """fio could not run, was killed, or reported a failed job."""


class Interrupted(Exception):
    """pvbench itself was asked to stop (SIGTERM/SIGINT); fio has been stopped."""

    def __init__(self, signum: int):
        self.signum = signum
        self.name = signal.Signals(signum).name
        super().__init__(f"interrupted by {self.name}")

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class _SignalState:
    received: int | None = None
    deferred: int = 0  # inside `deferred_signals()`: remember the signal, raise on leaving


_state = _SignalState()


def _on_signal(signum, frame) -> None:
    if _state.received is not None:
        return  # already stopping: a second signal does not interrupt the cleanup
    _state.received = signum
    if not _state.deferred:
        raise Interrupted(signum)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """While inside, SIGTERM and SIGINT raise ``Interrupted`` (main thread only). An error that
    ends the block after a stop signal came is that signal: a library may have made its own error
    of the ``Interrupted`` raised inside it (DuckDB's "Query interrupted")."""
    previous = {sig: signal.signal(sig, _on_signal) for sig in STOP_SIGNALS}
    _state.received = None
    try:
        yield
    except Exception as exc:
        if _state.received is not None and not isinstance(exc, Interrupted):
            raise Interrupted(_state.received) from exc
        raise
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _state.received = None  # handled here; a later run in this process starts afresh


@contextlib.contextmanager
def deferred_signals(raise_after: bool = True) -> Iterator[None]:
    """A signal arriving inside (e.g. while a result is written) takes effect on leaving
    (or, with ``raise_after=False``, at the caller's next ``check_interrupted()``)."""
    _state.deferred += 1
    try:
        yield
    finally:
        _state.deferred -= 1
    if raise_after:
        check_interrupted()


def check_interrupted() -> None:
    """Raise ``Interrupted`` if a stop signal came while it could not be raised."""
    if _state.received is not None and not _state.deferred:
        raise Interrupted(_state.received)


def stop_group(proc: subprocess.Popen, signum: int) -> None:
    """Send ``signum`` to ``proc``'s process group (it leads one: start_new_session), wait for it,
    SIGKILL what is left after the grace period. fio's, and the report build's Evidence."""
    for sig, wait_s in ((signum, STOP_GRACE_S), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=wait_s)
            break
        except subprocess.TimeoutExpired:
            continue
    # anything left in fio's group (fio's job processes start sessions of their own; fio itself
    # stops them when it gets SIGTERM/SIGINT)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


@dataclass
class FioRun:
    output: dict
    raw_text: str
    stderr: str
    jobfile: str


@lru_cache(maxsize=1)
def fio_version() -> str | None:
    exe = shutil.which("fio")
    if not exe:
        return None
    return subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip() or None


def run_fio(jobfile: str, timeout_s: float, fio: str = "fio") -> FioRun:
    """Run fio once with --output-format=json+. Raises FioError with fio's own words on failure."""
    exe = shutil.which(fio)
    if not exe:
        raise FioError("fio is not installed (apt-get install fio, or use the pvbench runner image)")
    with tempfile.TemporaryDirectory(prefix="pvbench-fio-") as tmp:
        job_path = Path(tmp) / "job.fio"
        out_path = Path(tmp) / "out.json"
        job_path.write_text(jobfile)
        check_interrupted()
        # its own process group (session): a signal meant for fio reaches its job processes too,
        # and a Ctrl-C reaches pvbench, which stops fio itself
        err_path = Path(tmp) / "stderr.txt"
        # fio's messages go to a file, not a pipe: a job process outliving a killed fio would hold
        # a pipe open, and waiting for its end would wait for that process
        with err_path.open("w") as err_file, deferred_signals(raise_after=False):  # no stop before watching
            proc = subprocess.Popen(
                [exe, "--output-format=json+", f"--output={out_path}", str(job_path)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err_file,
                start_new_session=True,
            )
        try:
            check_interrupted()
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired as exc:
            stop_group(proc, signal.SIGKILL)
            raise FioError(f"fio did not finish within {timeout_s:.0f} s (storage hung?)") from exc
        except BaseException as exc:  # Interrupted, KeyboardInterrupt: stop fio before anything else
            stop_group(proc, exc.signum if isinstance(exc, Interrupted) else signal.SIGTERM)
            raise
        raw = out_path.read_text() if out_path.exists() else ""
        stderr = err_path.read_text(errors="replace").strip()
    return fio_result(proc.returncode, raw, stderr, jobfile)


def fio_result(returncode: int, raw: str, stderr: str, jobfile: str) -> FioRun:
    """A finished fio's exit code, output file and messages as a FioRun, or the FioError saying why not
    (shared by ``run_fio`` and the multi-client runner, pvbench.fio.clients)."""
    if returncode < 0:
        name = signal.Signals(-returncode).name
        raise FioError(f"fio was killed by {name} before finishing; no result for this cell")
    if returncode != 0:
        detail = stderr.splitlines()[-3:] if stderr else [f"exit code {returncode}"]
        raise FioError("fio failed: " + " | ".join(detail))
    # fio may print warnings before the JSON document in the output file.
    start = raw.find("{")
    try:
        output = json.loads(raw[start:]) if start >= 0 else None
    except json.JSONDecodeError as exc:
        raise FioError(f"fio's JSON output could not be read: {exc}") from exc
    if not output or not output.get("jobs"):
        raise FioError("fio exited 0 but reported no jobs")
    return FioRun(output=output, raw_text=raw[start:], stderr=stderr, jobfile=jobfile)
