"""A cell's volume shape, checked: the volume mode (Filesystem or Block) and the access mode
(ReadWriteOnce or ReadWriteMany) of the volume fio runs on — two axes of the matrix, named as
Kubernetes names them (a PVC's ``volumeMode`` and ``accessModes``; pvbench.results.volume).

One class measured in two shapes is two things (a raw block volume has no filesystem journal
or page cache in its path; a ReadWriteMany volume of Longhorn goes through an NFS server):
the shape is part of a cell's identity and key, and the report shows a class in a shape other
than the default as a row of its own (``pvbench.results.volume.storage_label``).

A Block cell runs fio on the device itself (``filename=`` the device). A device can hold data:
``check_block_device`` refuses one that is mounted, in use, too small, or (for a test that
writes) not marked scratch, before anything is written.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pvbench.fio.target import filesystem_of
from pvbench.profiles import ProfileError
from pvbench.results.volume import ACCESS_MODES, BLOCK, READ_WRITE_MANY, VOLUME_MODES

# Filesystems whose one directory several clients (pods, hosts) can use at once, as the kernel
# names a mount's type: a local mode class with access_mode ReadWriteMany must be on one of them.
SHARED_FILESYSTEMS = ("nfs", "nfs4", "cephfs", "ceph", "glusterfs", "fuse.glusterfs", "fuse.sshfs", "9p", "virtiofs")
# fio options that only make sense with files (a file layout, several files, creation, removal)
FILE_OPTIONS = (
    "nrfiles",
    "openfiles",
    "file_service_type",
    "filesize",
    "create_on_open",
    "create_only",
    "create_serialize",
    "unlink",
    "unlink_each_loop",
    "fallocate",
    "opendir",
)
WRITING_RW = ("write", "randwrite", "rw", "readwrite", "randrw", "trim", "randtrim", "trimwrite")


def parse_volume_modes(text: str) -> list[str]:
    """``Filesystem``, ``Block`` or ``Filesystem Block`` (the CLI's and the template's spelling)."""
    modes = text.replace(",", " ").split()
    for mode in modes:
        if mode not in VOLUME_MODES:
            raise ProfileError(f"volume mode {mode!r}: choose {' or '.join(VOLUME_MODES)} (Kubernetes' volumeMode)")
    if not modes:
        raise ProfileError(f"at least one volume mode is needed ({' or '.join(VOLUME_MODES)})")
    if len(set(modes)) != len(modes):
        raise ProfileError(f"volume modes are listed twice: {text!r}")
    return modes


def check_access_mode(mode: str) -> str:
    if mode not in ACCESS_MODES:
        raise ProfileError(f"access mode {mode!r}: choose {' or '.join(ACCESS_MODES)} (Kubernetes' accessModes)")
    return mode


def writes_data(test) -> bool:
    """Whether fio writes in this test (a profile's FioTest)."""
    return test.rw in WRITING_RW


def check_test_fits_shape(test, volume_mode: str, access_mode: str, shared_clients: bool = False) -> None:
    """A test the volume's shape cannot run, refused before anything runs."""
    if volume_mode == BLOCK:
        needs = sorted(set(FILE_OPTIONS) & set(test.extra))
        if needs:
            raise ProfileError(
                f"test {test.name} needs a filesystem ({', '.join(needs)}): a Block volume has none; "
                "run it on a Filesystem volume"
            )
        if test.clients > 1:
            raise ProfileError(
                f"test {test.name} has {test.clients} clients: pvbench runs multi-client tests on Filesystem "
                "volumes only (each client in its own directory); run it with volume mode Filesystem"
            )
    if shared_clients and access_mode != READ_WRITE_MANY:
        raise ProfileError(
            f"shared client volumes put every client of a cell on one volume: that needs access mode "
            f"{READ_WRITE_MANY}, not {access_mode}"
        )


def check_shared_directory(storage_class: str, directory: Path) -> None:
    """A local class with access mode ReadWriteMany is a directory on a filesystem that several
    hosts mount at once (NFS, CephFS…): a local one measured as "shared" would say nothing of one."""
    fstype = filesystem_of(directory)
    if fstype not in SHARED_FILESYSTEMS:
        raise ProfileError(
            f"storage class {storage_class}: access mode {READ_WRITE_MANY} needs a directory on a shared filesystem "
            f"({', '.join(SHARED_FILESYSTEMS[:4])}…); {directory} is on {fstype or 'an unknown filesystem'}"
        )


def _sysfs(device: Path) -> Path:
    """The device's /sys/dev/block/MAJ:MIN directory."""
    rdev = device.stat().st_rdev
    return Path(f"/sys/dev/block/{os.major(rdev)}:{os.minor(rdev)}")


def block_device_bytes(device: Path) -> int:
    """The device's size in bytes (what fio can use of it)."""
    with open(device, "rb") as f:
        return f.seek(0, os.SEEK_END)


def _devices_in_use() -> dict[int, str]:
    """Devices (st_rdev) that hold a mounted filesystem or swap, and what uses them."""
    used: dict[int, str] = {}
    sources = []
    try:
        sources += [
            (line.split()[0], f"mounted at {line.split()[1]}") for line in Path("/proc/mounts").read_text().splitlines()
        ]
    except OSError:
        pass
    try:
        sources += [(line.split()[0], "used as swap") for line in Path("/proc/swaps").read_text().splitlines()[1:]]
    except OSError:
        pass
    for source, what in sources:
        if source.startswith("/dev/"):
            try:
                info = os.stat(source)
            except OSError:
                continue
            if stat.S_ISBLK(info.st_mode):
                used.setdefault(info.st_rdev, what.replace("\\040", " "))
    return used


def check_block_device(device: Path, size_bytes: int, writes: bool, scratch: bool) -> None:
    """fio may use this path as a raw device: it is a block device, nothing has it mounted (nor a
    partition of it), nothing holds it (device-mapper, md, LVM), it is as large as the test's
    size, and a test that writes runs only on a device marked scratch. Nothing is written here."""
    try:
        info = device.stat()
    except OSError as exc:
        raise ProfileError(f"block device {device}: {exc.strerror or exc}") from None
    if not stat.S_ISBLK(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "a file" if stat.S_ISREG(info.st_mode) else "not one"
        raise ProfileError(f"{device} is not a block device ({kind}); a Block class needs a device like /dev/loop7")
    used = _devices_in_use()
    sysfs = _sysfs(device)
    devices = {info.st_rdev: device.name}
    for part in sysfs.glob("*/dev"):  # the device's partitions
        try:
            major, minor = part.read_text().split(":")
            devices[os.makedev(int(major), int(minor))] = part.parent.name
        except (OSError, ValueError):
            continue
    for rdev, name in devices.items():
        if rdev in used:
            raise ProfileError(f"{device} is in use ({name} is {used[rdev]}); pvbench runs fio on unused devices only")
    holders = [p.name for p in (sysfs / "holders").glob("*")] if (sysfs / "holders").is_dir() else []
    if holders:
        raise ProfileError(
            f"{device} is in use (held by {', '.join(holders)}); pvbench runs fio on unused devices only"
        )
    try:
        capacity = block_device_bytes(device)
    except OSError as exc:
        raise ProfileError(f"block device {device} cannot be opened: {exc.strerror or exc}") from None
    if capacity < size_bytes:
        raise ProfileError(
            f"size {size_bytes / 2**20:.0f} MiB does not fit on {device} ({capacity / 2**20:.0f} MiB); lower --size"
        )
    if writes and not scratch:
        raise ProfileError(
            f"{device} is not marked scratch and the test writes to it: fio would overwrite whatever it holds; "
            "mark the class scratch (scratch: true) if its contents may be destroyed"
        )
