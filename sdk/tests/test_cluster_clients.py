"""Multi-client cells on the real engines: the `scaling` profile's x1 and x2 tests, submitted as the
Argo UI does. Each cell is a DAG: the barrier (an Argo daemon step), N client pods, each with its
own fresh PVC of the class, released together by the barrier, then the merge step, which stores
the cell's one result: the totals, each client's own numbers, the start skew and the overlap
(the proof that the pods measured the same seconds), and the volume lifecycle.
"""

from __future__ import annotations

import json

import pytest

from pvbench.argo.conventions import CAMPAIGN_MUTEX_PREFIX
from pvbench.fio.merge import read_clients_raw
from pvbench.results import ResultDocument
from pvbench.store.layout import (
    CLIENT_FILE,
    FIO_LOGS_FILE,
    RAW_FIO_FILE,
    RESULT_FILE,
    compact_prefix,
    report_prefix,
    results_prefix,
)
from pvbench.testing.cluster import (
    BUCKET,
    NAMESPACE,
    QUICK,
    RUN_TIMEOUT,
    WatchedRun,
    argo,
    describe,
    hold_mutex,
    installed_release,
    nodes,
    pod_minio,
    require_kube,
    retire,
    wait_until,
    wait_workflow,
    workflow,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

CAMPAIGN = "ci-clients"


@pytest.fixture(scope="module")
def run() -> WatchedRun:
    installed_release()
    params = {
        **QUICK,
        "size": "32M",
        "storage-classes": '["pvbench-tmpfs"]',
        "profile": "scaling",
        "tests": "randread-iops-x1,randread-iops-x2",
        "repetitions": "1",
        "campaign": CAMPAIGN,
        # the main run's node selection: it queues behind that run (mutex pvbench-node-localhost),
        # beside the failure scenario's runs, instead of after them
        "node-label": "kubernetes.io/hostname",
        "node-value": "localhost",
        "volume-timeout": "10m",  # its pods may wait for the node while other runs' cells hold it
        # the report is test_cluster_run's and test_cluster_failures' business: skipping it here
        # saves CI a 1-2 min Evidence build under the node's mutex, and proves the skip
        "build-report": "false",
    }
    # Another holder of the campaign's mutex (as a run of this campaign on other nodes would be,
    # publishing): the run's aggregate must wait for it. Released once the run is seen waiting (or
    # has ended without waiting: the test says so); retired whatever happens, which releases it.
    holder = hold_mutex(CAMPAIGN_MUTEX_PREFIX + CAMPAIGN)
    try:
        watched = WatchedRun(params, "pvbench-clients-")
        watched.seen = wait_until(
            f"{watched.name}'s publish waiting for its campaign's mutex",
            lambda: _publish_waiting_or_ended(workflow(watched.name)),
            RUN_TIMEOUT,
        )
        argo("resume", holder)
        watched.holder = wait_workflow(holder, timeout=120)
    finally:
        retire([holder])
    return watched


def _publish_waiting_or_ended(wf: dict) -> tuple[dict, dict | None] | None:
    """(the workflow, its publish node) while that node waits for a lock; (the workflow, None) if
    the run ended first; None until either."""
    for node in nodes(wf):
        if node.get("templateName") == "publish" and (node.get("synchronizationStatus") or {}).get("waiting"):
            return wf, node
    if (wf.get("status") or {}).get("phase") in ("Succeeded", "Failed", "Error"):
        return wf, None
    return None


def _by_template(wf: dict) -> dict[str, list[dict]]:
    by_template: dict[str, list[dict]] = {}
    for node in nodes(wf):
        by_template.setdefault(node.get("templateName"), []).append(node)
    return by_template


def _of_type(found: list[dict], kind: str) -> list[dict]:
    """Argo's nodes of one kind: a fan-out adds a TaskGroup node, a retried step a Retry node."""
    return [n for n in found if n["type"] == kind]


def _results(name: str) -> dict[int, tuple[str, ResultDocument]]:
    minio = pod_minio()
    keys = [k for k in minio.keys(BUCKET, results_prefix(CAMPAIGN, name) + "/") if k.endswith(RESULT_FILE)]
    docs = {}
    for key in keys:
        doc = ResultDocument.from_json(minio.client().get_object(BUCKET, key).read())
        docs[doc.workload.clients] = (key, doc)
    return docs


def test_aggregate_and_report_wait_for_the_campaigns_mutex(run):
    """Two runs of one campaign on different nodes (each holds its own node's mutex) add
    themselves to the campaign's tables in turn: the exit handler's publish (aggregate, then
    report) holds the campaign's mutex, named from the campaign's key, so a run's aggregate reads
    the compacts of every run that published before it. Here another holder had it first."""
    wf_then, waiting = run.seen
    assert waiting is not None, "the run ended without waiting for the mutex:\n" + describe(wf_then)
    assert waiting["phase"] == "Pending", describe(wf_then)
    assert waiting["synchronizationStatus"]["waiting"] == f"{NAMESPACE}/Mutex/{CAMPAIGN_MUTEX_PREFIX}{CAMPAIGN}"
    assert not [n for n in nodes(wf_then) if n.get("templateName") == "aggregate"], describe(wf_then)
    wf = run.workflow
    assert wf["status"]["phase"] == "Succeeded", describe(wf)
    released = run.holder["status"]["finishedAt"]
    [aggregate] = [n for n in nodes(wf) if n.get("templateName") == "aggregate" and n["type"] == "Pod"]
    assert aggregate["startedAt"] >= released, (aggregate["startedAt"], released)
    assert not (wf["status"].get("synchronization") or {}).get("mutex", {}).get("holding"), "every mutex released"


def test_each_client_is_a_pod_with_its_own_volume_behind_the_barrier(run):
    wf = run.workflow
    assert wf["status"]["phase"] == "Succeeded", describe(wf)
    by_template = _by_template(wf)
    # one DAG per cell; 1 + 2 client pods; a barrier and a merge per cell; no one-pod cells
    assert len(_of_type(by_template["client-cell"], "DAG")) == 2
    assert len(_of_type(by_template["fio-client"], "Pod")) == 3
    assert len(_of_type(by_template["cell-barrier"], "Pod")) == 2
    assert len(_of_type(by_template["merge-clients"], "Pod")) == 2
    # Argo stops the barriers (daemons) once their cell is done, and counts that a success
    assert {n["phase"] for n in by_template["cell-barrier"]} == {"Succeeded"}, describe(wf)
    # the one-pod fan-out was empty (Argo shows it as one Skipped node): no one-pod cell ran
    assert [n["type"] for n in by_template["benchmark-cell"]] == ["Skipped"]
    # every client pod had a fresh PVC of the class, each bound to its own volume
    assert len(run.pvcs) == 3, sorted(run.pvcs)
    assert {p["spec"]["storageClassName"] for p in run.pvcs.values()} == {"pvbench-tmpfs"}
    volumes = [p["spec"].get("volumeName") for p in run.pvcs.values()]
    assert len(set(volumes)) == 3 and all(volumes)


def test_the_client_pods_measure_the_same_seconds_and_their_totals_are_the_cells(run):
    wf = run.workflow
    assert wf["status"]["phase"] == "Succeeded", describe(wf)
    docs = _results(run.name)
    assert sorted(docs) == [1, 2]
    key, doc = docs[2]
    section = doc.clients
    assert section.count == 2 and section.barrier == "pods" and [c.client for c in section.per_client] == [1, 2]
    assert section.volumes == "own"
    # the barrier's proof: both pods left it within half a second, and measured (nearly) the same seconds
    assert section.start_skew_s is not None and section.start_skew_s < 0.5, section
    assert section.overlap_share is not None and section.overlap_share > 0.8, section
    [total] = [m for m in doc.metrics if m.iops]
    per_client = [m.iops for c in section.per_client for m in c.metrics if m.iops]
    assert len(per_client) == 2 and total.iops == pytest.approx(sum(per_client), rel=1e-6)
    assert 0 < total.straggler_ratio <= 1
    assert all(c.node for c in section.per_client)
    # the raw output keeps each client's own fio json+ (the totals are rebuilt from it); each
    # client pod's own output stays beside it, under clients/<n>/
    minio = pod_minio()
    raw = minio.client().get_object(BUCKET, key.replace(RESULT_FILE, RAW_FIO_FILE)).read()
    assert json.loads(raw)["format"] == "pvbench.fio-clients/v1" and len(read_clients_raw(raw)) == 2
    prefix = key.removesuffix(RESULT_FILE)
    # (with its fio interval logs, which the merge step sums into the cell's seconds)
    assert sorted(k.removeprefix(prefix) for k in minio.keys(BUCKET, prefix + "clients/")) == [
        f"clients/{n}/{name}" for n in (1, 2) for name in sorted((CLIENT_FILE, FIO_LOGS_FILE))
    ]
    assert len(doc.series.directions[0].iops) >= 1, doc.series  # the clients' seconds, summed
    # the cell's lifecycle is its slowest client pod's, whose claim is one the run made
    assert doc.lifecycle is not None and doc.lifecycle.pod_start_s is not None
    assert doc.lifecycle.claim in run.pvcs
    # N = 1 ran the same way: one client pod behind its barrier
    one = docs[1][1]
    assert one.clients is not None and one.clients.count == 1 and one.clients.barrier == "pods"


@pytest.fixture(scope="module")
def shared_run() -> WatchedRun:
    installed_release()
    params = {
        **QUICK,
        "size": "32M",
        "storage-classes": '["pvbench-tmpfs"]',
        "profile": "scaling",
        "tests": "randwrite-iops-x2",
        "repetitions": "1",
        "client-volumes": "shared",
        "access-modes": "ReadWriteMany",  # all clients on one volume: a ReadWriteMany one
        "campaign": CAMPAIGN,
        "node-label": "kubernetes.io/hostname",
        "node-value": "localhost",
        "volume-timeout": "10m",
        "build-report": "false",
    }
    return WatchedRun(params, "pvbench-shared-")


def test_build_report_false_skips_the_report_step_and_still_stores_the_runs_tables(run):
    """Both runs of this campaign pass build-report=false: the exit handler aggregates (the run's
    compact and the campaign's tables land) and skips the report, so no site is stored."""
    wf = run.workflow
    assert wf["status"]["phase"] == "Succeeded", describe(wf)
    by_template = _by_template(wf)
    assert [n["phase"] for n in _of_type(by_template["aggregate"], "Pod")] == ["Succeeded"], describe(wf)
    [report] = [n for n in nodes(wf) if n.get("displayName") == "report"]
    assert report["type"] == "Skipped" and report["phase"] in ("Skipped", "Omitted"), describe(wf)
    assert not _of_type(by_template.get("report", []), "Pod")
    minio = pod_minio()
    compact = compact_prefix(CAMPAIGN, run.name)
    assert f"{compact}/documents.parquet" in minio.keys(BUCKET, compact + "/")
    assert minio.keys(BUCKET, report_prefix(CAMPAIGN) + "/") == []


def test_shared_client_volume_is_one_rwx_claim_for_every_client_released_after_the_cell(shared_run):
    wf = shared_run.workflow
    assert wf["status"]["phase"] == "Succeeded", describe(wf)
    by_template = _by_template(wf)
    assert len(_of_type(by_template["shared-client-cell"], "DAG")) == 1
    assert [n["type"] for n in by_template["client-cell"]] == ["Skipped"]  # the own-volume fan-out: empty
    assert len(_of_type(by_template["fio-client-shared"], "Pod")) == 2
    assert [n["phase"] for n in _of_type(by_template["release-volume"], "Pod")] == ["Succeeded"], describe(wf)
    # one claim for the cell, ReadWriteMany, of the class; released after the merge
    [(claim_name, claim)] = shared_run.pvcs.items()
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"] and claim["spec"]["storageClassName"] == "pvbench-tmpfs"
    left = require_kube().get("pvc", claim_name)  # deleted (or going: the last pod's finalizer)
    assert left is None or left["metadata"].get("deletionTimestamp"), left
    [(_, doc)] = _results(shared_run.name).values()
    section = doc.clients
    assert section.count == 2 and section.barrier == "pods" and section.volumes == "shared"
    assert doc.identity.access_mode == "ReadWriteMany" and doc.identity.storage_label() == "pvbench-tmpfs (RWX)"
    # both clients wrote into their own directory of the one volume, released together
    assert [c.target_path for c in section.per_client] == ["/data/pvbench-client-1", "/data/pvbench-client-2"]
    assert section.start_skew_s is not None and section.start_skew_s < 0.5, section
    assert section.overlap_share is not None and section.overlap_share > 0.8, section
    assert doc.lifecycle is not None and doc.lifecycle.claim == claim_name
