"""The promise, end to end on the real engines: a storage change that really makes a class slower
is caught, and one that changes nothing is not called worse.

pvbench-qos is ext4 on a loop device of its own; its driver is a DaemonSet the chart watches
(events.csi.workloads qos-csi, with its own campaign and write tests: pvbench.testing.cluster.QOS_RUNS).
Driver 2.0 enforces a write QoS on the class's device in the kernel (blkio throttling,
pvbench.testing.qos_driver); fio's options never change, the storage does.

    baseline  4 runs at driver 1.0, one occasion each (started with the session: conftest)
    upgrade   1.0 -> 2.0, applied as an operator would; the Sensor starts the candidate run
              -> its report's banner: pvbench-qos is worse, in the write metrics
              -> `pvbench compare role=baseline role=candidate` exits 1 (the upgrade gate)
    retag     2.0 -> 2.0.1, the same driver; the Sensor starts another candidate run
              -> against the run before it: no metric worse, `pvbench compare` exits 0
    later     2 nightly runs (trigger cron) of another campaign: the class's history, read
              across campaigns, is 4 occasions at each level
              -> the nightly campaign's history has the change point at the upgrade's run
                 (the other campaign's), worse, attributed to the driver's image change
                 1.0 -> 2.0 (not to the retag after it); `pvbench history` prints it
"""

from __future__ import annotations

import io
import json
import re
import subprocess

import pytest
from browser_helpers import browse
from cli_helpers import PVBENCH_SCRIPT

