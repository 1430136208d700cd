"""Synthetic result documents (written to a real directory store): for the statistics tests and the benchmarks."""

from __future__ import annotations

import math
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

from pvbench.results.schema import (
    CellIdentity,
    CellSeries,
    DirectionMetrics,
    GuardFlag,
    Provenance,
    ResultDocument,
    SecondSeries,
    SteadyStateResult,
    WorkloadSpec,
)
from pvbench.store import open_store

T0 = datetime(2024, 3, 4, 9, 0, tzinfo=timezone.utc)


def doc(
    *,
    campaign="syn",
    run="r1",
    occasion="o1",
    storage_class="fast",
    workload="randread-iops",
    rep=1,
    value=1000.0,
    metric="iops",
    direction="read",
    role=None,
    started=None,
    seconds=10.0,
    cpu=None,
    provisioner=None,
    order=None,
    series: CellSeries | None = None,
    steady_state: SteadyStateResult | None = None,
    guards: list[GuardFlag] | None = None,
    fio_options: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
) -> ResultDocument:
    started = started or T0 + timedelta(minutes=rep)
    return ResultDocument(
        identity=CellIdentity(
            campaign=campaign,
            run=run,
            occasion=occasion,
            storage_class=storage_class,
            profile="dbench",
            workload=workload,
            rep=rep,
            order=order,
            labels={**(labels or {}), **({"role": role} if role else {})},
        ),
        workload=WorkloadSpec(
            rw="randread",
            bs="4k",
            iodepth=64,
            numjobs=1,
            title=workload,
            headline_metric=metric,
            ramp_s=2,
            runtime_s=seconds,
            size_bytes=2**30,
        ),
        provenance=Provenance(
            source="fio",
            pvbench_version="test",
            started_at=started,
            ended_at=started + timedelta(seconds=seconds),
            cpu_seconds=cpu,
            provisioner=provisioner,
            fio_version="fio-3.33",
            fio_options=fio_options or {},
        ),
        metrics=[DirectionMetrics(direction=direction, **{metric: value})],
        series=series,
        steady_state=steady_state,
        guards=guards or [],
    )


def seconds(
    direction="read", *, iops: list[float], p99_us: list[float] | None = None, interval_ms=1000, bs_kib=4
) -> CellSeries:
    """A series given second by second (IOPS, and p99 latency if given; the rest follows from them)."""
    p99 = p99_us if p99_us is not None else [1e6 / max(v, 1.0) * 2 for v in iops]
    return CellSeries(
        interval_ms=interval_ms,
        directions=[
            SecondSeries(
                direction=direction,
                t_s=[(i + 1) * interval_ms / 1000 for i in range(len(iops))],
                iops=iops,
                bw_mib_s=[v * bs_kib / 1024 for v in iops],
                lat_mean_us=[p / 2 for p in p99],
                lat_p50_us=[p / 2.5 for p in p99],
                lat_p99_us=p99,
                lat_p999_us=[p * 1.6 for p in p99],
            )
        ],
    )


def synthetic_series(
    rng: random.Random, iops: float, lat_us: float, seconds_n: int = 30, direction="read", interval_ms=1000
) -> dict:
    """A realistic series as JSON (for the benchmarks' documents): a short climb to the level, noise
    of a few percent, now and then a slow second (a stall) with its latency spike; rounded as the
    parser rounds (3 decimals)."""
    t, ops, bw, mean, p50, p99, p999 = [], [], [], [], [], [], []
    for i in range(seconds_n):
        level = iops * (1 - 0.3 * math.exp(-i / 2)) * rng.lognormvariate(0, 0.04)
        stall = rng.random() < 0.03
        if stall:
            level *= rng.uniform(0.2, 0.6)
        lat = lat_us * iops / max(level, 1.0) * rng.lognormvariate(0, 0.05)
        t.append(round((i + 1) * interval_ms / 1000, 3))
        ops.append(round(level, 3))
        bw.append(round(level * 4 / 1024, 3))
        mean.append(round(lat, 3))
        p50.append(round(lat * 0.8, 3))
        p99.append(round(lat * (6 if stall else 3), 3))
        p999.append(round(lat * (12 if stall else 5), 3))
    return {
        "interval_ms": interval_ms,
        "directions": [
            {
                "direction": direction,
                "t_s": t,
                "iops": ops,
                "bw_mib_s": bw,
                "lat_mean_us": mean,
                "lat_p50_us": p50,
                "lat_p99_us": p99,
                "lat_p999_us": p999,
            }
        ],
    }


def write(store_dir: Path, docs: list[ResultDocument]) -> None:
    store = open_store(str(store_dir))
    for d in docs:
        store.put_bytes(d.identity.result_key(), d.to_json())
