"""Stopping pvbench, and what it started, when it is asked to (SIGTERM from Kubernetes, ``kill`` or
``timeout``; SIGINT from Ctrl-C).

``stop_on_signals`` turns the signal into ``Interrupted`` so a command unwinds (its ``finally``
blocks remove what it made, its locks are released) and exits 128 + the signal with one line;
``deferred_signals`` holds it while something must be written whole; ``stop_group`` stops a
process group pvbench started (fio, the report's Evidence build) with it. Used by fio's runner,
local mode, the Argo steps, ``pvbench aggregate``, the commands that read a campaign and
``pvbench report build``. For what a SIGKILL leaves, which nothing of pvbench can handle:
``start_group`` (a keeper leads fio's or Evidence's group and ends it once pvbench is gone) and
``own_temporary_folder`` (a killed command's folder is removed by the next one).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

# own_temporary_folder's: a file in the folder its process holds an flock on while it runs (the
# kernel drops the lock when the process ends, however it ends: SIGKILL, the OOM killer)
OWNER_FILE = ".pvbench-owner"
# a folder is abandoned only this long after its owner file was made: between making the folder
# and locking the file there is a moment in which an unlocked file is not yet a dead owner
ABANDONED_AFTER_S = 60.0
# every own_temporary_folder's name starts so (each command adds its own name), and only folders
# holding an owner file are ever removed
OWNED_PREFIX = "pvbench-"

# How long a process group pvbench started (fio, Evidence) may take to stop after the forwarded
# signal before it is killed (Kubernetes gives a pod 30 s in all between SIGTERM and SIGKILL).
STOP_GRACE_S = 10.0
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Interrupted(Exception):
    """pvbench itself was asked to stop (SIGTERM/SIGINT); what it ran (fio, Evidence) has been stopped."""

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
    """Send ``signum`` to ``proc``'s process group (it leads one: start_group), wait for it,
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
    # anything left in the group (fio's job processes start sessions of their own; fio itself
    # stops them when it gets SIGTERM/SIGINT)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def start_group(cmd: list[str], **popen) -> subprocess.Popen:
    """Start ``cmd`` in a process group of its own (fio, the report's Evidence build), which
    ``stop_group`` stops with pvbench. A keeper (tied_to_this_process) leads the group, so the
    group ends with pvbench even when pvbench is killed outright."""
    return subprocess.Popen(tied_to_this_process(cmd), start_new_session=True, **popen)


def tied_to_this_process(cmd: list[str]) -> list[str]:
    """``cmd`` under a keeper (pvbench/keeper.py): a small Python process that runs it, leads its
    process group when started in a session of its own (start_group) and ends the group when this
    process is gone, however it ended. stop_group stops the group as before (the keeper ignores
    the signal and waits for ``cmd``, whose exit it exits with). Without it, `pvbench report
    build` killed with SIGKILL left Evidence (node, vite, esbuild) building for good, and `pvbench
    local run` left fio writing to the storage until its runtime ended: nothing of pvbench could
    stop them, and a parent-death signal reaches only the first process of the group."""
    keeper = Path(__file__).with_name("keeper.py")
    return [sys.executable, "-I", "-S", str(keeper), str(os.getpid()), str(STOP_GRACE_S), *cmd]


@contextlib.contextmanager
def own_temporary_folder(prefix: str) -> Iterator[Path]:
    """Inside, the temporary folder (tempfile's and TMPDIR, which processes started meanwhile
    inherit) is a folder of its own, removed on leaving however the block ends. A stop signal can
    land inside the cleanup of one of the many folders a command makes there (seen: a
    ``pvbench-parts-*`` left after SIGTERM); this one is removed with signals deferred.

    A process killed outright (SIGKILL, the OOM killer) removes nothing: its folder (up to three
    batches of documents being compacted, ~60 MB) would stay for good. The folder holds a file its
    process keeps locked, so the next command that makes one removes those whose lock is free."""
    assert prefix.startswith(OWNED_PREFIX), prefix
    remove_abandoned(tempfile.gettempdir(), OWNED_PREFIX)
    folder = tempfile.mkdtemp(prefix=prefix)
    owner = os.open(os.path.join(folder, OWNER_FILE), os.O_CREAT | os.O_WRONLY, 0o600)
    fcntl.flock(owner, fcntl.LOCK_EX)
    saved = tempfile.tempdir, os.environ.get("TMPDIR")
    tempfile.tempdir, os.environ["TMPDIR"] = folder, folder
    try:
        yield Path(folder)
    finally:
        with deferred_signals(raise_after=False):
            tempfile.tempdir = saved[0]
            if saved[1] is None:
                os.environ.pop("TMPDIR", None)
            else:
                os.environ["TMPDIR"] = saved[1]
            shutil.rmtree(folder, ignore_errors=True)
            os.close(owner)


def remove_abandoned(root: str, prefix: str) -> list[str]:
    """Remove the folders ``prefix``* in ``root`` that own_temporary_folder made for a process that
    is gone: their owner file is unlocked and older than ABANDONED_AFTER_S. A folder without the file
    is not one it made, or not yet one: it is left alone. Returns the folders removed."""
    removed = []
    try:
        entries = [e for e in os.scandir(root) if e.name.startswith(prefix) and e.is_dir(follow_symlinks=False)]
    except OSError:
        return removed
    for entry in entries:
        path = os.path.join(entry.path, OWNER_FILE)
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            if time.time() - os.fstat(fd).st_mtime < ABANDONED_AFTER_S:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # its process still runs
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
        finally:
            os.close(fd)
    return removed
