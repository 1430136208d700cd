"""The metric catalog: every metric pvbench reports, with its unit, which way is better and where
its value comes from — defined here once, beside the result schema.

The analytics get it as a table (``metric_catalog``, installed by the runner before the models
run): ``2_normalized/result_values.sql`` turns each result into one row per metric of the catalog
and attaches unit and ``better`` from it; every later model, the report and the statistics read
them from there. Python code asks ``METRICS[name]``.

Adding a metric is adding an entry. Its ``source`` says where the value is read from:

``fio``
    the field of that name of each direction's metrics (``DirectionMetrics``: one value per result
    and direction). A new one is a field there, its type in ``1_raw/raw_results.sql`` (a test keeps
    the two in step) and an entry here: ``result_rows`` takes every field of the direction's
    metrics, and result_values.sql unpivots exactly the catalog's ``fio`` metrics.

``latency_slo``
    the result's ``latency_slo`` (the latency-slo profile's rate search, pvbench.cells.slo): one
    value on the direction the search timed, a column of ``result_rows`` beside the fio metrics.

``lifecycle``
    the field of that name of the result's ``lifecycle`` (``VolumeLifecycle``: one value per cell,
    Kubernetes cells only); result_values.sql counts it once per cell, as the workload
    ``volume-lifecycle``.

A metric from elsewhere gets a source of its own: a value here, the field in the result schema
and a branch in result_values.sql that reads that source's metrics (``getvariable('metrics_<source>')``
lists them) — test_metrics.py checks that every metric of the catalog comes out of measurements.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Better = Literal["higher", "lower"]
Source = Literal["fio", "latency_slo", "lifecycle"]
SOURCES: tuple[str, ...] = ("fio", "latency_slo", "lifecycle")


@dataclass(frozen=True)
class Metric:
    name: str  # as results, measurements and the report name it (units live in the name)
    unit: str  # as the report prints it
    better: Better  # which way is good: higher (IOPS, bandwidth) or lower (latency)
    source: Source  # where the value comes from (see the module's docstring)
    description: str  # one line for the methodology page


_LATENCY = "total latency, submission to completion"

METRIC_LIST: tuple[Metric, ...] = (
    Metric("iops", "IOPS", "higher", "fio", "operations per second"),
    Metric("bw_mib_s", "MiB/s", "higher", "fio", "bandwidth, from fio's bytes per second"),
    Metric("lat_mean_us", "µs", "lower", "fio", f"mean {_LATENCY}"),
    Metric("lat_p50_us", "µs", "lower", "fio", f"median {_LATENCY}"),
    Metric("lat_p90_us", "µs", "lower", "fio", f"90th percentile {_LATENCY}"),
    Metric("lat_p99_us", "µs", "lower", "fio", f"99th percentile {_LATENCY}"),
    Metric("lat_p999_us", "µs", "lower", "fio", f"99.9th percentile {_LATENCY}"),
    # multi-client cells (pvbench.fio.merge): how evenly the clients were served
    Metric("straggler_ratio", "ratio", "higher", "fio", "slowest client's IOPS / mean client IOPS (1 = all equal)"),
    # latency-bounded IOPS (the latency-slo profile): null when the target was not met
    Metric(
        "slo_iops", "IOPS", "higher", "latency_slo", "highest IOPS with the test's latency percentile under its target"
    ),
    # a Kubernetes cell's volume lifecycle (pvbench.kube.lifecycle), whole seconds as recorded
    Metric("volume_bind_s", "s", "lower", "lifecycle", "claim created to its volume bound"),
    Metric("pod_schedule_s", "s", "lower", "lifecycle", "pod created to scheduled (provisioning inside)"),
    Metric("volume_attach_s", "s", "lower", "lifecycle", "pod scheduled to its volume attached"),
    Metric("volume_mount_s", "s", "lower", "lifecycle", "scheduled or attached to mounted (sandbox ready)"),
    Metric("pod_start_s", "s", "lower", "lifecycle", "pod created to the benchmark container started"),
)
# The lifecycle's headline: how long until the volume was usable
LIFECYCLE_HEADLINE = "pod_start_s"
METRICS: dict[str, Metric] = {m.name: m for m in METRIC_LIST}

# The catalog as the analytics get it (DuckDB types); ``position`` orders metrics on report pages.
METRIC_TABLE = "metric_catalog"
METRIC_COLUMNS: dict[str, str] = {
    "metric": "VARCHAR",
    "unit": "VARCHAR",
    "better": "VARCHAR",
    "source": "VARCHAR",
    "description": "VARCHAR",
    "position": "INTEGER",
}


def metric_rows() -> list[dict]:
    """The catalog as rows of METRIC_COLUMNS."""
    return [
        {
            "metric": m.name,
            "unit": m.unit,
            "better": m.better,
            "source": m.source,
            "description": m.description,
            "position": i,
        }
        for i, m in enumerate(METRIC_LIST, start=1)
    ]


def metrics_from(source: str) -> list[str]:
    """The names of the catalog's metrics read from ``source``."""
    return [m.name for m in METRIC_LIST if m.source == source]
