"""Every step pod of pvbench-benchmark, run for real on the CI node (ci/cluster/up.sh).

The WorkflowTemplate is the one `helm install` put into the API server (and it must be
templates/benchmark.yaml, field for field, after the CRD's pruning). Each container
template becomes the pod Argo's controller would create for it (cluster_helpers.StepPod):
its container, command and args with this run's parameters (and the fan-out's cell)
substituted, security context, volumes (the cell's PVC of a real storage class, as a
generic ephemeral volume), env, node selector, affinity and labels, under the chart's
ServiceAccount. One run goes through the DAG: validate -> expand -> one benchmark-cell
per cell over ext4, XFS and tmpfs -> adaptive-check (the adaptive loop's check: results
fetched from MinIO, next cells as output parameters) -> aggregate (results fetched from
MinIO, Parquet back to it) -> report (the Evidence site) -> cleanup (the exit handler).
"""

from __future__ import annotations

import io
import json
import os
import secrets

import pytest

from argo_helpers import dag_tasks, step_context, task_inputs, templates_by_name, workflow_context
from cluster_helpers import (
    MEDIUM,
    NAMESPACE,
    REPORT_IMAGE,
    STORAGE_CLASSES,
    installed_release,
    installed_workflow_template,
    pod_minio,
    rendered_templates,
    require_kube,
    required,
    step,
)
from pvbench.results import ResultDocument
from pvbench.store.layout import RESULT_FILE, CellKey, analytics_prefix, results_prefix

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

RUN = f"pvbench-benchmark-{secrets.token_hex(3)}"  # what generateName gives a submitted run
TESTS = ["randread-iops", "randwrite-iops"]
PARAMS = {
    "campaign": "CI-Node",  # upper case on purpose: keys hold its slug
    "occasion": "adhoc",
    "storage-classes": json.dumps(STORAGE_CLASSES),
    "profile": "dbench",
    "tests": ",".join(TESTS),
    "repetitions": "1",
    "seed": "11",
    # short fio timing keeps a cell near 10 s; the UI's enums are for real runs
    "ramp": "1s",
    "runtime": "4s",
    "size": "128M",
    "volume-size": "1Gi",
    "role": "candidate",
    "trigger": "ci",
    "changed": "StorageClass/pvbench-xfs",
}


@pytest.fixture(scope="module")
def wt():
    return installed_workflow_template()


@pytest.fixture(scope="module")
def ctx(wt):
    return workflow_context(wt, PARAMS, RUN)


def test_installed_template_is_the_rendered_one(wt):
    """What the API server kept (the CRD prunes unknown fields) is templates/benchmark.yaml."""
    [rendered] = [d for d in rendered_templates() if d["kind"] == "WorkflowTemplate"]
    assert wt["spec"]["templates"] == rendered["spec"]["templates"]
    assert wt["spec"]["securityContext"] == rendered["spec"]["securityContext"]
    assert wt["spec"]["serviceAccountName"] == "pvbench-workflow"


def test_validate_step_accepts_the_run_and_rejects_bad_input(wt, ctx):
    ok = step(wt, "validate", ctx).run_pod()
    assert ok.phase == "Succeeded", ok.describe()
    assert "6 cells" in ok.logs["main"], ok.describe()
    bad = step(wt, "validate", {**ctx, "workflow.parameters.storage-classes": '["Fast_SSD"]'}).run_pod()
    assert bad.phase == "Failed" and bad.exit_code("main") == 2, bad.describe()
    assert "not a valid Kubernetes name" in bad.logs["main"]


@pytest.fixture(scope="module")
def dag(wt, ctx):
    """expand -> benchmark-cell per cell -> aggregate, each pod checked as it goes."""
    tasks = dag_tasks(wt)
    client = pod_minio().client()
    bucket = installed_release()["artifact_repository"]["s3"]["bucket"]

    # expand: its stdout is outputs.result (reported by the wait container), the fan-out's withParam
    expand = step(wt, "expand", ctx).run_pod()
    assert expand.phase == "Succeeded", expand.describe()
    assert tasks["benchmark"]["withParam"] == "{{tasks.expand.outputs.result}}"
    cells = json.loads(expand.outputs["result"])
    assert len(cells) == len(STORAGE_CLASSES) * len(TESTS)

    results = []
    for cell in cells:
        pod = step(wt, "benchmark-cell", ctx, task_inputs(tasks["benchmark"], ctx, cell))
        res = pod.run_pod()
        assert res.phase == "Succeeded", res.describe()
        [volume] = [v for v in res.pod["spec"]["volumes"] if v["name"] == "target"]
        assert volume["ephemeral"]["volumeClaimTemplate"]["spec"]["storageClassName"] == cell["storage_class"]
        key = CellKey(PARAMS["campaign"], RUN, PARAMS["occasion"], cell["storage_class"], "dbench",
                      cell["workload"], cell["rep"])
        saved = res.outputs["artifacts"][0]["s3"]["key"]
        assert saved == cell["key"] == key.prefix(), (saved, cell["key"], key.prefix())
        doc = ResultDocument.from_json(client.get_object(bucket, key.result_key()).read())
        results.append((cell, doc, res))

    # aggregate: the run's results come from MinIO (input artifact), Parquet goes back (output)
    agg = step(wt, "aggregate", ctx, task_inputs(tasks["aggregate"], ctx)).run_pod()
    assert agg.phase == "Succeeded", agg.describe()
    [tables] = agg.outputs["artifacts"]
    assert tables["s3"]["key"] == analytics_prefix(PARAMS["campaign"], RUN)
    assert results_prefix(PARAMS["campaign"], RUN) in agg.logs["init"]
    return {"cells": cells, "results": results, "client": client, "bucket": bucket, "tables_key": tables["s3"]["key"]}


