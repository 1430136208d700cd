"""One aggregation of a campaign at a time (local mode's counterpart of Argo's campaign mutex).

Why: an aggregation compacts its run, then reads every compact of the campaign and writes the
campaign's tables. Two of them started together (two local runs that finish at once, a cron
job beside a manual ``pvbench aggregate``) each read the compacts before the other had written
its own, and whichever wrote the tables last left the other's run out of them until the next
aggregation. Holding this lock from the first listing to the last table written makes the second
one read the first one's compact.

On one machine the lock is ``flock(2)`` on a file: the kernel releases it when its process ends,
however it ends, so a killed aggregation never leaves a stale lock behind. Where the file is:

- a directory store: in the store, at ``layout.lock_key`` (``.locks/campaign=<slug>.lock``, a dot
  folder, which listings skip), so every process that aggregates that directory shares it;
- an S3 store (or a directory store that does not exist or cannot be written): in this user's
  runtime folder, named for the store's URL.

An S3 store is shared by machines that share no kernel: a cron job on a jump host, a laptop, a
CI runner. There the flock is followed by a **lease** in the store itself, the object at
``layout.lock_key`` (``StoreLease``): created only if absent and renewed only if unchanged (S3's
conditional writes, ``If-None-Match``/``If-Match``, so of two machines exactly one gets it), and
renewed every LEASE_TTL_S / 4 while held. A holder that died without releasing it (``kill -9``,
a machine gone) is recognized by the lease's age by the server's own clock (not renewed for
LEASE_TTL_S), or at once when it ran on this machine and its process is gone, and is taken over;
a holder whose lease was taken over (stopped for longer than that) writes no tables (ensure_held).
A store that ignores the conditions (an old S3-compatible server) is said once, and aggregations
from several machines are then not serialized; on Kubernetes the Argo mutex
``pvbench-campaign-<slug>`` serializes the workflow's own aggregations either way.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import socket
import stat
import tempfile
import threading
import uuid
from pathlib import Path, PurePosixPath
from typing import Callable, Iterator

from pvbench.store.base import StoreError
from pvbench.store.layout import LOCKS_ROOT, lock_key

log = logging.getLogger("pvbench.store")

# A lease not renewed for this long is a dead holder's, taken over by the next aggregation; held
# ones are renewed four times as often. $PVBENCH_LOCK_TTL_S (tests shorten it).
LEASE_TTL_S = 60.0
# How often a waiting aggregation asks again whether the lease is free.
LEASE_POLL_S = 1.0


class LockLost(StoreError):
    """This process's lease of a campaign was taken over by another aggregation (see StoreLease)."""


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
    through ``waiting`` (once) and wait until it is released. On an S3 store, also the campaign's
    lease in the store, which serializes aggregations from other machines (StoreLease)."""
    with _machine_lock(store, campaign, waiting) as path:
        if not hasattr(store, "put_if"):  # a directory store: its flock is in the store already
            yield path
            return
        with StoreLease(store, lock_key(campaign), _what(campaign), waiting):
            yield path


# the leases this process holds, by (store URL, key): ensure_held looks there
_HELD: dict[tuple[str, str], "StoreLease"] = {}


def ensure_held(store, campaign: str | None) -> None:
    """Raise LockLost if this process's lease of the campaign was taken over meanwhile (its holder
    stopped for longer than the lease's TTL: a laptop suspended mid-aggregation). Called before
    the campaign's tables are written: another aggregation is running on the compacts now, and
    tables written after its own would lack its run. Nothing to do without a lease (a directory
    store, whose flock cannot be taken over)."""
    lease = _HELD.get((store.url, lock_key(campaign)))
    if lease is not None and lease.lost:
        raise LockLost(
            f"lost the lock {lease.url}: it was not renewed for {lease.ttl:.0f} s (was this process stopped?) "
            "and another aggregation took it over; nothing was written. Aggregate again once it has finished"
        )


def _what(campaign: str | None) -> str:
    return f"campaign {campaign!r}" if campaign else "every campaign"


def _waiting_line(what: str, store_url: str, holder: str, lock: object) -> str:
    """What an aggregation that waits says, for the machine's flock and the store's lease alike."""
    return f"another aggregation of {what} of {store_url} is running ({holder}): waiting for it to finish (lock {lock})"


@contextlib.contextmanager
def _machine_lock(store, campaign: str | None, waiting: Callable[[str], None] | None = None) -> Iterator[Path]:
    """The flock of campaign_lock (see the module's docstring)."""
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
                waiting(_waiting_line(_what(campaign), store.url, holder, path))
            fcntl.flock(fd, fcntl.LOCK_EX)
        if writable:  # who holds it, for the message of the next one that waits
            os.ftruncate(fd, 0)
            os.pwrite(fd, _holder().encode(), 0)
        yield path
    finally:
        os.close(fd)  # releases the lock


@contextlib.contextmanager
def folder_lock(folder: Path, shared: bool) -> Iterator[None]:
    """``flock(2)`` on a folder itself (no lock file among what it holds): exclusive while a set of
    tables in it is replaced (analytics.outputs.write_parquet), shared while one is read (the report build's
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


def _holder() -> str:
    return f"pid {os.getpid()} on {socket.gethostname()}"


def _boot_id() -> str:
    """This boot of this machine: a pid on this host names the same process only within one boot."""
    with contextlib.suppress(OSError):
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    return ""


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # another user's process: there
        return False
    return False


class StoreLease:
    """The campaign's lease in an S3 store, held for a ``with`` block (see the module's docstring).

    Its object holds who holds it (as the flock's file does), a token of this holder, and a
    renewal count: each write changes its content, so its ETag names one write of one holder."""

    def __init__(self, store, key: str, what: str, waiting: Callable[[str], None] | None = None):
        self.store, self.key, self.what, self.waiting = store, key, what, waiting
        self.ttl = float(os.environ.get("PVBENCH_LOCK_TTL_S") or LEASE_TTL_S)
        self.token = uuid.uuid4().hex
        self.renewals = 0
        self.etag: str | None = None
        self.lost = False  # another aggregation took it over (not renewed for the TTL)
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"{self.store.url}/{self.key}"

    def _body(self) -> bytes:
        return json.dumps(
            {
                "holder": _holder(),
                "host": socket.gethostname(),
                "boot_id": _boot_id(),
                "pid": os.getpid(),
                "token": self.token,
                "renewal": self.renewals,
            }
        ).encode()

    def __enter__(self) -> "StoreLease":
        said = False
        while True:
            etag = self.store.put_if(self.key, self._body())
            if etag is not None:
                self.etag = etag
                break
            current = self.store.get_versioned(self.key)
            if current is None:  # released meanwhile
                continue
            content, etag, age_s = current
            lease = _parse(content)
            if lease.get("token") == self.token:  # our own write, whose answer was lost and retried
                self.etag = etag
                break
            stale = self._stale(lease, age_s)
            if stale:
                taken = self.store.put_if(self.key, self._body(), etag=etag)
                if taken is not None:
                    log.warning(
                        "took over the lock %s of %s (%s)", self.url, lease.get("holder", "an unknown holder"), stale
                    )
                    self.etag = taken
                    break
                continue  # another waiter took it first
            if not said and self.waiting is not None:
                self.waiting(_waiting_line(self.what, self.store.url, lease.get("holder", "another machine"), self.url))
            said = True
            self._stop.wait(LEASE_POLL_S)
        _HELD[(self.store.url, self.key)] = self
        if not self._honoured():
            return self
        self._renewer = threading.Thread(target=self._renew, name="pvbench-lock-lease", daemon=True)
        self._renewer.start()
        return self

    def _stale(self, lease: dict, age_s: float) -> str:
        """Why the lease is a dead holder's, or "" while it may be alive."""
        if age_s > self.ttl:
            return f"not renewed for {age_s:.0f} s"
        if (
            lease.get("host") == socket.gethostname()
            and lease.get("boot_id") == _boot_id()
            and isinstance(lease.get("pid"), int)
            and _gone(lease["pid"])
        ):
            return f"its process {lease['pid']} on this machine is gone"
        return ""

    def _honoured(self) -> bool:
        """Does the store honour If-None-Match? A second create of the lease must fail. Where it
        does not, every machine would get the lease at once: said, and the flock is all there is."""
        again = self.store.put_if(self.key, self._body())
        if again is None:
            return True
        log.warning(
            "%s ignores conditional writes (If-None-Match): aggregations of %s from other machines are not "
            "serialized; this machine's are",
            self.store.url,
            self.what,
        )
        self.etag = again
        return False

    def _renew(self) -> None:
        while not self._stop.wait(self.ttl / 4):
            self.renewals += 1
            try:
                etag = self.store.put_if(self.key, self._body(), etag=self.etag)
                if etag is None:  # refused: taken over, or this renewal was written, its answer lost and retried
                    etag = self._mine()
            except Exception as exc:  # the store unreachable for a while: try again at the next turn
                log.warning("could not renew the lock %s (%s)", self.url, exc)
                continue
            if etag is None:
                self.lost = True
                log.error(
                    "lost the lock %s: it was not renewed for %.0f s and another aggregation took it over; "
                    "this one will not write the campaign's tables",
                    self.url,
                    self.ttl,
                )
                return
            self.etag = etag

    def _mine(self) -> str | None:
        """The lease's ETag if it is still this holder's, else None."""
        current = self.store.get_versioned(self.key)
        if current is not None and _parse(current[0]).get("token") == self.token:
            return current[1]
        return None

    def __exit__(self, *exc) -> None:
        _HELD.pop((self.store.url, self.key), None)
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join()
        with contextlib.suppress(Exception):  # a lease left behind is taken over once it is stale
            if self._mine() is not None:
                self.store.delete(self.key)


def _parse(content: bytes) -> dict:
    try:
        lease = json.loads(content)
    except ValueError:
        return {}
    return lease if isinstance(lease, dict) else {}
