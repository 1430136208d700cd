"""Synthetic vshn, sweep and upgrade results for the report test (the thesis CSV has none of them).

They are written as ordinary result documents into a real directory store, built from the
real profile catalog, so `pvbench aggregate` computes the report tables exactly as for
measured data. Values follow the shapes of the published studies (VSHN's fsync series,
the NVMe/TCP block size × load curves) with seeded noise. The `upgrade` campaign is one
storage class measured before and after an upgrade (two runs, labelled role=baseline and
role=candidate, three occasions each) whose writes got 20% slower: the comparisons page must
call that `worse` and leave the unchanged reads alone.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

from pvbench.profiles import PROFILES
from pvbench.results.schema import (
    CellIdentity,
    CellSeries,
    DirectionMetrics,
    GuardFlag,
    Provenance,
    ResultDocument,
    VolumeLifecycle,
    WorkloadSpec,
)
from pvbench.store import open_store
from pvbench.testing.documents import synthetic_series

CAMPAIGN = "synthetic"
T0 = datetime(2024, 5, 6, 9, 0, tzinfo=timezone.utc)
SEED = "2026"  # recorded in every result, as local mode records its interleaving seed

# VSHN-like classes: read IOPS, read MiB/s, write IOPS and MiB/s per fsync (none, 1, 32, 128),
# relative sd. Rook Ceph RBD and Longhorn drop hard at fsync=1; CephFS barely does (VSHN's finding).
VSHN_CLASSES = {
    "rook-ceph-rbd": (42344.0, 1650.0, (14800.0, 305.0, 4100.0, 9200.0), (590.0, 38.0, 260.0, 420.0), 0.03),
    "cephfs": (38100.0, 1580.0, (12900.0, 8808.0, 11500.0, 12300.0), (540.0, 410.0, 500.0, 520.0), 0.04),
    "longhorn": (11298.0, 620.0, (6100.0, 180.0, 1900.0, 3900.0), (260.0, 22.0, 130.0, 210.0), 0.06),
}
FSYNC_INDEX = {"none": 0, "1": 1, "32": 2, "128": 3}
# sweep: speed factor per class
SWEEP_CLASSES = {"nvme-tcp": 1.0, "rook-ceph-rbd": 0.35}
LOAD = {"qd1": (1, 80.0), "qd32": (32, 420.0), "qd1x32": (32, 520.0), "p80": (16, 260.0)}


def _doc(
    rng: random.Random,
    *,
    profile,
    test,
    storage_class,
    rep,
    order,
    started,
    metrics,
    timing,
    provisioner,
    campaign=CAMPAIGN,
    run=None,
    occasion="weekday",
    labels=None,
):
    return ResultDocument(
        identity=CellIdentity(
            campaign=campaign,
            run=run or f"{profile}-1",
            occasion=occasion,
            storage_class=storage_class,
            profile=profile,
            workload=test.name,
            rep=rep,
            order=order,
            labels=labels or {},
        ),
        workload=WorkloadSpec(
            rw=test.rw,
            bs=test.bs,
            bs_bytes=test.bs_bytes,
            iodepth=test.iodepth,
            numjobs=test.numjobs,
            rwmixread=test.rwmixread,
            fsync=test.fsync,
            ramp_s=timing.ramp_s,
            runtime_s=timing.runtime_s,
            size_bytes=timing.size_bytes,
            group=test.group,
            load=test.load,
            title=test.title,
            headline_metric=test.headline_metric,
        ),
        provenance=Provenance(
            source="fio",
            pvbench_version="test",
            fio_version="fio-3.33",
            filesystem="ext4",
            provisioner=provisioner,
            node="worker-1",
            kernel="6.1.0-18-amd64",
            kubernetes_version="v1.31.4",
            started_at=started,
            ended_at=started + timedelta(seconds=timing.runtime_s),
            cpu_seconds=round(rng.uniform(2, 9), 2),
            notes={"seed": SEED},
        ),
        metrics=metrics,
    )


def _vshn(rng: random.Random) -> list[ResultDocument]:
    profile = PROFILES["vshn"]
    docs = []
    for sc, (riops, rbw, wiops, wbw, rel) in VSHN_CLASSES.items():
        for rep in range(1, 11):
            for order, test in enumerate(profile.tests):
                if test.name == "read-iops":
                    iops = riops
                elif test.name == "read-bw":
                    iops = rbw * 2**20 / test.bs_bytes
                else:
                    label = test.name.rsplit("-", 1)[1]
                    i = FSYNC_INDEX[label]
                    iops = wiops[i] if test.group == "iops" else wbw[i] * 2**20 / test.bs_bytes
                iops = max(1.0, rng.gauss(iops, iops * rel))
                direction = "read" if test.rw == "randread" else "write"
                lat = test.iodepth / iops * 1e6
                metrics = [
                    DirectionMetrics(
                        direction=direction,
                        iops=iops,
                        bw_mib_s=iops * test.bs_bytes / 2**20,
                        lat_mean_us=lat,
                        lat_p99_us=lat * 2.5,
                        lat_kind="clat",
                    )
                ]
                started = T0 + timedelta(hours=rep, minutes=order)
                docs.append(
                    _doc(
                        rng,
                        profile="vshn",
                        test=test,
                        storage_class=sc,
                        rep=rep,
                        order=order,
                        started=started,
                        metrics=metrics,
                        timing=profile.timing,
                        provisioner="rook-ceph.rbd.csi.ceph.com" if "ceph" in sc else "driver.longhorn.io",
                    )
                )
    return docs


def _sweep(rng: random.Random) -> list[ResultDocument]:
    profile = PROFILES["sweep"]
    docs = []
    for sc, speed in SWEEP_CLASSES.items():
        for rep in range(1, 4):
            for order, test in enumerate(profile.tests):
                depth, base_lat = LOAD[test.load]
                lat = base_lat / speed * (1 + test.bs_bytes / 65536) * rng.uniform(0.95, 1.05)
                total = min(depth / (lat / 1e6), 2_000_000 * speed / (1 + test.bs_bytes / 16384))
                read_share = {"randread": 1.0, "randwrite": 0.0}.get(test.rw, (test.rwmixread or 0) / 100)
                metrics = []
                for direction, share in (("read", read_share), ("write", 1 - read_share)):
                    if share <= 0:
                        continue
                    iops = total * share * rng.uniform(0.97, 1.03)
                    dlat = lat * (1.25 if direction == "write" else 1.0)
                    metrics.append(
                        DirectionMetrics(
                            direction=direction,
                            iops=iops,
                            bw_mib_s=iops * test.bs_bytes / 2**20,
                            lat_mean_us=dlat,
                            lat_p99_us=dlat * 2.7,
                            lat_kind="clat",
                        )
                    )
                started = T0 + timedelta(days=1, hours=rep, minutes=2 * order)
                docs.append(
                    _doc(
                        rng,
                        profile="sweep",
                        test=test,
                        storage_class=sc,
                        rep=rep,
                        order=order,
                        started=started,
                        metrics=metrics,
                        timing=profile.timing,
                        provisioner="nvme.tcp.example.com" if sc == "nvme-tcp" else "rook-ceph.rbd.csi.ceph.com",
                    )
                )
    return docs


# upgrade: one class, dbench's IOPS and latency tests, before and after (writes 20% slower),
# two occasions per run (the evening 6% slower), 5 repetitions, the first one 25% slower (warm-up)
UPGRADE_CLASS = "openebs-lvm"
UPGRADE_TESTS = ("randread-iops", "randwrite-iops", "randread-lat", "randwrite-lat")
UPGRADE_IOPS = {"read": 52000.0, "write": 21000.0}
UPGRADE_RUNS = (("before-upgrade", "baseline", 3, 1.0), ("after-upgrade", "candidate", 10, 0.8))
# The upgrade also made attaching a volume ~3x slower (the CSI driver's attach): seconds per run
UPGRADE_ATTACH_S = {"before-upgrade": 2.0, "after-upgrade": 6.0}


def _lifecycle(run: str, started: datetime, seed: str) -> VolumeLifecycle:
    """A Kubernetes cell's volume lifecycle, whole seconds as Kubernetes records them. Its own
    random stream (seeded by the cell), so the fixture's other numbers stay as they were."""
    rnd = random.Random(seed)
    bind, schedule = rnd.choice((1, 2)), 0
    attach = max(1, round(rnd.gauss(UPGRADE_ATTACH_S[run], 0.6)))
    mount, start = rnd.choice((0, 1)), rnd.choice((1, 2))
    created = started - timedelta(seconds=bind + schedule + attach + mount + start + 1)
    scheduled = created + timedelta(seconds=bind + schedule)
    return VolumeLifecycle(
        claim=f"{seed}-target",
        pod_created_at=created,
        claim_created_at=created,
        volume_bound_at=created + timedelta(seconds=bind),
        pod_scheduled_at=scheduled,
        volume_attached_at=scheduled + timedelta(seconds=attach),
        pod_sandbox_at=scheduled + timedelta(seconds=attach + mount),
        container_started_at=scheduled + timedelta(seconds=attach + mount + start),
        volume_bind_s=bind,
        pod_schedule_s=bind + schedule,
        volume_attach_s=attach,
        volume_mount_s=mount,
        pod_start_s=bind + schedule + attach + mount + start,
    )


