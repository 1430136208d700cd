"""The pvbench commands the WorkflowTemplate's steps run, as the template calls them: what they
print for Argo (fan-out items, the cell deadline), what they refuse before fio starts, and how
the exit handler's aggregate turns Argo's failed nodes into the report's list of failed cells.
The templates themselves run on the real engines in the cluster stage (test_cluster_*.py).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from cli_helpers import pvbench
from test_step import step

from pvbench.argo.failures import parse_failures
from pvbench.cells.cell import FAN_OUT_ITEM_KEYS
from pvbench.profiles import load_profile, resolve_timing

MATRIX = ["--campaign", "CI", "--run", "wf-1", "--occasion", "adhoc", "--storage-classes", '["fast","slow"]']


def run(*args: str) -> subprocess.CompletedProcess:
    return pvbench(*args, timeout=120)


def test_expand_items_hold_only_what_tells_cells_apart():
    proc = run("expand", *MATRIX, "--profiles", "dbench", "--tests", "randread-iops,seqread", "--repetitions", "2")
    assert proc.returncode == 0, proc.stderr
    items = json.loads(proc.stdout)
    assert len(items) == 2 * 2 * 2 and all(tuple(i) == FAN_OUT_ITEM_KEYS for i in items)
    assert [i["order"] for i in items] == list(range(8))
    # Argo names each node after its item: what tells cells apart, the volume shape included
    assert max(len(json.dumps(i)) for i in items) < 150


def test_profile_means_the_profiles_own_timing():
    vshn = load_profile("vshn")
    assert resolve_timing(vshn, "profile", "profile", "profile") == vshn.timing
    assert resolve_timing(vshn, "2s", "profile", None).ramp_s == 2.0


def test_validate_writes_the_cell_deadline_for_argo(tmp_path):
    out = tmp_path / "out"
    proc = run(
        "validate",
        *MATRIX,
        "--profiles",
        "dbench",
        "--repetitions",
        "3",
        "--ramp",
        "profile",
        "--runtime",
        "profile",
        "--size",
        "profile",
        "--volume-size",
        "10Gi",
        "--volume-timeout",
        "5m",
        "--outputs",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    seconds = int((out / "cell-timeout").read_text().removesuffix("s"))
    # dbench: 2 s ramp + 15 s runtime: 300 s volume wait + twice fio's 17 s + the largest cell's files
    # (size x jobs) laid out at 10 MiB/s at least + start-up
    dbench = load_profile("dbench")
    layout = max(t.numjobs for t in dbench.tests) * dbench.timing.size_bytes / (10 * 2**20)
    assert 300 + 34 + layout < seconds <= 300 + 34 + layout + 61, (seconds, layout)


def test_validate_checks_only_the_tests_the_run_measures():
    """A 1 GiB file per job does not fit 32 jobs in 10Gi: only the tests with 32 jobs are refused."""
    small = run(
        "validate",
        *MATRIX,
        "--profiles",
        "sweep",
        "--tests",
        "randread-4k-qd1",
        "--size",
        "1G",
        "--volume-size",
        "10Gi",
    )
    assert small.returncode == 0, small.stderr
    big = run(
        "validate",
        *MATRIX,
        "--profiles",
        "sweep",
        "--tests",
        "randread-4k-qd1x32",
        "--size",
        "1G",
        "--volume-size",
        "10Gi",
    )
    assert big.returncode == 2 and "does not fit" in big.stderr and "randread-4k-qd1x32" in big.stderr


def test_validate_refuses_a_guard_rule_the_catalog_lacks_from_the_templates_environment():
    """The template passes its keep-flagged parameter to validate, adaptive-check and aggregate as
    $PVBENCH_KEEP_FLAGGED: a typo fails the run at validate, not in its exit handler."""
    args = ("validate", *MATRIX, "--profiles", "dbench", "--tests", "randread-iops")
    ok = pvbench(*args, timeout=120, env={**os.environ, "PVBENCH_KEEP_FLAGGED": "client_cpu, page_cache"})
    assert ok.returncode == 0, ok.stderr
    bad = pvbench(*args, timeout=120, env={**os.environ, "PVBENCH_KEEP_FLAGGED": "client-cpu"})
    assert bad.returncode == 2 and "keep-flagged" in bad.stderr and "client_cpu" in bad.stderr, bad.stderr


def test_fio_step_refuses_an_upload_key_the_layout_would_not_give(tmp_path):
    proc = step(
        tmp_path,
        "--key",
        "results/campaign=c1/run=r1/occasion=night/storage_class=other/profile=dbench/workload=randread-lat/rep=2",
    )
    assert proc.returncode == 2 and "the template and pvbench disagree" in " ".join(proc.stderr.split())
    assert not list((tmp_path / "target").glob("pvbench-fio.*")), "fio must not have run"
    ok = step(
        tmp_path,
        "--key",
        "results/campaign=c1/run=r1/occasion=night/storage_class=fast-ssd/volume=filesystem-rwo/profile=dbench/workload=randread-lat/rep=2",
        "--out",
        str(tmp_path / "out"),
    )
    assert ok.returncode == 0, ok.stderr


# What Argo passes as {{workflow.failures}}: the JSON list, quoted as a JSON string.
ARGO_FAILURES = json.dumps(
    json.dumps(
        [
            {
                "displayName": "benchmark(1:access_mode:ReadWriteOnce,order:1,rep:1,storage_class:slow,"
                "volume_mode:Filesystem,workload:randread-iops)",
                "message": "timeout",
                "templateName": "benchmark-cell",
                "phase": "Failed",
                "podName": "wf-1-benchmark-cell-1",
                "finishedAt": "2026-11-22T10:00:00Z",
            },
            {
                "displayName": 'benchmark-block(2:{"access_mode":"ReadWriteOnce","order":2,"rep":2,'
                '"storage_class":"fast","volume_mode":"Block","workload":"randread-iops"})',
                "message": "pod deleted",
                "templateName": "benchmark-block-cell",
                "phase": "Error",
                "podName": "wf-1-benchmark-cell-2",
                "finishedAt": "2026-11-22T10:01:00Z",
            },
            {
                "displayName": "wf-1",
                "message": "child 'wf-1-123' failed",
                "templateName": "main",
                "phase": "Failed",
                "podName": "wf-1",
                "finishedAt": "2026-11-22T10:02:00Z",
            },
            {
                "displayName": "benchmark",
                "message": "",
                "templateName": "benchmark-cell",
                "phase": "Failed",
                "podName": "wf-1-benchmark",
                "finishedAt": "2026-11-22T10:02:00Z",
            },
        ]
    )
)


def test_argo_failures_become_cells_with_their_messages():
    rows = parse_failures(ARGO_FAILURES)
    assert [(r["storage_class"], r["workload"], r["rep"], r["phase"], r["message"]) for r in rows] == [
        ("slow", "randread-iops", 1, "Failed", "timeout"),
        ("fast (Block)", "randread-iops", 2, "Error", "pod deleted"),  # named as the report's rows name it
    ]
    assert parse_failures('"null"') == parse_failures("") == []


def test_a_failed_multi_client_cell_is_named_by_its_dag_and_its_client_says_why():
    failures = [
        {
            "displayName": "benchmark-clients(0:access_mode:ReadWriteOnce,clients:2,order:0,rep:1,storage_class:fast,"
            "volume_mode:Filesystem,workload:randread-iops-x2)",
            "message": "child 'wf-1-42' failed",
            "templateName": "client-cell",
            "phase": "Failed",
        },
        {
            "displayName": "client(1:2)",
            "message": "Error (exit code 1): client 2 of 2: fio failed",
            "templateName": "fio-client",
            "phase": "Failed",
        },
    ]
    cell, client = parse_failures(json.dumps(failures))
    assert (cell["storage_class"], cell["workload"], cell["rep"]) == ("fast", "randread-iops-x2", 1)
    assert client["storage_class"] is None and "client 2 of 2" in client["message"]


def test_aggregate_in_the_exit_handler_names_the_failed_cells(tmp_path):
    store, out = tmp_path / "store", tmp_path / "tables"
    cell = step(
        tmp_path,
        "--campaign",
        "CI",
        "--run",
        "wf-1",
        "--occasion",
        "adhoc",
        "--storage-class",
        "fast",
        "--store",
        str(store),
    )
    assert cell.returncode == 0, cell.stderr
    proc = run(
        "aggregate",
        "--store",
        str(store),
        "--campaign",
        "CI",
        "--run",
        "wf-1",
        "--out",
        str(out),
        "--argo-failures",
        ARGO_FAILURES,
        "--argo-status",
        "Failed",
    )
    assert proc.returncode == 0, proc.stderr
    assert "failed slow · randread-iops rep 1: Failed: timeout" in " ".join(proc.stderr.split())
    rows = pq.read_table(out / "report_failures.parquet").to_pylist()
    assert [(r["storage_class"], r["is_cell"]) for r in rows] == [("fast (Block)", True), ("slow", True)]

    # Aggregated again by hand (no --argo-failures: nothing is said about failures), the run's
    # compact is current and is kept as it is, with the failures the exit handler recorded
    compact = store / "compact" / "campaign=ci" / "run=wf-1"  # keys are slugs
    made = {f.name: f.stat().st_mtime_ns for f in compact.iterdir()}
    again = run("aggregate", "--store", str(store), "--campaign", "CI", "--run", "wf-1", "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert {f.name: f.stat().st_mtime_ns for f in compact.iterdir()} == made
    rows = pq.read_table(out / "report_failures.parquet").to_pylist()
    assert [(r["storage_class"], r["is_cell"]) for r in rows] == [("fast (Block)", True), ("slow", True)]

    # By hand, a --run that names no run of the campaign (a typo) is an error naming the runs
    # there, and the tables are left as they were: it used to aggregate the campaign without
    # it and exit 0, as if the run had been added
    tables = {f.name: f.stat().st_mtime_ns for f in out.iterdir()}
    typo = run("aggregate", "--store", str(store), "--campaign", "CI", "--run", "wf-l", "--out", str(out))
    said = " ".join(typo.stderr.split())
    assert typo.returncode == 2 and "run 'wf-l' has no results" in said and "1 compacted run(s): wf-1" in said
    assert "Traceback" not in typo.stderr
    assert {f.name: f.stat().st_mtime_ns for f in out.iterdir()} == tables
    # the right run in the wrong campaign: the error says which campaign has it
    wrong = run("aggregate", "--store", str(store), "--campaign", "other", "--run", "wf-1", "--out", str(out))
    said = " ".join(wrong.stderr.split())
    assert wrong.returncode == 2 and "a run 'wf-1' is in campaign(s) 'ci'" in said, wrong.stderr
    assert {f.name: f.stat().st_mtime_ns for f in out.iterdir()} == tables


def test_aggregate_with_nothing_stored_says_what_failed(tmp_path):
    proc = run(
        "aggregate",
        "--store",
        str(tmp_path / "empty"),
        "--campaign",
        "CI",
        "--run",
        "wf-1",
        "--out",
        str(tmp_path / "t"),
        "--argo-failures",
        ARGO_FAILURES,
    )
    assert proc.returncode == 1 and "no results" in proc.stderr and "timeout" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("text", ["[1, 2]", "{not json", '"{\\"a\\": 1}"'])
def test_a_garbled_failures_list_is_a_clear_error(text, tmp_path):
    proc = run("aggregate", "--store", str(tmp_path), "--campaign", "CI", "--argo-failures", text)
    assert proc.returncode == 2 and "--argo-failures" in proc.stderr and "Traceback" not in proc.stderr


def test_ci_check_next_items_are_fan_out_items(tmp_path):
    store = tmp_path / "store"
    for rep in (1, 2):
        proc = step(
            tmp_path,
            "--campaign",
            "CI",
            "--run",
            "wf-1",
            "--occasion",
            "adhoc",
            "--rep",
            str(rep),
            "--store",
            str(store),
        )
        assert proc.returncode == 0, proc.stderr
    proc = run(
        "stats",
        "ci-check",
        "--store",
        str(store),
        "--campaign",
        "CI",
        "--run",
        "wf-1",
        "--target",
        "0.001",
        "--exit-zero",
        "--outputs",
        str(tmp_path / "check"),
        "--seed",
        "1",
    )
    assert proc.returncode == 0, proc.stderr
    items = json.loads((tmp_path / "check" / "next.json").read_text())
    shape = {"volume_mode": "Filesystem", "access_mode": "ReadWriteOnce"}
    assert items == [
        {"storage_class": "fast-ssd", **shape, "workload": "randread-lat", "rep": 3, "order": items[0]["order"]}
    ]
    assert (tmp_path / "check" / "more").read_text() == "true"
    assert Path(tmp_path / "check").is_dir()


def test_the_guard_fails_only_unscheduled_cell_pods_past_their_volume_timeout_or_deadline():
    from datetime import datetime, timedelta, timezone

    from pvbench.argo import conventions as c
    from pvbench.argo.guard import limit, overdue
    from pvbench.kube.api import claim_names

    now = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)
    made = (now - timedelta(seconds=100)).isoformat().replace("+00:00", "Z")
    pod = {
        "metadata": {"name": "wf-benchmark-cell-1", "creationTimestamp": made},
        "spec": {
            "activeDeadlineSeconds": 95,
            "volumes": [{"name": "tmp", "emptyDir": {}}, {"name": "target", "ephemeral": {}}],
        },
        "status": {"phase": "Pending"},
    }
    assert overdue(pod, now) == pytest.approx(5)
    assert overdue({**pod, "spec": {**pod["spec"], "activeDeadlineSeconds": 120}}, now) is None  # not yet
    assert overdue({**pod, "spec": {**pod["spec"], "nodeName": "n1"}}, now) is None  # the kubelet's
    assert overdue({**pod, "status": {"phase": "Running"}}, now) is None
    assert overdue({**pod, "spec": {"volumes": []}}, now) is None  # no deadline: not a cell
    # the run's volume-timeout, which every cell pod carries, comes first: a volume that never
    # binds fails its cell then, not at the whole deadline
    waits = {**pod, "metadata": {**pod["metadata"], "annotations": {c.ANNOTATION_VOLUME_WAIT: "20"}}}
    assert overdue(waits, now) == pytest.approx(80)
    assert limit(waits) == (20, "the run's volume-timeout of 20 s")
    assert overdue({**waits, "spec": {**pod["spec"], "activeDeadlineSeconds": 200}}, now) == pytest.approx(80)
    assert overdue({**waits, "spec": {**pod["spec"], "nodeName": "n1"}}, now) is None  # scheduled: the kubelet's
    not_a_number = {**pod, "metadata": {**pod["metadata"], "annotations": {c.ANNOTATION_VOLUME_WAIT: "{{x}}"}}}
    assert overdue(not_a_number, now) == pytest.approx(5)  # the deadline, as without the annotation
    assert limit(pod) == (95, "its deadline of 95 s (volume-timeout plus its fio time)")
    assert claim_names(pod) == ["wf-benchmark-cell-1-target"]  # Kubernetes' name for an ephemeral PVC
