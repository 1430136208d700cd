"""N clients' fio json+ outputs → one cell's totals, each client's own result, the straggler and the skew.

Pure functions of the clients' outputs, so that local mode (N processes) and the Argo version
(N pods, each writing its own ``ClientOutput``) merge identically:

- totals: the jobs of every client are read as the jobs of one fio run (``direction_metrics``):
  IOPS, MiB/s and bytes summed, latency means weighted by sample count, percentiles recomputed
  from the merged json+ ``bins`` — never averaged over clients;
- ``straggler_ratio`` (per direction, on the totals): the slowest client's IOPS divided by the
  mean client IOPS. 1 means every client got the same share; 0.5 that the slowest got half of
  the average. A client that moved nothing in a direction counts as 0 there;
- ``start_skew_s``: the last fio job's release from the barrier minus the first's, over every
  job of every client; ``overlap_s``: the seconds during which every client was measuring
  (latest start of measurement to earliest end; fio 3.33 reports its end, ``timestamp_ms``, and
  each direction's measured ``runtime``, so a client's measurement started at their difference).

The raw form of a multi-client cell (the store's ``fio.json``, ``RAW_FIO_FILE``) is one JSON
document ``{"format": CLIENTS_RAW_FORMAT, "barrier", "volumes", "clients": [ClientOutput.to_dict(),
…]}`` holding each client's fio json+ output untouched, with its barrier times; ``merge_raw``
recomputes the cell's metrics and clients section from it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from pvbench.fio.parse import cpu_seconds, direction_metrics
from pvbench.results.schema import ClientResult, ClientsSection, DirectionMetrics

CLIENTS_RAW_FORMAT = "pvbench.fio-clients/v1"


@dataclass
class ClientOutput:
    """One client's fio json+ output and where and when it ran (all a merge needs)."""

    client: int
    output: dict
    ready_ns: list[int] = field(default_factory=list)
    released_ns: list[int] = field(default_factory=list)
    target_path: str | None = None
    node: str | None = None

    def to_dict(self) -> dict:
        return {
            "client": self.client,
            "target_path": self.target_path,
            "node": self.node,
            "ready_ns": self.ready_ns,
            "released_ns": self.released_ns,
            "fio": self.output,
        }

    @classmethod
    def from_dict(cls, data: dict) -> "ClientOutput":
        return cls(
            client=int(data["client"]),
            output=data["fio"],
            ready_ns=[int(v) for v in data.get("ready_ns") or []],
            released_ns=[int(v) for v in data.get("released_ns") or []],
            target_path=data.get("target_path"),
            node=data.get("node"),
        )


def clients_raw(clients: list[ClientOutput], barrier: str = "file", volumes: str | None = None) -> str:
    """The raw document of a multi-client cell (stored as its fio.json): how the clients were
    released and where they wrote, and each client's output."""
    doc = {
        "format": CLIENTS_RAW_FORMAT,
        "barrier": barrier,
        "volumes": volumes,
        "clients": [c.to_dict() for c in clients],
    }
    return json.dumps(doc, indent=1)


def read_clients_raw(text: str | bytes) -> list[ClientOutput]:
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("format") != CLIENTS_RAW_FORMAT:
        raise ValueError(f"not a multi-client raw document (format {CLIENTS_RAW_FORMAT})")
    return [ClientOutput.from_dict(c) for c in data["clients"]]


def _at(ns: int | None) -> datetime | None:
    return None if ns is None else datetime.fromtimestamp(ns / 1e9, timezone.utc)


def _ended_at(output: dict) -> datetime | None:
    ms = output.get("timestamp_ms")
    return datetime.fromtimestamp(int(ms) / 1000, timezone.utc) if ms else None


def straggler_ratio(client_iops: list[float]) -> float | None:
    """The slowest client's IOPS / the mean client IOPS (None without clients or without I/O)."""
    if not client_iops:
        return None
    mean = sum(client_iops) / len(client_iops)
    return min(client_iops) / mean if mean > 0 else None


def merge_clients(
    clients: list[ClientOutput], runtime_s: float | None = None, barrier: str = "file", volumes: str | None = None
) -> tuple[list[DirectionMetrics], ClientsSection]:
    """The cell's total metrics (with the straggler ratio) and its clients section."""
    if not clients:
        raise ValueError("no clients to merge")
    clients = sorted(clients, key=lambda c: c.client)
    totals = direction_metrics({"jobs": [job for c in clients for job in c.output.get("jobs") or []]})
    per_client = [direction_metrics(c.output) for c in clients]
    merged = []
    for total in totals:
        iops = [next((m.iops or 0.0 for m in ms if m.direction == total.direction), 0.0) for ms in per_client]
        merged.append(total.model_copy(update={"straggler_ratio": straggler_ratio(iops)}))

    results = []
    for c, metrics in zip(clients, per_client):
        ended = _ended_at(c.output)
        longest_ms = max((m.runtime_ms or 0 for m in metrics), default=0)
        results.append(
            ClientResult(
                client=c.client,
                target_path=c.target_path,
                node=c.node,
                ready_at=_at(max(c.ready_ns)) if c.ready_ns else None,
                released_at=_at(max(c.released_ns)) if c.released_ns else None,
                ended_at=ended,
                measured_from=ended - timedelta(milliseconds=longest_ms) if ended and longest_ms else None,
                cpu_seconds=cpu_seconds(c.output),
                metrics=metrics,
            )
        )
    releases = [ns for c in clients for ns in c.released_ns]
    skew = (max(releases) - min(releases)) / 1e9 if len(releases) > 1 else (0.0 if releases else None)
    starts = [r.measured_from for r in results]
    ends = [r.ended_at for r in results]
    overlap = share = None
    if all(starts) and all(ends):
        overlap = max(0.0, (min(ends) - max(starts)).total_seconds())
        measured = runtime_s or max((e - s).total_seconds() for s, e in zip(starts, ends))
        share = min(1.0, overlap / measured) if measured else None
    section = ClientsSection(
        count=len(clients),
        start_skew_s=skew,
        overlap_s=overlap,
        overlap_share=share,
        barrier=barrier,
        volumes=volumes,
        per_client=results,
    )
    return merged, section


def merge_raw(text: str | bytes, runtime_s: float | None = None) -> tuple[list[DirectionMetrics], ClientsSection]:
    """``merge_clients`` of a stored multi-client raw document."""
    data = json.loads(text)
    return merge_clients(read_clients_raw(text), runtime_s, data.get("barrier") or "file", data.get("volumes"))
