"""The volume lifecycle computed from Kubernetes objects (pvbench.kube.lifecycle).

The objects below are shaped as the API server returns them (Kubernetes 1.31); the real ones,
read by real cell pods, are checked in test_cluster_run.py.
"""

from __future__ import annotations

from datetime import timedelta

from stats_helpers import T0, doc, write

from pvbench.kube.lifecycle import from_objects, read_own
from pvbench.pipeline import build_tables
from pvbench.results.schema import LIFECYCLE_METRICS, LIFECYCLE_WORKLOAD, DirectionMetrics, VolumeLifecycle
from pvbench.store import open_store


def pod(**status) -> dict:
    return {
        "metadata": {"name": "wf-cell-1", "creationTimestamp": "2026-11-23T10:00:00Z"},
        "spec": {"volumes": [{"name": "target", "ephemeral": {}}]},
        "status": {
            "conditions": [
                {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": "2026-11-23T10:00:09Z"},
                {"type": "Initialized", "status": "True", "lastTransitionTime": "2026-11-23T10:00:11Z"},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-23T10:00:04Z"},
            ],
            "containerStatuses": [
                {"name": "wait", "state": {"running": {"startedAt": "2026-11-23T10:00:12Z"}}},
                {"name": "main", "state": {"running": {"startedAt": "2026-11-23T10:00:13Z"}}},
            ],
            **status,
        },
    }


CLAIM = {
    "metadata": {"name": "wf-cell-1-target", "creationTimestamp": "2026-11-23T10:00:01Z"},
    "spec": {"volumeName": "pvc-123"},
}
VOLUME = {
    "metadata": {"name": "pvc-123"},
    "status": {"phase": "Bound", "lastPhaseTransitionTime": "2026-11-23T10:00:03Z"},
}
ATTACHED = {
    "reason": "SuccessfulAttachVolume",
    "firstTimestamp": "2026-11-23T10:00:07Z",
    "message": 'AttachVolume.Attach succeeded for volume "pvc-123"',
}


def test_every_step_of_an_attached_volume():
    lc = from_objects(pod(), CLAIM, VOLUME, [ATTACHED, {"reason": "Pulled", "firstTimestamp": "2026-11-23T10:00:10Z"}])
    assert (lc.claim, lc.volume) == ("wf-cell-1-target", "pvc-123")
    assert lc.volume_bind_s == 2  # claim 10:00:01 -> PV Bound 10:00:03
    assert lc.pod_schedule_s == 4  # pod 10:00:00 -> PodScheduled 10:00:04
    assert lc.volume_attach_s == 3  # scheduled -> attached 10:00:07
    assert lc.volume_mount_s == 2  # attached -> sandbox 10:00:09
    assert lc.pod_start_s == 13  # the benchmark container ("main"), not Argo's wait container
    assert lc.notes == []


def test_a_local_volume_has_no_attach_step_and_mount_counts_from_scheduling():
    lc = from_objects(pod(), CLAIM, VOLUME, [])
    assert lc.volume_attached_at is None and lc.volume_attach_s is None
    assert lc.volume_mount_s == 5  # scheduled 10:00:04 -> sandbox 10:00:09


def test_what_cannot_be_read_stays_null_and_a_clock_skew_gives_no_negative_duration():
    skewed = pod(containerStatuses=[{"name": "main", "state": {"running": {"startedAt": "2026-11-23T09:59:58Z"}}}])
    lc = from_objects(skewed, CLAIM, None, [])  # no right to read PVs
    assert lc.volume_bound_at is None and lc.volume_bind_s is None
    assert lc.pod_start_s is None
    assert "pod_start_s" in lc.notes[0]
    # every duration is a field of the document and a metric analytics knows by that name
    assert set(LIFECYCLE_METRICS) <= set(VolumeLifecycle.model_fields)


def test_a_released_volume_does_not_pass_its_release_for_its_binding():
    released = {**VOLUME, "status": {"phase": "Released", "lastPhaseTransitionTime": "2026-11-23T10:05:00Z"}}
    assert from_objects(pod(), CLAIM, released, []).volume_bind_s is None


def test_outside_a_pod_nothing_is_read_and_nothing_said(monkeypatch):
    monkeypatch.delenv("PVBENCH_POD_NAME", raising=False)
    assert read_own() == (None, None)
    # in a pod without a token (the chart's volumeLifecycle off, or an old template): it says why
    monkeypatch.setenv("PVBENCH_POD_NAME", "p")
    monkeypatch.setenv("PVBENCH_POD_NAMESPACE", "ns")
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    lifecycle, why = read_own()
    assert lifecycle is None and "ServiceAccount token" in why


# ---------------------------------------------------------------- in analytics
def with_lifecycle(d, attach_s: float, two_directions: bool = False):
    """A result document of a Kubernetes cell: its lifecycle, attach taking attach_s."""
    created = d.provenance.started_at - timedelta(seconds=30)
    scheduled = created + timedelta(seconds=3)
    attached = scheduled + timedelta(seconds=attach_s)
    lc = VolumeLifecycle(
        claim="pod-target",
        pod_created_at=created,
        pod_scheduled_at=scheduled,
        volume_attached_at=attached,
        container_started_at=attached + timedelta(seconds=2),
        volume_bind_s=1,
        pod_schedule_s=3,
        volume_attach_s=attach_s,
        volume_mount_s=1,
        pod_start_s=3 + attach_s + 2,
    )
    metrics = d.metrics + ([DirectionMetrics(direction="write", iops=10.0)] if two_directions else [])
    return d.model_copy(update={"lifecycle": lc, "metrics": metrics})


def test_lifecycle_is_aggregated_once_per_cell_and_a_slower_attach_is_a_verdict(tmp_path):
    """Every cell measures its volume's lifecycle once, whatever its test: the rows pool all tests
    of a class (workload volume-lifecycle), are summarised like any metric and compared: a class
    whose attach takes 3x longer is worse on pod_start_s, with its occasions counted."""
    import random

    rnd = random.Random(7)
    docs = []
    for day in range(4):
        for sc, attach in (("fast", 2.0), ("slow", 6.0)):
            for rep in (1, 2):
                for workload in ("randread-iops", "randwrite-iops"):
                    d = doc(
                        occasion=f"night-{day}",
                        storage_class=sc,
                        workload=workload,
                        rep=rep,
                        started=T0 + timedelta(days=day, minutes=rep),
                    )
                    docs.append(
                        with_lifecycle(d, attach + rnd.uniform(-0.5, 0.5), two_directions=workload == "randwrite-iops")
                    )
    write(tmp_path, docs)
    con = build_tables(open_store(str(tmp_path)), "syn")
    per_class = dict(
        con.execute(
            "select storage_class, count(*) from measurements where workload = ? and metric = 'volume_attach_s' group by all",
            [LIFECYCLE_WORKLOAD],
        ).fetchall()
    )
    assert per_class == {"fast": 16, "slow": 16}  # 4 nights x 2 reps x 2 tests; two directions count once
    summary = {
        (r[0], r[1]): r[2:]
        for r in con.execute(
            "select storage_class, metric, n, median, unit, better, is_headline, n_occasions from summary where workload = ?",
            [LIFECYCLE_WORKLOAD],
        ).fetchall()
    }
    n, median, unit, better, headline, occasions = summary[("slow", "pod_start_s")]
    assert (n, unit, better, headline, occasions) == (16, "s", "lower", True, 4)
    assert 10 < median < 12
    assert summary[("fast", "volume_attach_s")][4] is False  # only pod_start_s is the headline
    assert ("fast", "lat_p99_us") not in summary
    [(verdict, change)] = con.execute(
        "select verdict, change from report_comparisons where kind = 'storage_class' and workload = ? and metric = 'pod_start_s'",
        [LIFECYCLE_WORKLOAD],
    ).fetchall()
    assert verdict == "worse" and change > 0.5  # fast is the baseline (the alphabet); slow starts ~70% later


def test_the_cell_waits_briefly_for_the_kubelet_to_report_its_start():
    """On the real node the cell's first read (~1 s after its start) found no startedAt yet: the
    kubelet reports it a moment later. read() looks again before giving up (and says so)."""
    from pvbench.kube.lifecycle import read

    starting = pod(containerStatuses=[{"name": "main", "state": {"waiting": {"reason": "PodInitializing"}}}])

    class Replies:  # the API's answers in turn: the pod without its start, then with it
        def __init__(self, pods):
            self.pods, self.calls = list(pods), []

        def get(self, path, **query):
            self.calls.append(path)
            if path.endswith("/pods/wf-cell-1"):
                return self.pods.pop(0) if len(self.pods) > 1 else self.pods[0]
            if "persistentvolumeclaims" in path:
                return CLAIM
            if "persistentvolumes" in path:
                return VOLUME
            return {"items": []}

    api = Replies([starting, starting, pod()])
    lc = read(api, "ns", "wf-cell-1", wait_s=5)
    assert lc.pod_start_s == 13 and lc.notes == []
    assert api.calls.count("/api/v1/namespaces/ns/pods/wf-cell-1") == 3
    never = read(Replies([starting]), "ns", "wf-cell-1", wait_s=0.6)
    assert never.pod_start_s is None and "no start time" in never.notes[0]