from pvbench.argo.conventions import NODE_MUTEX_PREFIX
from pvbench.store.layout import analytics_prefix, report_prefix
from pvbench.testing import REPO
from pvbench.testing.cluster import (
    BUCKET,
    CSI_NAMESPACE,
    QOS_CLASS,
    QOS_DAEMONSET,
    QOS_RUNS,
    argo,
    cell_nodes,
    describe,
    hold_mutex,
    pod_minio,
    require_kube,
    retire,
    wait_until,
    wait_workflow,
)
from pvbench.testing.minio import free_port
from pvbench.testing.qos_driver import cgroups, device_of, limit
from pvbench.testing.upgrade import (
    BASELINE_OCCASIONS,
    MEDIUM,
    NIGHTLY_CAMPAIGN,
    baseline_runs,
    image,
    later_runs,
    roll_out,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

CAMPAIGN = QOS_RUNS["campaign"]
TRIGGER = "csi-qos-csi"  # the Sensor's trigger for events.csi.workloads qos-csi
STORE = f"s3://{BUCKET}"


def candidate_runs() -> list[str]:
    return [wf["metadata"]["name"] for wf in require_kube().items("workflow", f"pvbench.io/trigger={TRIGGER}")]


def change_driver(version: str) -> dict:
    """Roll the driver out at ``version``; the candidate run the Sensor starts for it, once ended."""
    before = set(candidate_runs())
    # The Sensor starts the run as the rollout starts. Which comes first on a busy node, the new
    # driver's pod or the run's first cell, is a race: the scenario holds the runs' node mutex
    # until the driver is in place, as a pipeline that waits for `kubectl rollout status` would
    # (docs/kubernetes.md), so the candidate measures the new driver, never the old one.
    holder = hold_mutex(NODE_MUTEX_PREFIX + QOS_RUNS["node-value"])
    try:
        driver = roll_out(version)
        # generous: on a loaded node the change reaches the Sensor through the EventSource's watch
        # and the EventBus; once, at the end of a full CI stage, not within 60 s
        [name] = wait_until(f"a candidate run for driver {version}", lambda: set(candidate_runs()) - before, 240)
    finally:
        argo("resume", holder)
    wf = wait_workflow(name, timeout=1500)
    retire([holder])
    assert wf["status"]["phase"] == "Succeeded", describe(wf)
    params = {p["name"]: p.get("value") for p in wf["spec"]["arguments"]["parameters"]}
    assert params["new-image"] == image(version) and json.loads(params["storage-classes"]) == [QOS_CLASS]
    # the new driver was in place before the first cell measured
    driver_started = driver["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
    first_cell = min(n["startedAt"] for n in cell_nodes(wf))
    assert driver_started <= first_cell, (driver_started, first_cell)
    return wf


# The gate on what a driver's change to the data path shows in (a team names its metrics): fio's.
# Not the volume lifecycle's pod start and attach times, which the report also judges, and which
# on the loaded CI node vary with what runs beside the scenario, not with the driver.
GATE_METRICS = "iops,lat_mean_us"
WRITES = {"randwrite-iops", "randwrite-lat"}


def compare(baseline: str, candidate: str) -> tuple[int, list[dict]]:
    proc = subprocess.run(
        [PVBENCH_SCRIPT, "compare", baseline, candidate, "--store", STORE, "--campaign", CAMPAIGN, "--json"]
        + ["--metrics", GATE_METRICS],
        capture_output=True,
        text=True,
        env={**pod_minio().env, "PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def campaign_table(name: str, campaign: str = CAMPAIGN) -> list[dict]:
    """The class's rows of a table the campaign's last aggregation (an exit handler's) stored."""
    import pyarrow.parquet as pq

    data = pod_minio().client().get_object(BUCKET, f"{analytics_prefix(campaign)}/{name}.parquet").read()
    return [r for r in pq.read_table(io.BytesIO(data)).to_pylist() if r["storage_class"] == QOS_CLASS]


def comparisons() -> list[dict]:
    return campaign_table("report_comparisons")


def pvbench_history(*args: str) -> str:
    proc = subprocess.run(
        [PVBENCH_SCRIPT, "history", "--store", STORE, "--storage-class", QOS_CLASS, *args],
        capture_output=True,
        text=True,
        env={**pod_minio().env, "PATH": "/usr/bin:/bin", "COLUMNS": "200"},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def overview_text(out_dir) -> str:
    """The campaign's report, opened as a user opens it: `pvbench report serve` of its location."""
    port = free_port()
    location = f"{STORE}/{report_prefix(CAMPAIGN)}/"
    server = subprocess.Popen(
        [PVBENCH_SCRIPT, "report", "serve", location, "--port", str(port)],
        env={**pod_minio().env, "PATH": "/usr/bin:/bin"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until("pvbench report serve to answer", lambda: _answers(port, server), 120, every=0.5)
        [index] = browse(REPO / "reports", f"http://127.0.0.1:{port}", out_dir, [{"name": "index", "path": "/"}])[
            "pages"
        ]
        return index["text"]
    finally:
        server.terminate()
        server.communicate(timeout=30)


def _answers(port: int, server: subprocess.Popen) -> bool:
    import urllib.request

    assert server.poll() is None, server.stderr.read()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    for name in baseline_runs():
        wf = wait_workflow(name, timeout=1500)
        assert wf["status"]["phase"] == "Succeeded", describe(wf)
    upgrade = change_driver("2.0")
    seen = {
        "upgrade": upgrade["metadata"]["name"],
        "gate": compare("role=baseline", "role=candidate"),
        "comparisons": comparisons(),
        "overview": overview_text(tmp_path_factory.mktemp("upgrade-report")),
    }
    retag = change_driver("2.0.1")
    seen["retag"] = retag["metadata"]["name"]
    seen["retag_gate"] = compare(f"run={seen['upgrade']}", f"run={seen['retag']}")
    seen["retag_comparisons"] = comparisons()
    for name in later_runs():
        wf = wait_workflow(name, timeout=1500)
        assert wf["status"]["phase"] == "Succeeded", describe(wf)
    seen["change_points"] = campaign_table("report_change_points", NIGHTLY_CAMPAIGN)
    seen["history"] = campaign_table("report_history", NIGHTLY_CAMPAIGN)
    seen["history_cli"] = pvbench_history("--workload", "randwrite-iops")
    yield seen
    # the driver goes; its limit leaves the pods that are left (new pods never get it)
    k = require_kube()
    k.delete("daemonset", QOS_DAEMONSET, namespace=CSI_NAMESPACE)
    device = device_of(str(MEDIUM))
    for path in cgroups("/sys/fs/cgroup/blkio/kubepods"):
        limit(path, device, 0)


def test_the_upgrade_gate_fails_on_the_write_metrics(scenario):
    code, rows = scenario["gate"]
    assert code == 1, rows
    verdicts = {(r["workload"], r["metric"]): r["verdict"] for r in rows}
    assert {w for w, _ in verdicts} == WRITES and len(verdicts) == 4, verdicts
    assert set(verdicts.values()) == {"worse"}, verdicts
    [iops] = [r for r in rows if (r["workload"], r["metric"]) == ("randwrite-iops", "iops")]
    assert iops["change"] < -0.5, iops  # the driver's QoS, not noise: far below the baseline


def test_the_candidate_runs_report_says_the_class_got_worse(scenario):
    text = scenario["overview"]
    start = text.index(f"{QOS_CLASS} ({CAMPAIGN}): the candidate is worse in ")
    banner = text[start:][:900]
    assert re.match(r"\S+ \(\S+\): the candidate is worse in \d+ of \d+ headline metrics", banner), banner
    role = [r for r in scenario["comparisons"] if r["kind"] == "role" and r["workload"] in WRITES]
    assert "Random write IOPS — write: −" in banner and "Write latency — write: +" in banner, (banner, role)
    assert len(role) == 2 and {r["verdict"] for r in role} == {"worse"}, role


def test_a_retag_that_changes_nothing_is_not_called_worse(scenario):
    code, rows = scenario["retag_gate"]
    assert code == 0, rows
    assert rows and "worse" not in {r["verdict"] for r in rows}, rows
    # the report's "did the last run get slower?" (the latest run against the one before it)
    runs = [r for r in scenario["retag_comparisons"] if r["kind"] == "run"]
    assert {(r["baseline"], r["candidate"]) for r in runs} == {
        (f"run={scenario['upgrade']}", f"run={scenario['retag']}")
    }
    writes = [r for r in runs if r["workload"] in WRITES]
    assert len(writes) == 2 and "worse" not in {r["verdict"] for r in writes}, writes
    # and against the baseline, the class is still as slow as after the upgrade
    role = [r for r in scenario["retag_comparisons"] if r["kind"] == "role" and r["workload"] in WRITES]
    assert {r["verdict"] for r in role} == {"worse"}, role


def test_the_history_finds_the_step_at_the_upgrade_and_blames_the_drivers_change(scenario):
    # the write tests' series (the volume lifecycle's pod start times have a series too: they
    # move with the node's load, not with the driver, and are not asserted)
    history = [r for r in scenario["history"] if r["workload"] in WRITES]
    series = {(r["workload"], r["direction"], r["metric"], r["n_occasions"], r["judged"]) for r in history}
    assert {(w, n, judged) for w, _, _, n, judged in series} == {(w, 2 * BASELINE_OCCASIONS, True) for w in WRITES}, (
        series
    )
    assert {r["node_selection"] for r in history} == {f"{QOS_RUNS['node-label']}={QOS_RUNS['node-value']}"}, history
    # the nightly campaign's report, its own 2 occasions after the upgrade campaign's 6
    campaigns = [r["campaign"] for r in history if (r["workload"], r["metric"]) == ("randwrite-iops", "iops")]
    assert campaigns == [CAMPAIGN] * 6 + [NIGHTLY_CAMPAIGN] * 2, campaigns
    points = [p for p in scenario["change_points"] if p["workload"] in WRITES]
    # one change point in each write series, at the upgrade's run (the retag's candidate and the
    # nightly runs after it measure the same limited device)
    assert sorted((p["workload"], p["run"], p["change_index"]) for p in points) == sorted(
        (w, scenario["upgrade"], BASELINE_OCCASIONS + 1) for w in WRITES
    ), (points, [(r["workload"], r["occasion_index"], r["run"], r["mean"]) for r in history])
    assert {p["verdict"] for p in points} == {"worse"}, points
    assert {p["event_runs"] for p in points} == {scenario["upgrade"]}, points
    [iops] = [p for p in points if p["workload"] == "randwrite-iops" and p["metric"] == "iops"]
    assert iops["change_pct"] < -50 and iops["change_pct_ci95_high"] < 0, iops
    assert iops["events"].startswith("CSI driver image 1.0 → 2.0"), iops
    # the CLI reads the stored tables and says the same
    text = " ".join(scenario["history_cli"].split())
    assert "change point −" in text and ", after CSI driver image 1.0 → 2.0" in text, text
