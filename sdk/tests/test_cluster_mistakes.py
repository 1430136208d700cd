"""Template mistakes that every schema accepts, and the real node refuses.

Each test takes a copy of what helm installed (the WorkflowTemplate, or the chart's Role),
makes one plausible mistake, shows that kubeconform's strict schemas still accept it, and
runs the affected step pod on the node: the pod fails, for the reason the mistake implies.
The unmutated originals pass in test_cluster_steps.py (the controls).
"""

from __future__ import annotations

import copy
import json
import secrets

import pytest
import yaml

from argo_helpers import dag_tasks, kubeconform, task_inputs, templates_by_name, workflow_context
from cluster_helpers import (
    NAMESPACE,
    STORAGE_CLASSES,
    installed_release,
    installed_workflow_template,
    pod_minio,
    require_kube,
    step,
)
from pvbench.store.layout import CellKey

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

RUN = f"pvbench-benchmark-{secrets.token_hex(3)}"
PARAMS = {"campaign": "ci-mistakes", "storage-classes": json.dumps(STORAGE_CLASSES), "profile": "dbench",
          "tests": "randread-iops", "repetitions": "1", "ramp": "1s", "runtime": "2s", "size": "32M",
          "volume-size": "1Gi"}
CELL = {"storage_class": "pvbench-ext4", "profile": "dbench", "workload": "randread-iops", "rep": 1, "order": 1}


@pytest.fixture(scope="module")
def wt():
    return installed_workflow_template()


@pytest.fixture(scope="module")
def ctx(wt):
    return workflow_context(wt, PARAMS, RUN)


def _schema_accepts(doc: dict) -> None:
    doc = copy.deepcopy(doc)
    doc["metadata"] = {"name": doc["metadata"]["name"], "namespace": NAMESPACE}
    proc = kubeconform(stdin=yaml.safe_dump(doc))
    assert proc.returncode == 0, f"kubeconform already rejects this mistake:\n{proc.stdout}"


def _cell(wt, ctx, cell=CELL):
    item = {**cell, "key": CellKey(PARAMS["campaign"], RUN, "adhoc", cell["storage_class"], cell["profile"],
                                   cell["workload"], cell["rep"]).prefix()}
    return step(wt, "benchmark-cell", ctx, task_inputs(dag_tasks(wt)["benchmark"], ctx, item)), item


def _no_result(item) -> None:
    client = pod_minio().client()
    bucket = installed_release()["artifact_repository"]["s3"]["bucket"]
    found = [o.object_name for o in client.list_objects(bucket, prefix=item["key"] + "/", recursive=True)]
    assert not found, f"a result was stored despite the failure: {found}"


def test_wrong_mount_path_fails_the_cell(wt, ctx):
    """The PVC mounted at /mnt/data while fio-step is told --target /data: on the read-only
    root filesystem fio has nowhere to write."""
    bad = copy.deepcopy(wt)
    cell_tmpl = templates_by_name(bad)["benchmark-cell"]
    [mount] = [m for m in cell_tmpl["container"]["volumeMounts"] if m["name"] == "target"]
    mount["mountPath"] = "/mnt/data"
    _schema_accepts(bad)
    pod, item = _cell(bad, ctx)
    res = pod.run_pod()
    assert res.phase == "Failed", res.describe()
    assert res.exit_code("main") not in (0, None), res.describe()
    assert "/data does not exist" in res.logs["main"], res.describe()
    _no_result(item)


def test_missing_fsgroup_means_fio_cannot_write_the_volume(wt, ctx):
    """Without fsGroup the fresh volume stays root-owned 0755 and the non-root runner
    (uid 10001) cannot create fio's file on it."""
    bad = copy.deepcopy(wt)
    bad["spec"]["securityContext"].pop("fsGroup")
    _schema_accepts(bad)
    pod, item = _cell(bad, ctx)
    res = pod.run_pod()
    assert res.phase == "Failed", res.describe()
    assert res.exit_code("main") not in (0, None), res.describe()
    assert "ermission denied" in res.logs["main"], res.describe()
    _no_result(item)


def test_fsgroup_failure_happens_on_every_medium(wt, ctx):
    """The same on XFS and tmpfs: the behaviour is the volume's ownership, not one filesystem's."""
    bad = copy.deepcopy(wt)
    bad["spec"]["securityContext"].pop("fsGroup")
    for sc in ("pvbench-xfs", "pvbench-tmpfs"):
        pod, _ = _cell(bad, ctx, {**CELL, "storage_class": sc})
        res = pod.run_pod()
        assert res.phase == "Failed" and "ermission denied" in res.logs["main"], res.describe()


def test_command_that_exits_0_without_a_result_fails_the_step(wt, ctx):
    """fio-step writes its result to --out; a template whose --out is not the output
    artifact's path exits 0, but the executor finds nothing to save: the step fails."""
    bad = copy.deepcopy(wt)
    args = templates_by_name(bad)["benchmark-cell"]["container"]["args"]
    args[args.index("--out") + 1] = "/tmp/pvbench/results"
    _schema_accepts(bad)
    pod, item = _cell(bad, ctx)
    res = pod.run_pod()
    assert res.exit_code("main") == 0, res.describe()
    assert res.phase == "Failed", res.describe()
    assert "failed to save outputs" in res.logs["wait"], res.describe()
    assert res.task_result and res.task_result["phase"] == "Failed"
    _no_result(item)


def _narrow_role(drop: tuple[str, str]) -> str:
    """A copy of the chart's Role without one verb on one resource, bound to its own SA."""
    k = require_kube()
    installed_release()
    role = k.json("get", "role", "pvbench-workflow")
    name = f"pvbench-narrow-{drop[0][:8]}-{drop[1]}"
    rules = []
    for rule in role["rules"]:
        rule = {key: rule[key] for key in ("apiGroups", "resources", "verbs") if key in rule}
        if drop[0] in rule["resources"]:
            rule["verbs"] = [v for v in rule["verbs"] if v != drop[1]]
        if rule["verbs"]:
            rules.append(rule)
    assert rules != [{key: r[key] for key in ("apiGroups", "resources", "verbs")} for r in role["rules"]]
    meta = {"name": name, "namespace": NAMESPACE}
    k.apply({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta, "rules": rules},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta,
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
             "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}]})
    return name


def test_rbac_without_creating_task_results_fails_every_step(wt, ctx):
    """The executor reports outputs as WorkflowTaskResults: a Role without `create` on them
    fails the step even though the step's own command succeeded."""
    sa = _narrow_role(("workflowtaskresults", "create"))
    res = step(wt, "expand", ctx, service_account=sa).run_pod()
    assert res.exit_code("main") == 0, res.describe()
    assert res.phase == "Failed", res.describe()
    assert "403" in res.logs["wait"] and "workflowtaskresults" in res.logs["wait"], res.describe()


def test_rbac_without_listing_pvcs_fails_the_cleanup(wt, ctx):
    """The exit handler deletes the run's PVCs by label: kubectl lists them first."""
    sa = _narrow_role(("persistentvolumeclaims", "list"))
    res = step(wt, "cleanup", ctx, service_account=sa).run_pod()
    assert res.phase == "Failed", res.describe()
    assert "403" in res.logs["main"], res.describe()
