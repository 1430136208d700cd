"""Result schema v1 — the single definition used by the step, local mode, import and analytics.

Units live in field names: ``iops`` (operations/s), ``bw_mib_s`` (MiB/s computed once
from fio's ``bw_bytes``), ``lat_*_us`` (microseconds from fio's nanoseconds).
Analytics reads these documents with an explicit DuckDB schema derived from the
same names (analytics/models/raw_results.sql); a test keeps the two in step.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from pvbench.store.layout import CellKey

SCHEMA_VERSION = "pvbench.result/v1"

Direction = Literal["read", "write"]

# A measured quantity: finite (no NaN, no ±inf) and never negative. Rates, sizes and
# latencies cannot be below zero; a NaN or inf from a broken parser or a CSV would
# otherwise pass straight into every mean and interval.
Measure = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=0)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CellIdentity(_Strict):
    """Which cell of which experiment this is. Labels are kept verbatim (the key uses slugs).

    The one identity of a cell: a planned cell (``pvbench.cells.Cell``) becomes one
    (``Cell.identity``), and its store key is made from it (``key``) and nowhere else.
    """

    campaign: str = Field(description="A study or series of runs that belong together")
    run: str = Field(description="One execution: an Argo workflow name or a local run id")
    occasion: str = Field(description="When it ran, as a design factor (weekday-office, night, …)")
    storage_class: str = Field(description="Kubernetes StorageClass name, or an imported solution label")
    profile: str = Field(description="Workload profile name (dbench, vshn, sweep, custom, an import)")
    workload: str = Field(description="One test of the profile (randread-iops, …) or an imported metric label")
    rep: int = Field(ge=1, description="Repetition number within the occasion, from 1")
    order: int | None = Field(default=None, description="Position in the run's randomized cell order")
    labels: dict[str, str] = Field(default_factory=dict, description="Free labels, e.g. role=candidate")

    @property
    def key(self) -> CellKey:
        """Where this cell's result is stored (the layout slugs the labels)."""
        return CellKey(
            self.campaign, self.run, self.occasion, self.storage_class, self.profile, self.workload, self.rep
        )


class WorkloadSpec(_Strict):
    """What fio was asked to do, in the terms reports group by."""

    rw: str | None = None
    bs: str | None = None
    bs_bytes: Count | None = None
    iodepth: int | None = None
    numjobs: int | None = None
    rwmixread: int | None = None
    fsync: int | None = None
    ramp_s: Measure | None = None
    runtime_s: Measure | None = None
    size_bytes: Count | None = None
    group: str | None = Field(default=None, description="Family for curves, e.g. randread or mix70")
    load: str | None = Field(default=None, description="Load level label, e.g. qd1, qd32, qd1x32, p80")
    title: str | None = Field(default=None, description="Human title, e.g. 'Random read IOPS'")
    headline_metric: str | None = Field(
        default=None, description="The metric a report shows first: iops, bw_mib_s or lat_mean_us"
    )


class DirectionMetrics(_Strict):
    """One direction (read or write) of one result, as fio reported it.

    Imported results may carry only some fields (e.g. only ``iops``); the rest stay null.
    """

    direction: Direction
    iops: Measure | None = None
    bw_mib_s: Measure | None = None
    io_bytes: Count | None = None
    runtime_ms: Count | None = None
    lat_mean_us: Measure | None = None
    lat_p50_us: Measure | None = None
    lat_p90_us: Measure | None = None
    lat_p99_us: Measure | None = None
    lat_p999_us: Measure | None = None
    lat_kind: Literal["lat", "clat"] | None = Field(
        default=None, description="Which fio latency the percentiles are of: total (lat) or completion (clat)"
    )


class Provenance(_Strict):
    """Everything needed to describe the setup later (methodology page, comparisons)."""

    source: str = Field(description="fio, or import:<format>")
    pvbench_version: str
    fio_version: str | None = None
    kernel: str | None = None
    host: str | None = None
    node: str | None = None
    target_path: str | None = None
    filesystem: str | None = None
    provisioner: str | None = None
    kubernetes_version: str | None = None
    fio_options: dict[str, str] = Field(default_factory=dict)
    started_at: datetime | None = None
    ended_at: datetime | None = None
    cpu_seconds: Measure | None = Field(default=None, description="usr+sys CPU of fio, for the cost model")
    notes: dict[str, str] = Field(default_factory=dict)


class SloProbe(_Strict):
    """One fio run of a latency-bounded IOPS search (pvbench.cells.slo), in the order they ran."""

    phase: Literal["max", "floor", "search", "confirm"] = Field(
        description="max: unthrottled; floor: the lowest rate; search: bisection; confirm: full-length run"
    )
    rate_iops: Measure | None = Field(description="Offered rate (fio rate_iops summed over jobs); null = unthrottled")
    iops: Measure = Field(description="Achieved IOPS")
    latency_us: Measure | None = Field(description="The objective's latency percentile in this run, µs")
    met: bool = Field(description="latency_us <= target_us")
    runtime_s: Measure


class LatencySloResult(_Strict):
    """Latency-bounded IOPS: the highest IOPS measured with the percentile at or under the target.

    ``iops`` is what a full-length run achieved at the rate the search found, and only if that run
    met the target (it is the metric ``slo_iops``); when no rate met it, ``met`` is false and
    ``iops`` null — never a made-up number. Every probe is kept.
    """

    direction: Direction = Field(description="The direction whose I/O was rate-limited and timed")
    latency: Literal["io", "sync"] = Field(description="io: the I/Os' total latency; sync: fsync/fdatasync latency")
    percentile: float = Field(gt=0, lt=100)
    target_us: Measure
    met: bool
    iops: Measure | None = Field(default=None, description="slo_iops: null when the target was not met")
    latency_us: Measure | None = Field(default=None, description="The percentile in the run that gave iops, µs")
    rate_iops: Measure | None = Field(default=None, description="The rate offered in that run; null = unthrottled")
    bound: Literal["device", "latency", "not-met"] = Field(
        description="device: met even unthrottled (the device's maximum); latency: met below the maximum; "
        "not-met: missed even at the lowest rate (or in every full-length run)"
    )
    probes: list[SloProbe] = Field(default_factory=list)


class ResultDocument(_Strict):
    schema_version: Literal["pvbench.result/v1"] = SCHEMA_VERSION
    identity: CellIdentity
    workload: WorkloadSpec
    provenance: Provenance
    metrics: list[DirectionMetrics]
    # latency-slo cells only (absent in older documents and every other profile's)
    latency_slo: LatencySloResult | None = None

    def to_json(self) -> bytes:
        return self.model_dump_json(indent=2).encode()

    @classmethod
    def from_json(cls, data: bytes | str) -> "ResultDocument":
        return cls.model_validate_json(data)
