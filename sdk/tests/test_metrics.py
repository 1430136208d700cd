"""The metric catalog (pvbench.results.metrics) is the one definition of the metrics: the result
schema carries each of them, and every one comes out of the analytics' measurements with the
catalog's unit and direction."""

import typing

from stats_helpers import doc, write

from pvbench.pipeline import build_tables
from pvbench.results.metrics import METRIC_LIST, METRICS, SOURCES
from pvbench.results.schema import DirectionMetrics, LatencySloResult, ResultDocument, VolumeLifecycle
from pvbench.store import open_store


def _fio(document: ResultDocument, name: str, value: float) -> ResultDocument:
    [m] = document.metrics
    return document.model_copy(update={"metrics": [m.model_copy(update={name: value})]})


def _lifecycle(document: ResultDocument, name: str, value: float) -> ResultDocument:
    lifecycle = document.lifecycle or VolumeLifecycle(pod_created_at=document.provenance.started_at)
    return document.model_copy(update={"lifecycle": lifecycle.model_copy(update={name: value})})


def _latency_slo(document: ResultDocument, name: str, value: float) -> ResultDocument:
    assert name == "slo_iops"  # the search's answer, on the direction it timed
    [m] = document.metrics
    slo = LatencySloResult(
        direction=m.direction, latency="io", percentile=99, target_us=1000, met=True, iops=value, bound="latency"
    )
    return document.model_copy(update={"latency_slo": slo})


# How a test document gets a value of each source's metrics (a new source adds its filler here).
FILL = {"fio": _fio, "latency_slo": _latency_slo, "lifecycle": _lifecycle}


def test_every_source_can_be_filled():
    assert set(SOURCES) == set(FILL), "give the new source's metrics a value in this test's document (FILL)"
    assert all(m.source in SOURCES for m in METRIC_LIST)
    assert len(METRICS) == len(METRIC_LIST), "a metric is listed twice"


def test_fio_metrics_are_the_measured_fields_of_the_result_schema():
    hints = typing.get_type_hints(DirectionMetrics, include_extras=True)
    measured = [name for name, hint in hints.items() if "allow_inf_nan=False" in repr(hint)]  # Measure fields
    assert [m.name for m in METRIC_LIST if m.source == "fio"] == measured


def test_lifecycle_metrics_are_the_durations_of_the_result_schema():
    seconds = [name for name in VolumeLifecycle.model_fields if name.endswith("_s") and name != "resolution_s"]
    assert [m.name for m in METRIC_LIST if m.source == "lifecycle"] == seconds


def test_every_metric_comes_out_of_measurements_with_its_unit(tmp_path):
    document = doc()
    for i, metric in enumerate(METRIC_LIST, start=1):
        document = FILL[metric.source](document, metric.name, float(i))
    write(tmp_path, [document])
    con = build_tables(open_store(str(tmp_path)), "syn", extras=False)
    got = {
        m: (unit, better, value)
        for m, unit, better, value in con.sql("select metric, unit, better, value from measurements").fetchall()
    }
    assert got == {m.name: (m.unit, m.better, float(i)) for i, m in enumerate(METRIC_LIST, start=1)}
    # the methodology page lists each metric measured, in the catalog's order, with its unit
    units = con.sql("select item, value from report_methodology where section = 'units' order by item_order").fetchall()
    assert [item for item, _ in units] == [m.name for m in METRIC_LIST]
    assert all(value.startswith(f"{METRICS[item].unit}, {METRICS[item].better} is better") for item, value in units)
