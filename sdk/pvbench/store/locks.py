"""One aggregation of a campaign at a time, on one machine (local mode's counterpart of Argo's
campaign mutex).

Why: an aggregation compacts its run, then reads every compact of the campaign and writes the
campaign's tables. Two of them started together (two local runs that finish at once, a cron
job beside a manual ``pvbench aggregate``) each read the compacts before the other had written
its own, and whichever wrote the tables last left the other's run out of them until the next
aggregation. Holding this lock from the first listing to the last table written makes the second
one read the first one's compact.

The lock is ``flock(2)`` on a file: the kernel releases it when its process ends, however it
ends, so a killed aggregation never leaves a stale lock behind. Where the file is:

- a directory store: in the store, at ``layout.lock_key`` (``.locks/campaign=<slug>.lock``, a dot
  folder, which listings skip), so every process that aggregates that directory shares it;
- an S3 store (or a directory store that does not exist or cannot be written): in this user's
  runtime folder, named for the store's URL. Aggregations of one S3 store from several machines
  are not serialized by it; on Kubernetes the Argo mutex ``pvbench-campaign-<slug>`` does that.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import socket
import stat
import tempfile
from pathlib import Path, PurePosixPath
from typing import Callable, Iterator

from pvbench.store.layout import LOCKS_ROOT, lock_key


def machine_locks_dir() -> Path:
    """This user's folder of locks that are not kept in a store."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = Path(runtime) if runtime else Path(tempfile.gettempdir()) / f"pvbench-{os.getuid()}"
    return base / "pvbench-locks"


def lock_path(store, campaign: str | None) -> Path:
    """Where the campaign's lock of this store is (see the module's docstring)."""
    root = getattr(store, "root", None)
    if root is not None:
        folder = Path(root) / LOCKS_ROOT
        with contextlib.suppress(OSError):
            if not folder.is_dir():
                folder.mkdir()  # not the store's folder itself: a mistyped path stays absent
                # shared as the store is: whoever may write the store may lock in it (with a umask
                # of 077 the folder was the first user's only, and the others' locks went to
                # their own folders, where they serialized nothing)
                os.chmod(folder, stat.S_IMODE(os.stat(root).st_mode))
            if os.access(folder, os.W_OK):
                return Path(root) / lock_key(campaign)
    digest = hashlib.sha256(store.url.encode()).hexdigest()[:16]
    return machine_locks_dir() / f"{digest}-{PurePosixPath(lock_key(campaign)).name}"


@contextlib.contextmanager
def campaign_lock(store, campaign: str | None, waiting: Callable[[str], None] | None = None) -> Iterator[Path]:
    """Hold the campaign's lock of this store for the block; if another process holds it, say so
    through ``waiting`` (once) and wait until it is released."""
    path = lock_path(store, campaign)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, writable = os.open(path, os.O_RDWR | os.O_CREAT, 0o666), True
    except PermissionError:  # another user's lock file: flock works on a file opened to read
        fd, writable = os.open(path, os.O_RDONLY), False
    if writable and os.fstat(fd).st_uid == os.getuid():
        # readable (lockable) by whoever may use its folder, whatever this process's umask
        with contextlib.suppress(OSError):
            os.fchmod(fd, stat.S_IMODE(os.stat(path.parent).st_mode) & 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting is not None:
                holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
                what = f"campaign {campaign!r}" if campaign else "every campaign"
                waiting(
                    f"another aggregation of {what} of {store.url} is running ({holder}): "
                    f"waiting for it to finish (lock {path})"
                )
            fcntl.flock(fd, fcntl.LOCK_EX)
        if writable:  # who holds it, for the message of the next one that waits
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}".encode(), 0)
        yield path
    finally:
        os.close(fd)  # releases the lock


@contextlib.contextmanager
def folder_lock(folder: Path, shared: bool) -> Iterator[None]:
    """``flock(2)`` on a folder itself (no lock file among what it holds): exclusive while a set of
    tables in it is replaced (runner.write_parquet), shared while one is read (the report build's
    stage_data), so a reader never copies half of one set and half of the next. Where the
    filesystem cannot lock a folder (some network filesystems), the block runs without it."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        yield
        return
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock
