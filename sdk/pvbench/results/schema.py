"""Result schema v1 — the single definition used by the step, local mode, import and analytics.

Units live in field names: ``iops`` (operations/s), ``bw_mib_s`` (MiB/s computed once
from fio's ``bw_bytes``), ``lat_*_us`` (microseconds from fio's nanoseconds).
Which fields are metrics, their units and which way is better: ``metrics.py`` (the catalog).
Analytics reads these documents with an explicit DuckDB schema derived from the
same names (analytics/models/raw_results.sql); a test keeps the two in step.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from pvbench.results.metrics import metrics_from
from pvbench.results.volume import (
    DEFAULT_ACCESS_MODE,
    DEFAULT_VOLUME_MODE,
    AccessMode,
    VolumeMode,
    storage_label,
    volume_key,
)
from pvbench.store.layout import FIO_LOGS_FILE, RAW_FIO_FILE, RESULT_FILE, cell_prefix

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

    The one identity of a cell, and the one type of it: a planned cell (``pvbench.cells.Cell``) is
    one, with its checks and what its run needs besides; where the cell's files are stored is made
    from it (``prefix``, ``result_key``, ``raw_fio_key``: the layout slugs the labels) and nowhere else.
    """

    campaign: str = Field(description="A study or series of runs that belong together")
    run: str = Field(description="One execution: an Argo workflow name or a local run id")
    occasion: str = Field(description="When it ran, as a design factor (weekday-office, night, …)")
    storage_class: str = Field(description="Kubernetes StorageClass name, or an imported solution label")
    profile: str = Field(description="Workload profile name (dbench, vshn, sweep, custom, an import)")
    workload: str = Field(description="One test of the profile (randread-iops, …) or an imported metric label")
    volume_mode: VolumeMode = Field(
        default=DEFAULT_VOLUME_MODE,
        description="The volume's mode (a PVC's volumeMode): Filesystem, or Block (fio on the device)",
    )
    access_mode: AccessMode = Field(
        default=DEFAULT_ACCESS_MODE,
        description="The volume's access mode (a PVC's accessModes): ReadWriteOnce or ReadWriteMany",
    )
    rep: int = Field(ge=1, description="Repetition number within the occasion, from 1")
    order: int | None = Field(default=None, description="Position in the run's randomized cell order")
    labels: dict[str, str] = Field(default_factory=dict, description="Free labels, e.g. role=candidate")

    def prefix(self) -> str:
        """The store folder of this cell's files (pvbench.store.layout.cell_prefix)."""
        return cell_prefix(
            self.campaign,
            self.run,
            self.occasion,
            self.storage_class,
            volume_key(self.volume_mode, self.access_mode),
            self.profile,
            self.workload,
            self.rep,
        )

    def storage_label(self) -> str:
        """The class as the report names it: with its volume shape unless that is the default."""
        return storage_label(self.storage_class, self.volume_mode, self.access_mode)

    def result_key(self) -> str:
        """Where this cell's result.json is stored."""
        return f"{self.prefix()}/{RESULT_FILE}"

    def raw_fio_key(self) -> str:
        """Where this cell's raw fio output is stored."""
        return f"{self.prefix()}/{RAW_FIO_FILE}"

    def fio_logs_key(self) -> str:
        """Where this cell's fio interval logs (the raw form of its series) are stored."""
        return f"{self.prefix()}/{FIO_LOGS_FILE}"


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
    clients: int | None = Field(default=None, ge=1, description="fio clients run at once (multi-client cells)")

    @classmethod
    def asked(cls, test, timing, options: dict, clients: int | None = None) -> "WorkloadSpec":
        """What fio was asked to do: a profile test (pvbench.profiles.FioTest) and its timing, with
        the queue depth and jobs fio's own options report (a profile file may set them). One
        definition for single- and multi-client cells."""
        return cls(
            rw=test.rw,
            bs=test.bs,
            bs_bytes=test.bs_bytes,
            iodepth=int(options.get("iodepth", test.iodepth)),
            numjobs=int(options.get("numjobs", test.numjobs)),
            rwmixread=test.rwmixread,
            fsync=test.fsync,
            ramp_s=timing.ramp_s,
            runtime_s=timing.runtime_s,
            size_bytes=timing.size_bytes,
            group=test.group,
            load=test.load,
            title=test.title,
            headline_metric=test.headline_metric,
            clients=clients,
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
    straggler_ratio: Measure | None = Field(
        default=None,
        description="Multi-client totals: the slowest client's IOPS / the mean client IOPS (1 = all equal)",
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


Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False, description="seconds")]


class VolumeLifecycle(_Strict):
    """How long the cell's fresh volume and pod took to become usable (Kubernetes cells only).

    Read by the cell itself, once its container runs, from what Kubernetes keeps about its pod,
    its claim and the claim's volume: creation times, the PV's phase transition, the pod's
    conditions and the attach event. Kubernetes records most of them in whole seconds, so each
    duration is within about 1 s (``resolution_s``). A step the volume type does not have (no
    attach for local volumes) or that Kubernetes does not record stays null; so does one whose
    clock order is impossible (a skew between the API server's and the kubelet's clocks).
    """

    claim: str | None = Field(default=None, description="The PVC's name")
    volume: str | None = Field(default=None, description="The PV bound to it")
    pod_created_at: datetime
    claim_created_at: datetime | None = None
    volume_bound_at: datetime | None = Field(default=None, description="PV phase Bound (lastPhaseTransitionTime)")
    pod_scheduled_at: datetime | None = Field(default=None, description="Pod condition PodScheduled")
    volume_attached_at: datetime | None = Field(default=None, description="Event SuccessfulAttachVolume")
    pod_sandbox_at: datetime | None = Field(
        default=None, description="Pod condition PodReadyToStartContainers: volumes mounted, sandbox made"
    )
    container_started_at: datetime | None = Field(default=None, description="The benchmark container's start")
    # The durations, the metrics analytics aggregates (names shared with the metric catalog)
    volume_bind_s: Seconds | None = Field(default=None, description="claim created -> its volume Bound")
    pod_schedule_s: Seconds | None = Field(
        default=None, description="pod created -> scheduled (with WaitForFirstConsumer: includes provisioning)"
    )
    volume_attach_s: Seconds | None = Field(default=None, description="pod scheduled -> volume attached")
    volume_mount_s: Seconds | None = Field(
        default=None, description="scheduled (or attached) -> volumes mounted and sandbox ready"
    )
    pod_start_s: Seconds | None = Field(default=None, description="pod created -> benchmark container started")
    resolution_s: Seconds = Field(default=1.0, description="Kubernetes' timestamps are whole seconds")
    notes: list[str] = Field(default_factory=list, description="What could not be read, and why")


# In analytics, the lifecycle is a workload of its own: every cell of a class measures it once,
# whatever its test (analytics/models/2_normalized/result_values.sql names it the same).
LIFECYCLE_WORKLOAD = "volume-lifecycle"
LIFECYCLE_METRICS = tuple(metrics_from("lifecycle"))  # VolumeLifecycle's durations, by the catalog's names


class ClientResult(_Strict):
    """One client of a multi-client cell: its own fio run, as if it were a cell of its own."""

    client: int = Field(ge=1, description="Client number, from 1")
    target_path: str | None = Field(default=None, description="Its own directory (local) or volume mount (pod)")
    node: str | None = None
    ready_at: datetime | None = Field(default=None, description="Its fio laid out its files and waited at the barrier")
    released_at: datetime | None = Field(default=None, description="Its fio left the barrier (its ramp began)")
    ended_at: datetime | None = Field(default=None, description="fio's own end time (timestamp_ms)")
    measured_from: datetime | None = Field(default=None, description="ended_at minus its longest measured runtime")
    cpu_seconds: Measure | None = None
    metrics: list[DirectionMetrics]


class ClientsSection(_Strict):
    """A multi-client cell: N fio clients released together behind a barrier (pvbench.fio.clients).

    The cell's ``metrics`` are the totals (pvbench.fio.merge): IOPS, MiB/s and bytes summed over
    the clients, latency percentiles recomputed from their merged json+ histograms (never averaged).
    """

    count: int = Field(ge=1, description="How many clients ran")
    start_skew_s: Seconds | None = Field(
        default=None, description="Last client's release from the barrier minus the first's (every fio job of each)"
    )
    overlap_s: Seconds | None = Field(
        default=None, description="Seconds all clients measured at once: latest measured_from to earliest ended_at"
    )
    overlap_share: Measure | None = Field(
        default=None, le=1, description="overlap_s / the measured runtime (1 = all measured the same seconds)"
    )
    barrier: str = Field(default="file", description="How the clients were released: file (local), or pods")
    volumes: Literal["own", "shared"] | None = Field(
        default=None,
        description="own: each client on its own volume of the class; shared: all clients on one (local mode: "
        "subdirectories of the class's directory)",
    )
    per_client: list[ClientResult]


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


class SecondSeries(_Strict):
    """One direction of a cell, interval by interval, from fio's own interval logs (``log_avg_msec``
    averages; latency percentiles from ``log_hist_msec`` histograms), summed over fio's jobs (and a
    multi-client cell's clients) interval by interval. Lists are aligned: item i is interval i."""

    direction: Direction
    t_s: list[Measure] = Field(description="End of each interval, seconds since fio's measurement began")
    iops: list[Measure]
    bw_mib_s: list[Measure]
    lat_mean_us: list[Measure | None] = Field(default_factory=list)
    lat_p50_us: list[Measure | None] = Field(default_factory=list)
    lat_p99_us: list[Measure | None] = Field(default_factory=list)
    lat_p999_us: list[Measure | None] = Field(default_factory=list)


class CellSeries(_Strict):
    """The cell over time (fio's interval logs, parsed in the pod; the logs themselves are stored
    beside fio.json)."""

    interval_ms: Count = Field(description="fio's log_avg_msec / log_hist_msec")
    directions: list[SecondSeries]


class SteadyStateResult(_Strict):
    """fio's ``steadystate`` criterion for the cell, and whether fio saw it met."""

    criterion: str = Field(description="fio's ss option as run, e.g. iops_slope:0.3%")
    window_s: Measure = Field(description="ss_dur: the window the criterion is judged over")
    ramp_s: Measure = Field(description="ss_ramp: seconds before fio starts judging")
    max_s: Measure = Field(description="The runtime ceiling: fio stops there if never steady")
    attained: bool
    after_s: Measure | None = Field(default=None, description="Seconds fio ran until it was steady (null: never)")


GuardRule = Literal["client_cpu", "page_cache", "unwritten_reads"]


class GuardFlag(_Strict):
    """A guard that tripped: the cell may have measured something other than the storage
    (pvbench.cells.guards holds the rules, their thresholds and which way each one biases)."""

    rule: GuardRule
    value: Measure = Field(description="What was measured against the threshold")
    threshold: Measure
    excluded: bool = Field(description="Left out of rankings and verdicts (the rule's default for this case)")
    detail: str = Field(
        description="One line for the report, e.g. 'fio's job was busy on or waiting for a CPU 98% of its run'"
    )


class ResultDocument(_Strict):
    schema_version: Literal["pvbench.result/v1"] = SCHEMA_VERSION
    identity: CellIdentity
    workload: WorkloadSpec
    provenance: Provenance
    metrics: list[DirectionMetrics]
    lifecycle: VolumeLifecycle | None = Field(
        default=None, description="Kubernetes cells: how long the volume and pod took to become usable"
    )
    clients: ClientsSection | None = Field(
        default=None, description="Multi-client cells: each client's own result, the start skew and the overlap"
    )
    # latency-slo cells only (absent in older documents and every other profile's)
    latency_slo: LatencySloResult | None = None
    # absent in older documents and imports
    series: CellSeries | None = Field(default=None, description="The cell second by second (fio's interval logs)")
    steady_state: SteadyStateResult | None = Field(default=None, description="Profiles with a steadystate criterion")
    guards: list[GuardFlag] = Field(default_factory=list, description="Guards that tripped (none: all held)")

    def to_json(self) -> bytes:
        return self.model_dump_json(indent=2).encode()

    @classmethod
    def from_json(cls, data: bytes | str) -> "ResultDocument":
        return cls.model_validate_json(data)
