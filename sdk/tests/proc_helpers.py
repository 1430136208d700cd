"""The machine's processes as /proc shows them (Linux), for tests that check what a stopped
pvbench left running."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Proc:
    pid: int
    state: str  # "Z": ended, waiting to be reaped
    parent: int
    session: int

    @property
    def alive(self) -> bool:
        return self.state != "Z"


def processes() -> list[Proc]:
    """Every process now (one that ends while it is read is left out)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                # after the command's ")" (which may hold spaces): state, ppid, pgrp, session
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            found.append(Proc(int(entry.name), fields[0], int(fields[1]), int(fields[3])))
    return found


def children(pid: int) -> list[int]:
    return [p.pid for p in processes() if p.parent == pid]


def alive(pids: list[int] | set[int]) -> list[int]:
    """Those of ``pids`` still running."""
    return [p.pid for p in processes() if p.pid in pids and p.alive]
