"""A cell's volume shape, as its identity and key hold it: the volume mode (Filesystem or Block)
and the access mode (ReadWriteOnce or ReadWriteMany) of the volume fio ran on, named as Kubernetes
names them (a PVC's ``volumeMode`` and ``accessModes``). What each measures, and the checks a
shape needs before fio runs: pvbench.cells.volume, docs/volumes.md."""

from __future__ import annotations

from typing import Literal

VolumeMode = Literal["Filesystem", "Block"]
AccessMode = Literal["ReadWriteOnce", "ReadWriteMany"]
FILESYSTEM, BLOCK = "Filesystem", "Block"
READ_WRITE_ONCE, READ_WRITE_MANY = "ReadWriteOnce", "ReadWriteMany"
VOLUME_MODES: tuple[str, ...] = (FILESYSTEM, BLOCK)
ACCESS_MODES: tuple[str, ...] = (READ_WRITE_ONCE, READ_WRITE_MANY)
DEFAULT_VOLUME_MODE, DEFAULT_ACCESS_MODE = FILESYSTEM, READ_WRITE_ONCE
# Kubernetes' own short names (kubectl get pv shows them)
ACCESS_SHORT = {READ_WRITE_ONCE: "RWO", READ_WRITE_MANY: "RWX"}


def volume_key(volume_mode: str, access_mode: str) -> str:
    """The shape as the store key's ``volume=`` segment: ``filesystem-rwo``, ``block-rwx``…"""
    return f"{volume_mode.lower()}-{ACCESS_SHORT[access_mode].lower()}"


def storage_label(storage_class: str, volume_mode: str, access_mode: str) -> str:
    """The class as the report's rows name it: the class alone in the default shape, else with its
    shape (``fast (Block)``, ``nfs (RWX)``, ``fast (Block, RWX)``), so one class measured in two
    shapes is two rows, never one mean of both. analytics/models/2_normalized/result_rows.sql
    makes the same label (a test keeps them equal)."""
    parts = [volume_mode] if volume_mode != DEFAULT_VOLUME_MODE else []
    parts += [ACCESS_SHORT[access_mode]] if access_mode != DEFAULT_ACCESS_MODE else []
    return f"{storage_class} ({', '.join(parts)})" if parts else storage_class
