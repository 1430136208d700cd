"""Checks on the directory fio will write to, made before fio starts."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pvbench.profiles import ProfileError


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
        if (str(path) == mount_point or str(path).startswith(mount_point.rstrip("/") + "/")) and len(mount_point) >= len(best):
            best, fstype = mount_point, parts[2]
    return fstype


def check_target(target: Path, size_bytes: int, numjobs: int) -> None:
    """The target exists, is writable and has room for every job's file (fio makes one per job)."""
    if not target.is_dir():
        raise ProfileError(f"target {target} does not exist or is not a directory")
    probe = target / f".pvbench-write-probe-{os.getpid()}"
    try:
        probe.write_bytes(b"x")
        probe.unlink()
    except OSError as exc:
        raise ProfileError(f"target {target} is not writable: {exc.strerror or exc}") from exc
    needed = size_bytes * numjobs
    free = shutil.disk_usage(target).free + existing_fio_bytes(target)
    if needed > free:
        raise ProfileError(
            f"size {size_bytes / 2**20:.0f} MiB × {numjobs} job(s) = {needed / 2**20:.0f} MiB does not fit "
            f"in {target} ({free / 2**20:.0f} MiB free); lower --size"
        )


def existing_fio_bytes(target: Path) -> int:
    """pvbench's own leftover fio files count as free: fio reuses (overwrites) them."""
    return sum(p.stat().st_size for p in target.glob("pvbench.*") if p.is_file())


def remove_fio_files(target: Path) -> None:
    for path in target.glob("pvbench.*"):
        try:
            path.unlink()
        except OSError:
            pass
