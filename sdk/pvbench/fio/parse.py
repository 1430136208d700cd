"""fio json+ → DirectionMetrics.

fio reports one entry per job process when numjobs>1 (and no group_reporting). Those are
combined the only correct way: IOPS, bandwidth and bytes are summed, latency means are
weighted by sample count, and percentiles are recomputed from the merged json+ ``bins``
histogram — percentiles are never averaged.
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from typing import Protocol

from pvbench.results.schema import DirectionMetrics, SteadyStateResult

NS_PER_US = 1000.0
MIB = 1024 * 1024
PERCENTILES = {"lat_p50_us": 50.0, "lat_p90_us": 90.0, "lat_p99_us": 99.0, "lat_p999_us": 99.9}


def _x87(value: Fraction) -> Fraction:
    """``value`` rounded as x86-64's ``long double`` does: 64-bit significand, round half to even."""
    if value == 0:
        return value
    sign, mag = (-1, -value) if value < 0 else (1, value)
    exp = mag.numerator.bit_length() - mag.denominator.bit_length()  # 2**exp <= mag < 2**(exp+2)
    if mag >= Fraction(2) ** (exp + 1):
        exp += 1
    elif mag < Fraction(2) ** exp:
        exp -= 1
    scale = Fraction(2) ** (exp - 63)  # mag / scale in [2**63, 2**64)
    return sign * round(mag / scale) * scale  # round(): half to even


def fio_percentile_threshold(nr: int, pct: float) -> Fraction:
    """fio's threshold, exactly: ``(long double) pct / 100.0 * nr`` (stat.c, calc_clat_percentiles).

    fio compares the cumulative count against this in ``long double``, which on x86-64 is the x87
    80-bit format; each of the two operations is rounded to it here. Double arithmetic
    (``nr * pct / 100``) rounds differently: for pct 99.9 and nr a multiple of 1000 it lands on
    exactly 0.999·nr, where fio's threshold is just above it, so p99.9 came out one bucket low.
    """
    return _x87(_x87(Fraction(pct) / 100) * nr)


def percentile_from_bins(bins: dict[int, int], pct: float) -> float | None:
    """fio's own rule: the first histogram bucket whose cumulative count reaches pct% of all samples."""
    total = sum(bins.values())
    if total == 0:
        return None
    threshold = fio_percentile_threshold(total, pct)
    running = 0
    for value in sorted(bins):
        running += bins[value]
        if running >= threshold:
            return float(value)
    return float(max(bins))


def _latency_block(side: dict) -> tuple[str, dict] | None:
    """Prefer total latency (lat_ns, with lat_percentiles=1), else completion latency (clat_ns)."""
    for kind in ("lat", "clat"):
        block = side.get(f"{kind}_ns")
        if block and block.get("bins"):
            return kind, block
    for kind in ("lat", "clat"):
        block = side.get(f"{kind}_ns")
        if block and block.get("N"):
            return kind, block
    return None


def direction_metrics(fio_json: dict) -> list[DirectionMetrics]:
    """Per-direction metrics of all jobs in a fio run (one cell = one job name)."""
    jobs = fio_json.get("jobs") or []
    out = []
    for direction in ("read", "write"):
        sides = [job[direction] for job in jobs if job.get(direction, {}).get("io_bytes", 0) > 0]
        if not sides:
            continue
        bins: Counter[int] = Counter()
        lat_sum = 0.0
        lat_n = 0
        kinds = set()
        for side in sides:
            found = _latency_block(side)
            if not found:
                continue
            kind, block = found
            kinds.add(kind)
            n = int(block.get("N") or 0)
            lat_sum += float(block.get("mean") or 0.0) * n
            lat_n += n
            for value, count in (block.get("bins") or {}).items():
                bins[int(value)] += int(count)
        metrics = {
            name: (v / NS_PER_US if (v := percentile_from_bins(bins, pct)) is not None else None)
            for name, pct in PERCENTILES.items()
        }
        if not bins and len(sides) == 1:
            # json (not json+) output: no bins, but fio's own percentiles of a single job are exact.
            found = _latency_block(sides[0])
            table = (found[1].get("percentile") or {}) if found else {}
            for name, pct in PERCENTILES.items():
                value = table.get(f"{pct:.6f}")
                metrics[name] = value / NS_PER_US if value else None
        out.append(
            DirectionMetrics(
                direction=direction,
                iops=sum(float(s["iops"]) for s in sides),
                bw_mib_s=sum(float(s["bw_bytes"]) for s in sides) / MIB,
                io_bytes=sum(int(s["io_bytes"]) for s in sides),
                runtime_ms=max(int(s.get("runtime", 0)) for s in sides),
                lat_mean_us=(lat_sum / lat_n / NS_PER_US) if lat_n else None,
                lat_kind=("lat" if "lat" in kinds else "clat") if kinds else None,
                **metrics,
            )
        )
    return out


def cpu_seconds(fio_json: dict) -> float:
    """usr+sys CPU time fio spent, summed over job processes (for the cost model)."""
    total = 0.0
    for job in fio_json.get("jobs") or []:
        runtime_s = float(job.get("job_runtime", 0)) / 1000.0
        total += (float(job.get("usr_cpu", 0)) + float(job.get("sys_cpu", 0))) / 100.0 * runtime_s
    return total


def job_errors(fio_json: dict) -> list[str]:
    """Jobs fio itself marked as failed (non-zero ``error``)."""
    return [f"job {job.get('jobname')}: error {job['error']}" for job in fio_json.get("jobs") or [] if job.get("error")]


class SteadyStateAsked(Protocol):
    """A test's steady-state criterion as its profile gives it (pvbench.profiles.SteadyState)."""

    criterion: str
    window_s: float
    ramp_s: float


def steady_state_result(outputs: list[dict], asked: SteadyStateAsked | None, max_s: float) -> SteadyStateResult | None:
    """fio's ``steadystate`` verdict for a cell whose test ``asked`` for one (``SteadyStateResult``;
    None when it did not), from the json output of its fio run(s) (one per client): attained only
    if every job reports it (fio judges each job on its own without group_reporting); ``after_s`` is
    then the longest job's measured runtime (``job_runtime``: fio ended the job there, ramp_time not
    counted). ``max_s``: the test's runtime, the most fio runs it."""
    if asked is None:
        return None
    criterion, window_s, ramp_s = asked.criterion, asked.window_s, asked.ramp_s
    jobs = [job for output in outputs for job in output.get("jobs", [])]
    attained = bool(jobs) and all(int((job.get("steadystate") or {}).get("attained", 0)) == 1 for job in jobs)
    after_s = max(int(job.get("job_runtime", 0)) for job in jobs) / 1000 if attained else None
    return SteadyStateResult(
        criterion=criterion, window_s=window_s, ramp_s=ramp_s, max_s=max_s, attained=attained, after_s=after_s
    )
