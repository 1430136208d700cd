"""One benchmark run end to end on the real engines, submitted as the Argo UI submits it
(when the session starts, so that it runs beside test_cluster_failures: pvbench.testing.cluster.main_run).

The run is a Workflow that references the chart's WorkflowTemplate (what the UI's Submit
creates; `pvbench submit` makes the same through argo-server's API, checked at the end). The
real workflow-controller runs it, argoexec in every pod moves artifacts to MinIO: validate ->
expand -> a cell per storage class x test x repetition on fresh PVCs -> the adaptive rounds
(a self-calling DAG, here up to its cap) -> exit handler: cleanup, aggregate, report.
"""

from __future__ import annotations

import io
import json
import subprocess

import pytest
from browser_helpers import browse
from cli_helpers import PVBENCH_SCRIPT

from pvbench.results import ResultDocument
from pvbench.results.schema import LIFECYCLE_WORKLOAD
from pvbench.store.layout import (
    FIO_LOGS_FILE,
    RESULT_FILE,
    analytics_prefix,
    cell_prefix,
    compact_prefix,
    report_prefix,
    results_prefix,
)
from pvbench.testing import REPO
from pvbench.testing.cluster import (
    BUCKET,
    MAIN_RUN,
    MAIN_RUN_CLASSES,
    MEDIUM,
    NAMESPACE,
    cell_nodes,
    describe,
    main_run,
    nodes,
    pod_minio,
    require_kube,
    retire,
    run_pvcs_and_pvs,
    wait_until,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

CLASSES, PARAMS = MAIN_RUN_CLASSES, MAIN_RUN  # started when the session starts (conftest)
PVBENCH = PVBENCH_SCRIPT


def argo_server_url() -> str:
    k = require_kube()
    [pod] = k.items("pod", "app=argo-server")
    return f"https://{pod['status']['podIP']}:2746"


@pytest.fixture(scope="module")
def run():
    r = main_run()
    return {"name": r.name, "wf": r.workflow, "pvcs": r.pvcs, "minio": pod_minio()}


def test_the_run_succeeds(run):
    assert run["wf"]["status"]["phase"] == "Succeeded", describe(run["wf"])
    print("\n" + describe(run["wf"]))


def test_every_step_ran_on_the_real_engine(run):
    ran = {}
    for n in nodes(run["wf"]):
        if n["type"] == "Pod":
            ran[n["templateName"]] = ran.get(n["templateName"], 0) + 1
    # 2 classes x 1 test x 2 reps, then round 1 adds a 3rd rep to each; round 2 finds the cap
    assert ran == {
        "validate": 1,
        "expand": 1,
        "benchmark-cell": 6,
        "adaptive-check": 2,
        "cleanup": 1,
        "aggregate": 1,
        "report": 1,
    }, ran
    # the recursion: round 1 (main's `adaptive`), round 2 (its next-round), round 2's next-round skipped
    rounds = sorted((n["displayName"], n["phase"]) for n in nodes(run["wf"]) if n.get("templateName") == "adaptive")
    assert rounds[0] == ("adaptive", "Succeeded") and rounds[2] == ("next-round", "Succeeded"), rounds
    assert rounds[1] in (("next-round", "Skipped"), ("next-round", "Omitted")), rounds


def test_results_land_under_the_layout_keys(run):
    minio, name = run["minio"], run["name"]
    keys = [k for k in minio.keys(BUCKET, results_prefix(PARAMS["campaign"], name) + "/") if k.endswith(RESULT_FILE)]
    expected = sorted(
        f"{cell_prefix(PARAMS['campaign'], name, 'adhoc', sc, 'filesystem-rwo', 'dbench', 'randread-iops', rep)}/"
        + RESULT_FILE
        for sc in CLASSES
        for rep in (1, 2, 3)
    )
    assert sorted(keys) == expected
    for key in keys:
        doc = ResultDocument.from_json(minio.client().get_object(BUCKET, key).read())
        assert doc.identity.run == name and doc.identity.labels["role"] == "candidate"
        assert doc.identity.labels["changed"] == "StorageClass/pvbench-xfs"
        assert doc.provenance.node == "localhost", "PVBENCH_NODE_NAME comes from spec.nodeName"
        assert doc.provenance.filesystem == MEDIUM[doc.identity.storage_class], doc.provenance
        [m] = [m for m in doc.metrics if m.iops]
        assert m.iops > 0 and m.bw_mib_s > 0 and m.lat_p99_us
        # the cell read its own pod, claim and PV (pvbench.kube.lifecycle), with the chart's rights
        lc = doc.lifecycle
        assert lc is not None and lc.notes == [], doc.provenance.notes
        assert lc.claim in run["pvcs"] and lc.volume == run["pvcs"][lc.claim]["spec"]["volumeName"]
        assert lc.pod_created_at <= lc.claim_created_at <= lc.volume_bound_at <= lc.pod_scheduled_at
        assert lc.pod_scheduled_at <= lc.pod_sandbox_at <= lc.container_started_at <= doc.provenance.started_at
        assert lc.volume_attach_s is None  # local PVs are not attached; cloud disks and CSI block are
        for span in ("volume_bind_s", "pod_schedule_s", "volume_mount_s", "pod_start_s"):
            assert 0 <= getattr(lc, span) < 600, lc
        assert lc.pod_start_s >= lc.pod_schedule_s
        # the cell second by second, from fio's interval logs written in the pod (#63), and the logs
        # themselves beside fio.json
        [sec] = doc.series.directions
        assert sec.direction == m.direction and len(sec.iops) >= 1 and all(v >= 0 for v in sec.iops), doc.series
        logs = key[: -len(RESULT_FILE)] + FIO_LOGS_FILE
        assert minio.client().get_object(BUCKET, logs).read()[:2] == b"\x1f\x8b", logs  # gzip


def test_the_report_step_reuses_the_bundles_the_image_compiled(run):
    """The report image compiled the site's bundles when it was built (`pvbench report prime` in
    ci/images/report/Dockerfile): the run's report step puts them in place and only prerenders its
    campaign's pages (pvbench.report.bundles), as its log, archived by Argo, says."""
    minio, name = run["minio"], run["name"]
    logs = [k for k in minio.keys(BUCKET, f"argo/{name}/") if "-report-" in k and k.endswith("main.log")]
    assert len(logs) == 1, logs
    text = minio.client().get_object(BUCKET, logs[0]).read().decode()
    assert "(bundles reused)" in " ".join(text.split()), text[-3000:]  # rich wraps the line at 80 columns


def test_tables_and_report_land_beside_them(run):
    import pyarrow.parquet as pq

    minio, name = run["minio"], run["name"]
    # one set of tables and one report for the campaign (every run pooled, each selectable)
    tables = analytics_prefix(PARAMS["campaign"])
    have = minio.keys(BUCKET, tables + "/")
    assert f"{tables}/summary.parquet" in have and f"{tables}/report_failures.parquet" in have
    assert f"{report_prefix(PARAMS['campaign'])}/index.html" in have
    assert f"{tables}/report_run_summary.parquet" in have
    # the run's results compacted once, beside the campaign's other runs' compacts
    compact = compact_prefix(PARAMS["campaign"], name)
    assert {f"{compact}/{f}" for f in ("result_rows.parquet", "documents.parquet", "failures.parquet")} <= set(
        minio.keys(BUCKET, compact + "/")
    )
    docs = pq.read_table(io.BytesIO(minio.client().get_object(BUCKET, f"{compact}/documents.parquet").read()))
    assert docs.num_rows == 6 and set(docs.column("problem").to_pylist()) == {None}
    summary = pq.read_table(io.BytesIO(minio.client().get_object(BUCKET, f"{tables}/summary.parquet").read()))
    head = {r["storage_class"]: r for r in summary.to_pylist() if r["is_headline"] and r["workload"] == "randread-iops"}
    # every cell's volume lifecycle, once per cell, as a workload of its own with its own headline
    started = {
        r["storage_class"]: r
        for r in summary.to_pylist()
        if r["workload"] == LIFECYCLE_WORKLOAD and r["metric"] == "pod_start_s"
    }
    assert {sc: (r["n"], r["unit"], r["is_headline"]) for sc, r in started.items()} == {
        sc: (3, "s", True) for sc in CLASSES
    }, started
    assert head["pvbench-tmpfs"]["n"] == head["pvbench-ext4"]["n"] == 3
    assert head["pvbench-tmpfs"]["mean"] > head["pvbench-ext4"]["mean"], head
    failures = pq.read_table(io.BytesIO(minio.client().get_object(BUCKET, f"{tables}/report_failures.parquet").read()))
    assert [f for f in failures.to_pylist() if f["run"] == name] == []


def test_the_report_opens_in_the_argo_ui_artifact_view(run, tmp_path):
    """The run's report output, opened where the Argo UI's artifact view serves it
    (/artifact-files/<namespace>/workflows/<run>/<node>/outputs/report/index.html), with no pvbench
    server: the site works under that prefix, loads its scripts and data there and draws the
    overview's charts. (The CI argo-server lets artifact files run scripts, as docs/kubernetes.md
    recommends: ARGO_ARTIFACT_CONTENT_SECURITY_POLICY in ci/cluster/lib.sh.)"""
    [node] = [n for n in nodes(run["wf"]) if n.get("templateName") == "report" and n.get("type") == "Pod"]
    prefix = f"/artifact-files/{NAMESPACE}/workflows/{run['name']}/{node['id']}/outputs/report/"
    result = browse(
        REPO / "reports", argo_server_url(), tmp_path, [{"name": "index", "path": prefix + "index.html"}], insecure=True
    )
    [index] = result["pages"]
    assert index["status"] == 200 and index["title"] == "Overview", index
    assert len(index["charts"]) >= 2 and all(c.get("painted", 0) > 0.01 for c in index["charts"]), index["charts"]
    assert all(url.startswith(argo_server_url() + prefix) for url in result["requests"]), result["requests"]
    assert result["bad"] == [], result["bad"]
    # a service worker cannot be registered over argo-server's self-signed certificate here (with
    # a trusted one it is); the site does not need it
    errors = [e for e in index["consoleErrors"] if "SSL certificate" not in e]
    assert errors == [], index["consoleErrors"]


def test_each_cell_had_a_fresh_volume_of_its_class_and_the_runs_size(run):
    pvcs = run["pvcs"]
    assert len(pvcs) == 6, sorted(pvcs)
    classes = sorted(p["spec"]["storageClassName"] for p in pvcs.values())
    assert classes == sorted(CLASSES * 3)
    assert {p["spec"]["resources"]["requests"]["storage"] for p in pvcs.values()} == {"2Gi"}


def test_no_volume_of_the_run_remains(run):
    """Cell pods are deleted as they finish (podGC), and their ephemeral PVCs with them."""
    wait_until("the run's PVCs and PVs to be gone", lambda: run_pvcs_and_pvs(run["name"]) == ([], []), 60)


def test_node_names_are_short(run):
    """A fan-out node is named after its item: only what tells cells apart (its volume shape too)."""
    names = [n["displayName"] for n in cell_nodes(run["wf"])]
    assert names and max(len(x) for x in names) <= 150, names
    assert all("storage_class:" in x and "workload:" in x for x in names), names


def test_the_run_is_labelled_with_its_role_and_occasion(run):
    labels = run["wf"]["metadata"]["labels"]
    assert labels["pvbench.io/role"] == "candidate" and labels["pvbench.io/occasion"] == "adhoc"


def test_pvbench_submit_creates_the_run_through_argo_server():
    """`pvbench submit` -> argo-server's submit API (what the UI's Submit button calls): a Workflow
    from the WorkflowTemplate with the given parameters and labels. Deleted at once: the run
    above already measured."""
    k = require_kube()
    proc = subprocess.run(
        [
            PVBENCH,
            "submit",
            "--host",
            argo_server_url(),
            "--insecure",
            "--namespace",
            NAMESPACE,
            "-p",
            'storage-classes=["pvbench-tmpfs"]',
            "-p",
            "profile=vshn",
            "-p",
            "repetitions=1",
            "--label",
            "pvbench.io/ci=submit",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    name = proc.stdout.strip()
    try:
        wf = k.json("get", "workflow", name)
        assert wf["spec"]["workflowTemplateRef"] == {"name": "pvbench-benchmark"}
        params = {p["name"]: p["value"] for p in wf["spec"]["arguments"]["parameters"]}
        assert params["profile"] == "vshn" and json.loads(params["storage-classes"]) == ["pvbench-tmpfs"]
        assert wf["metadata"]["labels"]["pvbench.io/ci"] == "submit"
        assert wf["metadata"]["labels"]["workflows.argoproj.io/workflow-template"] == "pvbench-benchmark"
    finally:
        retire([name])  # a run of the template on the node the failure scenario's runs share
    bad = subprocess.run(
        [PVBENCH, "submit", "--host", argo_server_url(), "--insecure", "-p", "repetitions=4"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "not one of" in bad.stderr  # checked before anything is sent
