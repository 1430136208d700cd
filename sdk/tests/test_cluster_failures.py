"""What goes wrong in real clusters, on the real engines: a volume that never binds, a cell whose
pod is lost, runs that queue for the same node, and `argo retry` of a failed run.

One run F measures three classes: one whose provisioner nobody runs (its PVC stays Pending),
one whose cell pod this test deletes while fio runs (Argo: Error), and one that works. Meanwhile
the chart's weekend CronWorkflow is made due, so its run C queues for the node's mutex behind
F. Then the class is fixed (made again with a working provisioner, as an operator would) and
F is retried with `argo retry`, which reruns exactly its failed cells under the same keys.
"""

from __future__ import annotations

import io
import json
import threading
import time

import pytest

from pvbench.argo.conventions import NODE_MUTEX_PREFIX
from pvbench.store.layout import RESULT_FILE, analytics_prefix, report_prefix, results_prefix
from pvbench.testing.cluster import (
    BUCKET,
    NAMESPACE,
    QUICK,
    UNBINDABLE_CLASS,
    argo,
    cell_nodes,
    describe,
    nodes,
    pod_minio,
    require_kube,
    retire,
    run_pvcs_and_pvs,
    submit,
    wait_mutex_free,
    wait_until,
    wait_workflow,
    workflow,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

CAMPAIGN = "ci-failures"
CLASSES = ["pvbench-xfs", UNBINDABLE_CLASS, "pvbench-tmpfs"]
LOST = "pvbench-xfs"  # the class whose cell pod is deleted mid-run
# runtime 20 s: the lost cell's pod is deleted while fio surely runs, and more than 10 s after
# Argo made it (Argo makes a pod lost in its first 10 s again: RECENTLY_STARTED_POD_DURATION)
PARAMS = {
    **QUICK,
    "runtime": "20s",
    "campaign": CAMPAIGN,
    "storage-classes": json.dumps(CLASSES),
    "profile": "dbench",
    "tests": "randread-iops",
    "repetitions": "1",
    "seed": "5",
}
CRON = "pvbench-weekend"
NODE_MUTEX = NODE_MUTEX_PREFIX + "linux"  # F's and C's: the template's default node-value


def _running_cell_pod(wf_name: str, storage_class: str) -> dict | None:
    """The run's cell pod of that class whose main container (fio-step) is running."""
    k = require_kube()
    for pod in k.items("pod", f"workflows.argoproj.io/workflow={wf_name}", "pvbench.io/component=benchmark"):
        [main] = [c for c in pod["spec"]["containers"] if c["name"] == "main"]
        statuses = [s for s in pod["status"].get("containerStatuses") or [] if s["name"] == "main"]
        if storage_class in json.dumps(main) and statuses and statuses[0].get("state", {}).get("running"):
            return pod
    return None


def _cron_runs() -> list[dict]:
    return require_kube().items("workflow", f"workflows.argoproj.io/cron-workflow={CRON}")


@pytest.fixture(scope="module")
def scenario():
    k = require_kube()
    facts: dict = {}
    # F must find the node's mutex free: a run an earlier module left would make every wait below
    # a wait for that run (said here, by name, rather than as F's timeout 15 minutes later)
    wait_mutex_free(NODE_MUTEX, 300)
    f_name = submit(PARAMS, generate_name="pvbench-ci-failures-")
    facts["F"] = f_name

    def lose_a_pod():  # in the background: the cells' order is random, the cron's minute is not ours
        def running():  # fio runs, Argo knows it, and made the pod over 12 s ago (see PARAMS)
            pod = _running_cell_pod(f_name, LOST)
            return (
                pod
                if pod
                and any(
                    n["phase"] == "Running"
                    and f"storage_class:{LOST}" in n["displayName"]
                    and time.time() - _t(n["startedAt"]) > 12
                    for n in cell_nodes(workflow(f_name))
                )
                else None
            )

        pod = wait_until(f"F's {LOST} cell to run fio", running, 400, every=0.5)
        k.delete("pod", pod["metadata"]["name"], wait=False)
        facts["deleted_pod"] = pod["metadata"]["name"]

    killer = threading.Thread(target=lose_a_pod, daemon=True)
    killer.start()
    # the chart's weekend occasion, made due every minute while F holds the node
    k.run(
        "patch",
        "cronworkflow",
        CRON,
        "--type",
        "merge",
        "-p",
        json.dumps({"spec": {"schedules": ["* * * * *"], "suspend": False}}),
    )
    try:
        [c_wf] = wait_until("the CronWorkflow to start a run", _cron_runs, 150)
        facts["C"] = c_wf["metadata"]["name"]
    finally:
        k.run("patch", "cronworkflow", CRON, "--type", "merge", "-p", json.dumps({"spec": {"suspend": True}}))
    # C waits for the node's mutex while F runs
    facts["C_waited"] = wait_until(
        "C to wait for the node mutex",
        lambda: (
            "lock" in (workflow(facts["C"]).get("status", {}).get("message") or "").lower()
            and workflow(facts["C"])["status"]["message"]
        ),
        120,
        every=1,
    )
    t0 = time.monotonic()
    facts["F_wf"] = wait_workflow(f_name)
    facts["F_seconds"] = time.monotonic() - t0
    killer.join(timeout=5)
    wait_until("F's volumes to go", lambda: run_pvcs_and_pvs(f_name) == ([], []), 60)
    facts["F_failures"] = _failures(f_name)  # before the retry rewrites the tables
    facts["F_stored"] = _stored(f_name)
    facts["C_wf"] = wait_workflow(facts["C"])
    # the operator fixes the class (its provisioner cannot change: delete, create), then `argo retry`:
    # the failed cells again, then the exit handler again
    k.delete("storageclass", UNBINDABLE_CLASS, namespace=None)
    k.apply(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {
                "name": UNBINDABLE_CLASS,
                "annotations": {"pvbench.io/medium": "tmpfs"},
                "labels": {"app.kubernetes.io/part-of": "pvbench-ci"},
            },
            "provisioner": "pvbench.io/local-media",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )
    # the new class is a storage change: the Sensor starts a candidate run on it, not this test's business
    candidates = wait_until(
        "the candidate run for the fixed class",
        lambda: require_kube().items("workflow", "pvbench.io/trigger=storageclass"),
        60,
    )
    retire([wf["metadata"]["name"] for wf in candidates])  # it queues for the node F's retry needs
    # no `-p build-report=false` to spare CI this report: Argo v3.7.18's retry -p drops the
    # template's default parameters, and the retried steps fail (docs/kubernetes.md)
    argo("retry", f_name)
    # (Argo v4: right after the retry the status may have no phase yet)
    wait_until("F to run again", lambda: workflow(f_name).get("status", {}).get("phase") == "Running", 60, every=1)
    facts["F_retried"] = wait_workflow(f_name)
    return facts


def _t(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _failures(wf_name: str) -> list[dict]:
    import pyarrow.parquet as pq

    key = f"{analytics_prefix(CAMPAIGN)}/report_failures.parquet"  # the campaign's: each run's failures
    data = pod_minio().client().get_object(BUCKET, key).read()
    return [f for f in pq.read_table(io.BytesIO(data)).to_pylist() if f["run"] == wf_name]


def _stored(wf_name: str, campaign: str = CAMPAIGN) -> list[str]:
    return [k for k in pod_minio().keys(BUCKET, results_prefix(campaign, wf_name) + "/") if k.endswith(RESULT_FILE)]


def test_the_unbindable_volume_fails_its_cell_at_its_volume_timeout(scenario):
    wf = scenario["F_wf"]
    assert wf["status"]["phase"] in ("Failed", "Error"), describe(wf)  # Error: a cell errored (the lost pod)
    [cell] = [n for n in cell_nodes(wf) if f"storage_class:{UNBINDABLE_CLASS}" in n["displayName"]]
    assert cell["phase"] == "Failed", describe(wf)
    [deadline] = [p["value"] for p in wf["status"]["outputs"]["parameters"] if p["name"] == "cell-timeout"]
    wait = float(PARAMS["volume-timeout"].rstrip("s"))
    # when it failed: its own finishedAt, or (Argo leaves it unset for a pod that never ran) when the
    # next step of the run started
    later = sorted(
        _t(n["startedAt"])
        for n in nodes(wf)
        if n.get("startedAt") and n["type"] == "Pod" and _t(n["startedAt"]) > _t(cell["startedAt"])
    )
    took = (_t(cell["finishedAt"]) if cell.get("finishedAt") else later[0]) - _t(cell["startedAt"])
    print(f"\nunbindable cell: {cell['message']!r} after {took:.0f} s (volume-timeout {wait:g} s, deadline {deadline})")
    # at the run's volume-timeout, not at the cell's whole deadline (its fio time more): the guard
    # looks every 10 s, Argo notices the pod's new phase at once
    assert wait - 5 <= took <= wait + 30 < float(deadline.rstrip("s")), (took, wait, deadline)
    assert f"did not start within the run's volume-timeout of {wait:g} s" in cell["message"], cell["message"]
    assert f"storage class {UNBINDABLE_CLASS}" in cell["message"] and "Pending" in cell["message"], cell["message"]


# How Argo names a cell whose pod was deleted depends on what its controller sees first: the pod
# gone ("Error", pod deleted) or its main container's exit (fio-step stops fio on the SIGTERM and
# exits 143: "Failed", "main: Error (exit code 143)"). Both seen on the real engines (a loaded
# node sees the second more often); either way the cell has no result and the report names it.
LOST_PHASES = {"Error", "Failed"}


@pytest.mark.argo_v3
def test_the_lost_pod_errors_its_cell_and_the_other_cell_is_measured(scenario):
    wf = scenario["F_wf"]
    phases = {n["displayName"].split("storage_class:")[1].split(",")[0]: n["phase"] for n in cell_nodes(wf)}
    assert phases.pop(LOST) in LOST_PHASES, describe(wf)
    [lost] = [n for n in cell_nodes(wf) if f"storage_class:{LOST}" in n["displayName"]]
    assert lost["phase"] == "Error" or "exit code 143" in lost.get("message", ""), describe(wf)
    assert phases == {UNBINDABLE_CLASS: "Failed", "pvbench-tmpfs": "Succeeded"}, describe(wf)
    assert [k for k in scenario["F_stored"] if "pvbench-tmpfs" in k]
    assert not [k for k in scenario["F_stored"] if LOST in k]


def test_aggregate_and_report_still_run_and_name_what_failed(scenario):
    wf = scenario["F_wf"]
    ran = {
        n["templateName"]: n["phase"]
        for n in nodes(wf)
        if n["type"] == "Pod" and n["templateName"] in ("aggregate", "report", "cleanup")
    }
    assert ran == {"aggregate": "Succeeded", "report": "Succeeded", "cleanup": "Succeeded"}, describe(wf)
    failed = {f["storage_class"]: f["phase"] for f in scenario["F_failures"] if f["is_cell"]}
    assert failed.pop(LOST) in LOST_PHASES and failed == {UNBINDABLE_CLASS: "Failed"}, scenario["F_failures"]
    [unbound] = [f for f in scenario["F_failures"] if f["storage_class"] == UNBINDABLE_CLASS]
    assert "did not start within the run's volume-timeout" in unbound["message"], unbound
    assert f"{report_prefix(CAMPAIGN)}/index.html" in pod_minio().keys(BUCKET, report_prefix(CAMPAIGN) + "/")


def test_no_volume_of_the_failed_run_remains(scenario):
    """The pending pod of the unbindable cell is deleted by the exit handler, and its PVC with it."""
    assert run_pvcs_and_pvs(scenario["F"]) == ([], [])
    assert scenario["deleted_pod"]


@pytest.mark.argo_v3
def test_a_cron_workflow_of_the_chart_queues_for_the_node_then_succeeds(scenario):
    assert NODE_MUTEX in scenario["C_waited"], scenario["C_waited"]
    wf = scenario["C_wf"]
    assert wf["status"]["phase"] == "Succeeded", describe(wf)
    assert wf["metadata"]["labels"]["pvbench.io/occasion"] == "weekend"
    assert wf["metadata"]["labels"]["workflows.argoproj.io/cron-workflow"] == CRON
    [key] = _stored(scenario["C"], "ci-occasions")
    # the chart's occasions.parameters reach the run: build-report=false skipped its report
    assert [n["phase"] for n in nodes(wf) if n.get("displayName") == "report"] in (["Skipped"], ["Omitted"])
    assert "/occasion=weekend/" in key and "/storage_class=pvbench-tmpfs/" in key
    # it ran after F had released the node
    f_end = scenario["F_wf"]["status"]["finishedAt"]
    assert wf["status"]["startedAt"] >= f_end or any(
        n["templateName"] == "validate" and n["startedAt"] >= f_end for n in nodes(wf)
    ), (f_end, describe(wf))


@pytest.mark.argo_v3  # the scenario retries F on v3.7.18 too: what the retry did is checked there as well
def test_argo_retry_reruns_the_failed_cells_and_counts_nothing_twice(scenario):
    wf = scenario["F_retried"]
    assert wf["status"]["phase"] == "Succeeded", describe(wf)
    phases = {n["displayName"].split("storage_class:")[1].split(",")[0]: n["phase"] for n in cell_nodes(wf)}
    assert phases == dict.fromkeys(CLASSES, "Succeeded"), describe(wf)
    stored = _stored(scenario["F"])
    assert len(stored) == 3 and len(set(stored)) == 3, stored  # one result per cell, no copy
    import pyarrow.parquet as pq

    # the retry's exit handler compacted the run again, whole: the campaign counts each cell once
    key = f"{analytics_prefix(CAMPAIGN)}/summary.parquet"
    rows = pq.read_table(io.BytesIO(pod_minio().client().get_object(BUCKET, key).read())).to_pylist()
    assert {r["storage_class"]: r["n"] for r in rows if r["is_headline"]} == dict.fromkeys(CLASSES, 1)
    assert [f for f in _failures(scenario["F"]) if f["is_cell"]] == []
    assert NAMESPACE == "pvbench"
