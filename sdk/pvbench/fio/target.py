"""Checks on the directory fio will write to, made before fio starts, and the cleanup of fio's files.

fio writes its work files into the target under names only pvbench uses
(``FIO_FILE_FORMAT``: ``pvbench-fio.<job>.<file>``); cleanup removes exactly those names and
nothing else, so a user's own files in the target (``pvbench.yaml``, notes…) are never touched.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

from pvbench.profiles import ProfileError
from pvbench.profiles.jobfile import FIO_FILE_FORMAT, fio_path

# The names fio makes from FIO_FILE_FORMAT ($jobnum and $filenum are numbers), and only those.
_FIO_FILE = re.compile(
    "^" + re.escape(FIO_FILE_FORMAT).replace(re.escape("$jobnum"), r"\d+").replace(re.escape("$filenum"), r"\d+") + "$"
)


def filesystem_of(path: Path) -> str | None:
    """Filesystem type of the mount holding ``path`` (longest matching mount point)."""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return None
    path = path.resolve()
    best, fstype = "", None
    for line in mounts:
        parts = line.split()
        if len(parts) < 3:
            continue
        mount_point = parts[1].replace("\\040", " ")
        if (str(path) == mount_point or str(path).startswith(mount_point.rstrip("/") + "/")) and len(
            mount_point
        ) >= len(best):
            best, fstype = mount_point, parts[2]
    return fstype


def check_target_path(target: Path) -> None:
    """The path can go into a fio job file as itself, and is a directory if it exists."""
    fio_path(target)
    if target.exists() and not target.is_dir():
        raise ProfileError(f"target {target} is a file, not a directory; give the directory fio should write into")


def check_target(target: Path, size_bytes: int, numjobs: int) -> None:
    """The target exists, is writable and has room for every job's file (fio makes one per job)."""
    check_target_path(target)
    if not target.is_dir():
        raise ProfileError(f"target {target} does not exist")
    try:
        # a fresh, exclusively created name: never overwrites a file of the user's
        with tempfile.NamedTemporaryFile(dir=target, prefix=".pvbench-write-probe-") as probe:
            probe.write(b"x")
            probe.flush()
    except OSError as exc:
        raise ProfileError(f"target {target} is not writable: {exc.strerror or exc}") from exc
    needed = size_bytes * numjobs
    free = shutil.disk_usage(target).free + existing_fio_bytes(target)
    if needed > free:
        raise ProfileError(
            f"size {size_bytes / 2**20:.0f} MiB × {numjobs} job(s) = {needed / 2**20:.0f} MiB does not fit "
            f"in {target} ({free / 2**20:.0f} MiB free); lower --size"
        )


# Local mode's multi-client cells give client N the subdirectory ``pvbench-client-N`` of the target
# (the local stand-in for "its own volume"); cleanup empties and removes exactly these, too.
CLIENT_DIR_PREFIX = "pvbench-client-"
_CLIENT_DIR = re.compile("^" + re.escape(CLIENT_DIR_PREFIX) + r"\d+$")


def client_dir(target: Path, client: int) -> Path:
    return target / f"{CLIENT_DIR_PREFIX}{client}"


def client_dirs(target: Path) -> list[Path]:
    """The clients' subdirectories pvbench made in ``target`` (real directories, not symlinks)."""
    try:
        entries = list(target.iterdir())
    except OSError:
        return []
    return [p for p in entries if _CLIENT_DIR.match(p.name) and p.is_dir() and not p.is_symlink()]


def fio_files(target: Path) -> list[Path]:
    """fio's work files that pvbench made in ``target`` (exact names, regular files only)."""
    try:
        entries = list(target.iterdir())
    except OSError:
        return []
    return [p for p in entries if _FIO_FILE.match(p.name) and p.is_file() and not p.is_symlink()]


def existing_fio_bytes(target: Path) -> int:
    """pvbench's own leftover fio files count as free: fio reuses (overwrites) them."""
    files = fio_files(target) + [f for d in client_dirs(target) for f in fio_files(d)]
    return sum(p.stat().st_size for p in files)


def remove_fio_files(target: Path) -> None:
    """Remove fio's work files, and only them (never a user's own file in the target); the same in
    the clients' subdirectories, which are then removed if nothing else is in them."""
    for path in fio_files(target) + [f for d in client_dirs(target) for f in fio_files(d)]:
        try:
            path.unlink()
        except OSError:
            pass
    for directory in client_dirs(target):
        try:
            directory.rmdir()
        except OSError:
            pass  # not empty: something of the user's is in it
