"""Argo Events, for real: the chart's EventSources and Sensor on the JetStream EventBus turn
storage changes into candidate runs, one run per change.

Each trigger is exercised the way it happens in a cluster: a StorageClass is created; the CSI
driver's DaemonSet gets a new image (and, before that, changes that are not a new spec: status
writes by its controller, an annotation); a CI job calls the webhook with the chart's token,
without it, and twice with the same id. The runs the Sensor starts are checked (labels,
parameters, the template they reference) and then retired (terminated, then deleted once ended:
pvbench.testing.cluster.retire): they would otherwise queue for the node and each run a whole benchmark,
which test_cluster_run proves once.
"""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.request

import pytest

from pvbench.testing.cluster import CSI_NAMESPACE, NAMESPACE, installed_release, require_kube, retire, wait_until

pytestmark = [pytest.mark.cluster]

SETTLE_S = 8  # long enough for a (wrong) second run to appear: events reach the Sensor in ~1 s


def candidate_runs(trigger: str) -> list[dict]:
    k = require_kube()
    return k.items("workflow", f"pvbench.io/trigger={trigger}")


def params(wf: dict) -> dict[str, str]:
    return {p["name"]: p.get("value", "") for p in wf["spec"]["arguments"]["parameters"]}


def forget(runs: list[dict]) -> None:
    """Retire the candidate runs (after checking them): they are not what this module tests, and
    the runs of later modules queue for the same node mutex (pvbench-node-linux)."""
    retire([wf["metadata"]["name"] for wf in runs])


@pytest.fixture(scope="module", autouse=True)
def ready():
    k = require_kube()
    installed_release()
    for label in ("eventsource-name=pvbench-resources", "eventsource-name=pvbench-webhook", "sensor-name=pvbench"):
        wait_until(
            f"a ready pod {label}",
            lambda: (
                all(
                    c.get("ready")
                    for p in k.items("pod", label) or [{}]
                    for c in (p.get("status", {}).get("containerStatuses") or [{}])
                )
                and k.items("pod", label)
            ),
            120,
        )
    time.sleep(5)  # informers' initial listing (afterStart filters it) has passed
    yield
    # a run that appeared after its test retired the others (an event delivered again) would hold
    # the node's mutex for a whole benchmark while the next module's runs wait: retire it too
    time.sleep(SETTLE_S)
    late = k.items("workflow", "pvbench.io/trigger")  # the Sensor's runs (no other run has the label)
    if late:
        print(f"\nretiring candidate runs started after their test: {[wf['metadata']['name'] for wf in late]}")
        forget(late)


def _candidate(wf: dict, trigger: str) -> None:
    labels = wf["metadata"]["labels"]
    assert labels["pvbench.io/role"] == "candidate" and labels["pvbench.io/trigger"] == trigger, labels
    assert wf["spec"]["workflowTemplateRef"] == {"name": "pvbench-benchmark"}
    p = params(wf)
    assert p["role"] == "candidate" and p["trigger"] == trigger
    assert p["campaign"] == "ci-events" and p["tests"] == "randread-iops"  # the chart's events.parameters


@pytest.mark.argo_v3
def test_a_new_storage_class_starts_one_candidate_run_on_it():
    k = require_kube()
    sc = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "pvbench-ci-new", "labels": {"app.kubernetes.io/part-of": "pvbench-ci"}},
        "provisioner": "pvbench.io/local-media",
        "volumeBindingMode": "WaitForFirstConsumer",
    }
    k.delete("storageclass", "pvbench-ci-new", namespace=None)
    k.apply(sc)
    [wf] = wait_until("a run for the new StorageClass", lambda: candidate_runs("storageclass"), 60)
    _candidate(wf, "storageclass")
    p = params(wf)
    assert json.loads(p["storage-classes"]) == ["pvbench-ci-new"] and p["changed"] == "StorageClass/pvbench-ci-new"
    # a metadata-only UPDATE of the class is no storage change
    k.run("label", "storageclass", "pvbench-ci-new", "pvbench.io/touched=yes", namespace=None)
    time.sleep(SETTLE_S)
    assert len(candidate_runs("storageclass")) == 1
    forget(candidate_runs("storageclass"))
    k.delete("storageclass", "pvbench-ci-new", namespace=None)


