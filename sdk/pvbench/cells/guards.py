"""Guards: rules that say a cell may have measured something other than the storage.

Each rule is defined here once (the catalog, exported to SQL as ``guard_catalog`` for the
methodology page and the statistics); ``check`` evaluates them for a finished cell and returns the
``GuardFlag`` of each rule that tripped. A flag's ``bias`` says which way the measurement is off:
``understates`` (the client, not the storage, was the limit: the storage is at least this fast) or
``overstates`` (a cache or never-written data answered: the storage is at most this fast).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Bias = Literal["understates", "overstates"]


@dataclass(frozen=True)
class Guard:
    rule: str  # as GuardFlag.rule names it
    title: str  # as the report prints it
    threshold: float  # what value trips it (see ``unit``)
    unit: str
    bias: Bias
    excluded: bool  # left out of rankings and verdicts by default when it trips
    description: str  # one line for the methodology page


GUARD_LIST: tuple[Guard, ...] = (
    Guard(
        "client_cpu",
        "Measured the client, not the storage",
        0.9,
        "share of the run fio's busiest job was on a CPU or waiting for one",
        "understates",
        True,
        "fio's own CPU (usr+sys in its JSON) plus its time waiting for a CPU: a job that never waited for the "
        "storage was limited by the CPU it had",
    ),
    Guard(
        "page_cache",
        "Measured memory, not the storage",
        1.0,
        "working set / memory available to the page cache",
        "overstates",
        True,
        "buffered I/O (direct=0) whose files fit in the memory the page cache may use: reads and writes may never "
        "reach the device; on tmpfs the class is memory itself (flagged, not excluded)",
    ),
    Guard(
        "unwritten_reads",
        "Read data that was never written",
        0.9,
        "share of the read files' size actually allocated",
        "overstates",
        True,
        "a read test whose files are sparse (holes): a thin or fresh volume answers those reads without a disk",
    ),
)
GUARDS = {g.rule: g for g in GUARD_LIST}
