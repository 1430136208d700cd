"""Several cells in one pod (cells-per-pod), on the real engines: each cell on its own fresh volume
of its class, in the run's order, under the same keys as a pod per cell.

The speed it buys is measured by pvbench_lab.bench_argo_cells (docs/performance.md), not here.
"""

from __future__ import annotations

import json

import pytest

from pvbench.cells.matrix import parse_pod_cells
from pvbench.results import ResultDocument
from pvbench.store.layout import RESULT_FILE, results_prefix
from pvbench.testing.cluster import (
    BUCKET,
    QUICK,
    WatchedRun,
    cluster_nodes,
    describe,
    installed_release,
    nodes,
    pod_minio,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

CLASSES = ["pvbench-ext4", "pvbench-xfs"]
TESTS = ["randread-iops", "seqwrite"]
PARAMS = {
    **QUICK,
    "campaign": "ci-cell-pods",
    "occasion": "adhoc",
    "storage-classes": json.dumps(CLASSES),
    "profile": "dbench",
    "tests": ",".join(TESTS),
    "repetitions": "1",
    "seed": "5",
    "cells-per-pod": "3",
    # adaptive: each cell has 1 value (< 5), so round 1 repeats every cell, through the same pods
    # (next-pods); at 2 (the cap) round 2 says done
    "adaptive-target": "0.02",
    "adaptive-max-repetitions": "2",
    "build-report": "false",
    "volume-timeout": "10m",  # the pod may wait for the node while other tests' cells hold it
}


@pytest.fixture(scope="module")
def run():
    installed_release()
    r = WatchedRun(PARAMS, "pvbench-cell-pods-")
    return {"name": r.name, "wf": r.workflow, "pvcs": r.pvcs, "minio": pod_minio()}


def test_the_cells_run_three_to_a_pod_in_the_runs_order_and_so_do_the_adaptive_rounds(run):
    wf = run["wf"]
    assert wf["status"]["phase"] == "Succeeded", describe(wf)
    pods = sorted(
        (n for n in nodes(wf) if n.get("templateName") == "benchmark-pod" and n["type"] == "Pod"),
        key=lambda n: n["startedAt"],
    )
    assert not [n for n in nodes(wf) if n.get("templateName") == "benchmark-cell" and n["type"] == "Pod"]
    cells = [parse_pod_cells(n["inputs"]["parameters"][0]["value"]) for n in pods]
    # 2 classes × 2 tests, then round 1's second repetition of each, in pods of 3 again
    assert [len(c) for c in cells] == [3, 1, 3, 1], describe(wf)
    assert [cell["order"] for pod in cells for cell in pod] == list(range(8))  # the seeded order, kept
    assert [cell["rep"] for pod in cells for cell in pod] == [1] * 4 + [2] * 4


def test_each_cell_has_its_result_and_its_own_fresh_volume_of_its_class(run):
    minio, name = run["minio"], run["name"]
    keys = sorted(
        k for k in minio.keys(BUCKET, results_prefix(PARAMS["campaign"], name) + "/") if k.endswith(RESULT_FILE)
    )
    docs = [ResultDocument.from_json(minio.client().get_object(BUCKET, k).read()) for k in keys]
    assert sorted((d.identity.storage_class, d.identity.workload, d.identity.rep) for d in docs) == sorted(
        (sc, t, rep) for sc in CLASSES for t in TESTS for rep in (1, 2)
    )
    claims = []
    for key, doc in zip(keys, docs):
        assert key == doc.identity.result_key()  # where the layout puts the cell, as for a pod per cell
        assert doc.provenance.node in cluster_nodes().values() and doc.metrics[0].iops > 0
        # the cell read its own volume's lifecycle: the claim of its volume target-<i> in its pod
        lc = doc.lifecycle
        assert lc is not None and lc.notes == [], doc.provenance.notes
        claim = run["pvcs"][lc.claim]
        assert claim["spec"]["storageClassName"] == doc.identity.storage_class
        assert claim["spec"]["resources"]["requests"]["storage"] == QUICK["volume-size"]
        assert lc.volume == claim["spec"]["volumeName"] and lc.pod_start_s >= 0
        claims.append(lc.claim)
    assert len(set(claims)) == len(docs) == len(run["pvcs"])  # one fresh PVC per cell, no other
