"""Two nodes (ci/cluster/up.sh runs a second kubelet on this machine, with a containerd, cgroup
root and pod network of its own): node selections, the per-node mutex and multi-client cells meet
more than one node.

- Two runs that select different nodes run at the same time, each holding its own node's mutex;
  each cell runs on its run's node, and its result records that node and the selection.
- A multi-client cell on a selection that spans both nodes puts one client on each, released
  together by the cell's barrier across the two pod networks.

Both start once every other run has ended, so that no other test's cell holds a node: the
clients' spreading is a preference (docs/multi-client.md), and a node busy with another cell would
take it away.
"""

from __future__ import annotations

import pytest

from pvbench.argo.conventions import NODE_MUTEX_PREFIX
from pvbench.results import ResultDocument
from pvbench.store.layout import RESULT_FILE, results_prefix
from pvbench.testing.cluster import (
    BUCKET,
    QUICK,
    RUN_TIMEOUT,
    WatchedRun,
    cluster_nodes,
    describe,
    installed_release,
    nodes,
    pod_minio,
    required,
    wait_all_runs_ended,
    wait_until,
    workflow,
    workflow_mutexes,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

CAMPAIGN = "ci-nodes"
PARAMS = {
    **QUICK,
    "campaign": CAMPAIGN,
    "storage-classes": '["pvbench-tmpfs"]',
    "profile": "dbench",
    "tests": "randread-iops",
    "repetitions": "2",
    "node-label": "kubernetes.io/hostname",
    "volume-timeout": "10m",
    "build-report": "false",  # the report is other tests' business (and ~100 s of CI)
}


@pytest.fixture(scope="module")
def two_nodes() -> dict[int, str]:
    installed_release()
    found = cluster_nodes()
    if len(found) < 2:
        message = f"one node only ({found}): ci/cluster/up.sh makes two unless PVBENCH_CLUSTER_NODES=1"
        if required():
            pytest.fail(message)
        pytest.skip(message)
    return found


def _results(run: str) -> list[ResultDocument]:
    minio = pod_minio()
    keys = [k for k in minio.keys(BUCKET, results_prefix(CAMPAIGN, run) + "/") if k.endswith(RESULT_FILE)]
    return [ResultDocument.from_json(minio.client().get_object(BUCKET, k).read()) for k in keys]


@pytest.fixture(scope="module")
def pair(two_nodes):
    """One run per node, submitted together; the moment both held their mutexes."""
    wait_all_runs_ended(RUN_TIMEOUT)
    runs = {n: WatchedRun({**PARAMS, "node-value": name}, f"pvbench-node{n}-") for n, name in two_nodes.items()}
    mutexes = {n: NODE_MUTEX_PREFIX + name for n, name in two_nodes.items()}

    def both_holding():
        wfs = {n: workflow(r.name) for n, r in runs.items()}
        held = all(mutexes[n] in workflow_mutexes(wf, "holding") for n, wf in wfs.items())
        return wfs if held else None

    seen = wait_until("both runs holding their node's mutex at once", both_holding, RUN_TIMEOUT, every=1)
    return {"runs": runs, "seen": seen, "mutexes": mutexes}


def test_two_runs_on_two_nodes_hold_their_own_mutexes_at_once(pair, two_nodes):
    for n, wf in pair["seen"].items():
        assert wf["status"]["phase"] == "Running", describe(wf)
        assert workflow_mutexes(wf, "holding") == {pair["mutexes"][n]}, describe(wf)
    for n, run in pair["runs"].items():
        wf = run.workflow
        assert wf["status"]["phase"] == "Succeeded", describe(wf)
        cells = [x for x in nodes(wf) if x.get("templateName") == "benchmark-cell" and x["type"] == "Pod"]
        assert len(cells) == 2 and {c["hostNodeName"] for c in cells} == {two_nodes[n]}, describe(wf)


def test_each_result_records_its_node_and_the_selection(pair, two_nodes):
    for n, run in pair["runs"].items():
        docs = _results(run.name)
        assert len(docs) == 2
        for doc in docs:
            assert doc.provenance.node == two_nodes[n]
            assert doc.identity.labels["node-selection"] == f"kubernetes.io/hostname={two_nodes[n]}"


@pytest.fixture(scope="module")
def spread(two_nodes, pair) -> WatchedRun:
    """A two-client cell on a selection both nodes match (after the pair: the nodes are idle)."""
    for run in pair["runs"].values():
        run.workflow  # noqa: B018 (waits for it)
    wait_all_runs_ended(RUN_TIMEOUT)
    params = {
        **PARAMS,
        "size": "32M",
        "profile": "scaling",
        "tests": "randread-iops-x2",
        "repetitions": "1",
        "node-label": "kubernetes.io/os",
        "node-value": "linux",
    }
    return WatchedRun(params, "pvbench-spread-")


def test_a_multi_client_cell_puts_a_client_on_each_node(spread, two_nodes):
    wf = spread.workflow
    assert wf["status"]["phase"] == "Succeeded", describe(wf)
    clients = [x for x in nodes(wf) if x.get("templateName") == "fio-client" and x["type"] == "Pod"]
    assert sorted(c["hostNodeName"] for c in clients) == sorted(two_nodes.values()), describe(wf)
    [doc] = _results(spread.name)
    section = doc.clients
    assert section.count == 2 and section.volumes == "own"
    assert sorted(c.node for c in section.per_client) == sorted(two_nodes.values()), section
    # one barrier for both, across the two pod networks: they measured the same seconds
    assert section.start_skew_s is not None and section.start_skew_s < 0.5, section
    assert section.overlap_share is not None and section.overlap_share > 0.8, section
    assert doc.identity.labels["node-selection"] == "kubernetes.io/os=linux"
