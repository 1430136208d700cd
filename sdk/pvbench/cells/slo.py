"""Latency-bounded IOPS: the highest IOPS at which a latency percentile stays at or under a target.

Measured on the storage under test by a rate search at the test's own (deep) queue, not by fio's
``latency_target``: that option only walks the queue depth (1..iodepth) and answers in whole
depths, so on fast storage the step from one depth to the next can be thousands of IOPS; a rate
limit (fio ``rate_iops``) moves the offered load continuously and asks exactly "at this many IOPS,
is p99 ≤ target?".

The search, every run recorded as a probe (``LatencySloResult.probes``):

1. ``max``: unthrottled at the test's depth. If the percentile meets the target here, the
   answer is the device's maximum (bound ``device``).
2. ``floor``: FLOOR_SHARE of that maximum. If even this light load misses the target, the
   storage cannot meet it at any useful rate (bound ``not-met``).
3. ``search``: bisection of the offered rate between the floor (met) and the maximum (missed),
   at most MAX_SEARCH_PROBES runs, stopping when the bracket is narrower than RESOLUTION of the
   maximum.
4. ``confirm``: the highest rate that met the target, run with the full ramp and runtime; that
   run is the cell's measurement (its IOPS and percentiles are the cell's metrics). If it misses
   the target (the short probe was lucky), one more full-length run at BACKOFF of that rate; if
   that misses too, the target is reported as not met.

Probes are short (a quarter of the runtime, at most 10 s); at most 1 + 1 + MAX_SEARCH_PROBES
probes and MAX_CONFIRM_RUNS full-length runs, so a cell's time is bounded (``slo_fio_seconds``).

The percentile comes from fio's json+ histogram with fio's own rule (fio/parse.py): the I/Os'
total latency (``lat_ns``) of the test's direction, merged across jobs, or the fsync/fdatasync
latency (fio's ``sync`` block) for an objective on sync latency. fio issues rate-limited I/O at
evenly spaced times (its default ``rate_process=linear``; a test may ask for ``poisson``) and times
each from its submission: under the target rate the queue is far from full, so I/Os are not held
back behind slow ones.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Callable

from pvbench.fio.parse import NS_PER_US, percentile_from_bins
from pvbench.fio.runner import FioError
from pvbench.profiles import FioTest, LatencySlo, Timing
from pvbench.results.schema import LatencySloResult, SloProbe

FLOOR_SHARE = 0.01  # the lightest load tried, as a share of the unthrottled maximum
MAX_SEARCH_PROBES = 6  # bisection steps: the bracket shrinks to 0.99/64 ≈ 1.5% of the maximum
RESOLUTION = 0.02  # stop bisecting when the bracket is narrower than this share of the maximum
MAX_CONFIRM_RUNS = 2  # full-length runs: the found rate, then BACKOFF of it if that one misses
BACKOFF = 0.8


class SloSearchError(FioError):
    """A probe moved no I/O or reported no latency of the objective's kind (the cell fails with it)."""


def slo_run_timing(timing: Timing) -> Timing:
    """A full-length run of the search: the cell's timing, its ramp at most half its runtime.

    fio 3.33 records no latency at all for a rate-limited job whose ramp_time is about as long as
    its runtime or longer (measured on an ext4 loop device, rate_iops 300: ramp 1 s with runtime
    0.75 s moves 206 I/Os and reports lat_ns N = 0 every time; ramp = runtime 0.75 s does so now and
    then after an unthrottled probe; ramp 0.5 s or less, every I/O is timed), and the search can
    only judge what fio timed."""
    return Timing(ramp_s=min(timing.ramp_s, timing.runtime_s / 2), runtime_s=timing.runtime_s, size=timing.size)


def slo_probe_timing(timing: Timing) -> Timing:
    """The search's short probes: a quarter of the runtime, at most 10 s (at least 0.5 s), after a
    ramp of at most 1 s and at most half the probe (``slo_run_timing`` says why)."""
    runtime_s = max(0.5, min(10.0, timing.runtime_s / 4))
    return Timing(ramp_s=min(timing.ramp_s, 1.0, runtime_s / 2), runtime_s=runtime_s, size=timing.size)


def slo_fio_seconds(timing: Timing) -> float:
    """fio's most time for one SLO cell: every probe, then every full-length run."""
    probe, full = slo_probe_timing(timing), slo_run_timing(timing)
    probes = 2 + MAX_SEARCH_PROBES
    return probes * (probe.ramp_s + probe.runtime_s) + MAX_CONFIRM_RUNS * (full.ramp_s + full.runtime_s)


def slo_direction(test: FioTest) -> str:
    return "read" if "read" in test.rw else "write"