def test_each_cell_wrote_a_valid_result_on_its_medium(dag):
    for cell, doc, res in dag["results"]:
        assert doc.identity.storage_class == cell["storage_class"] and doc.identity.run == RUN
        assert doc.identity.workload == cell["workload"]
        assert doc.identity.labels["role"] == "candidate" and doc.identity.labels["trigger"] == "ci"
        assert doc.provenance.node == "localhost", "PVBENCH_NODE_NAME comes from spec.nodeName"
        assert doc.provenance.filesystem == MEDIUM[cell["storage_class"]], (cell, doc.provenance)
        [m] = [m for m in doc.metrics if m.iops]
        assert m.iops > 0 and m.bw_mib_s > 0 and m.lat_p99_us


def _headline(dag) -> dict[tuple[str, str], float]:
    import pyarrow.parquet as pq

    key = f"{dag['tables_key']}/summary.parquet"
    table = pq.read_table(io.BytesIO(dag["client"].get_object(dag["bucket"], key).read())).to_pylist()
    return {(r["storage_class"], r["workload"]): r["mean"] for r in table if r["is_headline"]}


def test_aggregated_numbers_differ_between_media_as_they_should(dag):
    """The Parquet the aggregate step wrote (read back from MinIO): tmpfs (RAM) is faster
    than either loop-device filesystem, for random reads and writes alike."""
    head = _headline(dag)
    for test in TESTS:
        tmpfs, ext4, xfs = (head[(sc, test)] for sc in ("pvbench-tmpfs", "pvbench-ext4", "pvbench-xfs"))
        assert tmpfs > ext4 and tmpfs > xfs, f"{test}: tmpfs {tmpfs:.0f}, ext4 {ext4:.0f}, xfs {xfs:.0f} IOPS"
    print("\nheadline IOPS by medium:", {f"{sc}/{t}": round(v) for (sc, t), v in sorted(head.items())})


def test_adaptive_check_step_names_the_next_cells(wt, ctx, dag):
    """The adaptive loop's check over the run's results (fetched by the init container): with one
    repetition each, every cell needs another; the answer comes back as output parameters."""
    require_kube()
    on = {**ctx, "workflow.parameters.adaptive-target": "0.05"}
    call = dag_tasks(wt)["adaptive"]
    level = step_context(templates_by_name(wt)[call["template"]], on, task_inputs(call, on))
    res = step(wt, "adaptive-check", on, task_inputs(dag_tasks(wt, "adaptive")["check"], level)).run_pod()
    assert res.phase == "Succeeded", res.describe()
    assert results_prefix(PARAMS["campaign"], RUN) in res.logs["init"]
    params = {p["name"]: p["value"] for p in res.outputs["parameters"]}
    assert params["more"] == "true", res.describe()
    nxt = json.loads(params["next"])
    assert sorted((i["storage_class"], i["workload"]) for i in nxt) == \
        sorted((c["storage_class"], c["workload"]) for c in dag["cells"])
    assert {i["rep"] for i in nxt} == {2}
    assert sorted(i["order"] for i in nxt) == list(range(len(dag["cells"]), 2 * len(dag["cells"])))
    for i in nxt:
        assert i["key"] == CellKey(PARAMS["campaign"], RUN, PARAMS["occasion"], i["storage_class"], "dbench",
                                   i["workload"], 2).prefix()


def test_report_step_builds_the_site(wt, ctx, dag):
    k = require_kube()
    have = k.run("get", "--raw", "/api/v1/nodes/localhost", namespace=None).stdout
    if REPORT_IMAGE.split(":")[0] not in have:
        msg = f"{REPORT_IMAGE} is not on the node (up.sh with PVBENCH_CLUSTER_REPORT_IMAGE=0?)"
        if required() and os.environ.get("PVBENCH_CLUSTER_REPORT_IMAGE", "1") != "0":
            pytest.fail(msg)
        pytest.skip(msg)
    tasks = dag_tasks(wt)
    report = step(wt, "report", ctx, task_inputs(tasks["report"], ctx),
                  input_keys={"analytics": dag["tables_key"]})  # from: tasks.aggregate.outputs.artifacts.analytics
    res = report.run_pod(timeout=900)
    assert res.phase == "Succeeded", res.describe()
    [site] = res.outputs["artifacts"]
    listed = {o.object_name for o in dag["client"].list_objects(dag["bucket"], prefix=site["s3"]["key"] + "/",
                                                                 recursive=True)}
    assert f"{site['s3']['key']}/index.html" in listed, sorted(listed)[:20]


def test_cleanup_exit_handler_deletes_the_runs_pvcs(wt, ctx):
    """The exit handler (a resource template) runs under the workflow's ServiceAccount."""
    k = require_kube()
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": f"{RUN}-leftover", "namespace": NAMESPACE, "labels": {"pvbench.io/workflow": RUN}},
           "spec": {"storageClassName": "pvbench-ext4", "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}}}}
    k.create(pvc)
    res = step(wt, "cleanup", ctx).run_pod()
    assert res.phase == "Succeeded", res.describe()
    assert f'persistentvolumeclaims "{RUN}-leftover" deleted' in res.logs["main"]
    gone = k.get("pvc", f"{RUN}-leftover")
    assert gone is None or gone["metadata"].get("deletionTimestamp"), gone


def test_every_container_template_was_run(wt):
    """This module covers every container/resource template of the WorkflowTemplate."""
    runnable = {n for n, t in templates_by_name(wt).items() if "container" in t or "script" in t or "resource" in t}
    assert runnable == {"validate", "expand", "benchmark-cell", "adaptive-check", "aggregate", "report", "cleanup"}, \
        runnable