def _at_iops(direction: str, iops: float, test) -> DirectionMetrics:
    """One direction of a test that ran at ``iops``: its MiB/s, and the latency its queue depth
    gives (Little's law), p99 2.2× the mean."""
    lat = test.iodepth / iops * 1e6
    return DirectionMetrics(
        direction=direction,
        iops=iops,
        bw_mib_s=iops * test.bs_bytes / 2**20,
        lat_mean_us=lat,
        lat_p99_us=lat * 2.2,
        lat_kind="clat",
    )


def _upgrade(rng: random.Random) -> list[ResultDocument]:
    profile = PROFILES["dbench"]
    tests = [t for t in profile.tests if t.name in UPGRADE_TESTS]
    docs = []
    for run, role, day, write_factor in UPGRADE_RUNS:
        for occasion, hour, occ_factor in (("morning", 8, 1.0), ("afternoon", 14, 0.97), ("evening", 20, 0.94)):
            for rep in range(1, 6):
                for order, test in enumerate(tests):
                    direction = "read" if test.rw == "randread" else "write"
                    iops = UPGRADE_IOPS[direction] * test.iodepth / 64 * occ_factor
                    iops *= write_factor if direction == "write" else 1.0
                    iops *= 0.75 if rep == 1 else 1.0
                    iops = rng.gauss(iops, iops * 0.03)
                    metrics = [_at_iops(direction, iops, test)]
                    started = T0.replace(hour=0) + timedelta(days=day, hours=hour, minutes=rep * len(tests) + order)
                    docs.append(
                        _doc(
                            rng,
                            profile="dbench",
                            test=test,
                            storage_class=UPGRADE_CLASS,
                            rep=rep,
                            order=order,
                            started=started,
                            metrics=metrics,
                            timing=profile.timing,
                            provisioner="local.csi.openebs.io",
                            campaign="upgrade",
                            run=run,
                            occasion=occasion,
                            labels={"role": role},
                        ).model_copy(update={"lifecycle": _lifecycle(run, started, f"{run}-{occasion}-{rep}-{order}")})
                    )
    return docs