def measured(fio_json: dict, direction: str, slo: LatencySlo) -> tuple[float, float | None]:
    """(IOPS of ``direction`` summed over jobs, the objective's percentile in µs) of one fio run."""
    jobs = fio_json.get("jobs") or []
    iops = sum(float(job.get(direction, {}).get("iops") or 0.0) for job in jobs)
    bins: Counter[int] = Counter()
    for job in jobs:
        side = job.get("sync", {}) if slo.latency == "sync" else job.get(direction, {})
        for kind in ("lat_ns", "clat_ns"):  # lat_percentiles=1 gives lat_ns bins; clat as a fallback
            found = (side.get(kind) or {}).get("bins")
            if found:
                for value, count in found.items():
                    bins[int(value)] += int(count)
                break
    value = percentile_from_bins(bins, slo.percentile)
    return iops, (value / NS_PER_US if value is not None else None)


def rate_options(test: FioTest, rate_iops: float | None) -> dict[str, str]:
    """fio options offering ``rate_iops`` in total (fio's rate_iops is per job), or none: unthrottled."""
    if rate_iops is None:
        return {}
    per_job = max(1, math.floor(rate_iops / test.numjobs))
    return {"rate_iops": str(per_job)}


def offered(test: FioTest, rate_iops: float) -> float:
    """The total rate fio is actually offered for ``rate_iops`` (whole IOPS per job)."""
    return float(max(1, math.floor(rate_iops / test.numjobs)) * test.numjobs)


# run(rate_iops or None, full_length) -> (fio JSON, raw text); raises FioError like run_fio
Runner = Callable[[float | None, bool], tuple[dict, str]]


def search(test: FioTest, timing: Timing, run: Runner) -> tuple[LatencySloResult, tuple[dict, str]]:
    """Search the highest rate meeting ``test.slo``; returns the result and the last full-length run."""
    assert test.slo is not None
    slo = test.slo
    direction = slo_direction(test)
    probes: list[SloProbe] = []
    probe_s = slo_probe_timing(timing).runtime_s

    def probe(phase: str, rate: float | None, full: bool = False) -> tuple[SloProbe, tuple[dict, str]]:
        result = run(None if rate is None else rate, full)
        iops, latency = measured(result[0], direction, slo)
        if iops <= 0 or latency is None:
            what = "fsync/fdatasync latency" if slo.latency == "sync" else f"{direction} latency"
            raise SloSearchError(f"a {phase} run of the latency search moved no {direction} I/O or timed no {what}")
        record = SloProbe(
            phase=phase,
            rate_iops=rate,
            iops=iops,
            latency_us=latency,
            met=latency <= slo.target_us,
            runtime_s=timing.runtime_s if full else probe_s,
        )
        probes.append(record)
        return record, result

    top, _ = probe("max", None)
    chosen: float | None = None  # None = unthrottled
    if not top.met:
        maximum = top.iops
        floor, _ = probe("floor", offered(test, FLOOR_SHARE * maximum))
        if not floor.met:
            # not even a light load meets it: confirm at that load with the full runtime
            last, full = probe("confirm", floor.rate_iops, full=True)
            return _result(test, probes, last if last.met else None), full
        low, high = floor.rate_iops or 0.0, maximum
        for _ in range(MAX_SEARCH_PROBES):
            if high - low <= RESOLUTION * maximum:
                break
            mid = offered(test, (low + high) / 2)
            if mid <= low or mid >= high:
                break
            step, _ = probe("search", mid)
            low, high = (mid, high) if step.met else (low, mid)
        chosen = low
    # confirm the highest rate that met the target with a full-length run; back off once if it misses
    last, full = probe("confirm", chosen, full=True)
    if not last.met:
        base = chosen if chosen is not None else last.iops
        last, full = probe("confirm", offered(test, BACKOFF * base), full=True)
    return _result(test, probes, last if last.met else None), full


def _result(test: FioTest, probes: list[SloProbe], answer: SloProbe | None) -> LatencySloResult:
    slo = test.slo
    assert slo is not None
    if answer is None:
        bound = "not-met"
    else:
        bound = "device" if answer.rate_iops is None else "latency"
    return LatencySloResult(
        direction=slo_direction(test),
        latency=slo.latency,
        percentile=slo.percentile,
        target_us=slo.target_us,
        met=answer is not None,
        iops=answer.iops if answer else None,
        latency_us=answer.latency_us if answer else None,
        rate_iops=answer.rate_iops if answer else None,
        bound=bound,
        probes=probes,
    )


def describe(result: LatencySloResult) -> str:
    """The search in one line, for provenance notes and logs."""
    what = f"p{result.percentile:g}{' fsync' if result.latency == 'sync' else ''} ≤ {result.target_us:g} µs"
    if result.met:
        answer = f"{result.iops:.0f} IOPS ({'device maximum' if result.bound == 'device' else 'latency-bound'})"
    else:
        answer = "not met at any rate tried"
    tried = ", ".join(
        f"{p.phase}@{'max' if p.rate_iops is None else f'{p.rate_iops:.0f}'}={p.iops:.0f}/{p.latency_us:.0f}µs"
        for p in result.probes
    )
    return f"{what}: {answer}; probes (offered=achieved IOPS/latency) {tried}"