def _daemonset(image: str) -> dict:
    # no node matches: the DaemonSet never runs a pod, its object is all the event source watches
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "csi-fakeplugin", "namespace": CSI_NAMESPACE},
        "spec": {
            "selector": {"matchLabels": {"app": "csi-fakeplugin"}},
            "template": {
                "metadata": {"labels": {"app": "csi-fakeplugin"}},
                "spec": {
                    "nodeSelector": {"pvbench.io/no-such-node": "true"},
                    "containers": [{"name": "plugin", "image": image}],
                },
            },
        },
    }


def test_a_csi_image_change_starts_one_run_and_status_writes_start_none():
    k = require_kube()
    k.delete("daemonset", "csi-fakeplugin", namespace=CSI_NAMESPACE)
    k.apply(_daemonset("registry.example/csi-fake:1.0"))
    # the DaemonSet controller writes its status (UPDATEs with the same generation); an annotation too
    k.run("annotate", "daemonset", "csi-fakeplugin", "pvbench.io/note=status-only", namespace=CSI_NAMESPACE)
    k.apply(_daemonset("registry.example/csi-fake:1.0"))  # the same spec again
    time.sleep(SETTLE_S)
    assert candidate_runs("csi-fake-csi") == []
    k.apply(_daemonset("registry.example/csi-fake:1.1"))
    [wf] = wait_until("a run for the new CSI image", lambda: candidate_runs("csi-fake-csi"), 60)
    _candidate(wf, "csi-fake-csi")
    p = params(wf)
    assert (p["old-image"], p["new-image"]) == ("registry.example/csi-fake:1.0", "registry.example/csi-fake:1.1")
    assert json.loads(p["storage-classes"]) == ["pvbench-tmpfs"]
    assert p["changed"] == f"DaemonSet/{CSI_NAMESPACE}/csi-fakeplugin"
    time.sleep(SETTLE_S)
    assert len(candidate_runs("csi-fake-csi")) == 1, "the image change was counted twice"
    forget(candidate_runs("csi-fake-csi"))


def _post(body: dict, token: str | None) -> int:
    k = require_kube()
    [pod] = k.items("pod", "eventsource-name=pvbench-webhook")
    req = urllib.request.Request(
        f"http://{pod['status']['podIP']}:12000/pvbench",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_the_webhook_wants_the_token_and_starts_one_run_per_call_or_id():
    k = require_kube()
    token = base64.b64decode(k.json("get", "secret", "pvbench-webhook")["data"]["token"]).decode()
    body = {"storageClasses": ["pvbench-tmpfs"], "oldImage": "a:1", "newImage": "a:2", "changed": "ci/pipeline-42"}
    assert _post(body, None) in (401, 403)
    assert _post(body, "not-the-token") in (401, 403)
    time.sleep(SETTLE_S)
    assert candidate_runs("ci") == [], "a call without the token started a run"
    assert _post(body, token) == 200
    [wf] = wait_until("a run for the webhook call", lambda: candidate_runs("ci"), 60)
    _candidate(wf, "ci")
    p = params(wf)
    assert json.loads(p["storage-classes"]) == ["pvbench-tmpfs"]
    assert (p["old-image"], p["new-image"], p["changed"]) == ("a:1", "a:2", "ci/pipeline-42")
    # a CI job retried with the same id starts nothing more
    with_id = {**body, "id": "pipeline-42"}
    assert _post(with_id, token) == 200
    wait_until("a run for the call with an id", lambda: len(candidate_runs("ci")) == 2, 60)
    assert _post(with_id, token) == 200
    # a call naming more classes than benchmark.maxStorageClasses (default 8) is dropped by the Sensor
    too_many = {**body, "id": "pipeline-too-many", "storageClasses": [f"pvbench-c{i}" for i in range(9)]}
    assert _post(too_many, token) == 200
    time.sleep(SETTLE_S)
    runs = candidate_runs("ci")
    assert len(runs) == 2, [w["metadata"]["name"] for w in runs]
    assert "pvbench-ci-pipeline-42" in [w["metadata"]["name"] for w in runs]
    forget(runs)
    assert NAMESPACE == "pvbench"