# demo: the design of `make demo` (examples/demo.yaml): two local classes, dbench, 2 occasions ×
# 3 repetitions; memory against a disk, 2x to 40x faster (as tmpfs measures on this machine), CV 5%
DEMO_SPEEDUP = {"randread": 40.0, "randwrite": 12.0, "randrw": 20.0, "read": 2.5, "write": 2.0}


def _demo(rng: random.Random) -> list[ResultDocument]:
    profile = PROFILES["dbench"]
    docs = []
    for occasion, day, occ_factor in (("first", 1, 1.0), ("second", 2, 0.96)):  # before the upgrade's runs
        for rep in range(1, 4):
            for order, test in enumerate(profile.tests):
                for sc in ("disk", "tmpfs"):
                    speed = (DEMO_SPEEDUP[test.rw] if sc == "tmpfs" else 1.0) * occ_factor
                    metrics = []
                    for direction in ("read", "write"):
                        share = {"read": test.rwmixread or 0, "write": 100 - (test.rwmixread or 0)}[direction]
                        if (
                            test.rw in ("randread", "read")
                            and direction == "write"
                            or (test.rw in ("randwrite", "write") and direction == "read")
                        ):
                            continue
                        iops = rng.gauss(2000.0 * test.iodepth / 64 * speed, 100.0 * test.iodepth / 64 * speed)
                        iops *= share / 100 if test.rw == "randrw" else 1.0
                        metrics.append(_at_iops(direction, iops, test))
                    started = T0 + timedelta(days=day, minutes=rep * 20 + order * 2 + (sc == "tmpfs"))
                    doc = _doc(
                        rng,
                        profile="dbench",
                        test=test,
                        storage_class=sc,
                        rep=rep,
                        order=order,
                        started=started,
                        metrics=metrics,
                        timing=profile.timing,
                        provisioner="local",
                        campaign="demo",
                        run="demo-1",
                        occasion=occasion,
                    )
                    # its seconds (a generator of its own: the values above stay those of earlier
                    # fixtures), and tmpfs's page-cache flag, which keeps it in (the class is memory)
                    own = random.Random(f"{sc}/{occasion}/{rep}/{test.name}")
                    first = metrics[0]
                    doc.series = CellSeries.model_validate(
                        synthetic_series(own, first.iops, first.lat_mean_us or 100.0, 15, first.direction)
                    )
                    if sc == "tmpfs":
                        doc.guards = [
                            GuardFlag(
                                rule="page_cache",
                                value=0.01,
                                threshold=1.0,
                                excluded=False,
                                detail="tmpfs: the class is memory (working set 0.3 GiB of 23 GiB)",
                            )
                        ]
                    docs.append(doc)
    return docs


def write_synthetic_results(store_dir: Path, seed: int = 2026) -> int:
    """Write the synthetic vshn, sweep, upgrade and demo results into the directory store; returns how many."""
    rng = random.Random(seed)
    store = open_store(str(store_dir))
    docs = _vshn(rng) + _sweep(rng) + _upgrade(rng) + _demo(random.Random(seed))
    for d in docs:
        store.put_bytes(d.identity.result_key(), d.to_json())
    return len(docs)
