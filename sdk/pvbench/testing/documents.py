"""Synthetic result documents (written to a real directory store): for the statistics tests and the benchmarks."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from pvbench.results.schema import CellIdentity, DirectionMetrics, Provenance, ResultDocument, WorkloadSpec
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
            labels={"role": role} if role else {},
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
        ),
        metrics=[DirectionMetrics(direction=direction, **{metric: value})],
    )


def write(store_dir: Path, docs: list[ResultDocument]) -> None:
    store = open_store(str(store_dir))
    for d in docs:
        store.put_bytes(d.identity.result_key(), d.to_json())
