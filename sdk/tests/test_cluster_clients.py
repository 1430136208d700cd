"""A multi-client cell on the real engines: the `scaling` profile's two-client test, submitted as
the Argo UI does. Its cell pod runs both fio clients on its fresh volume (each in its own
directory: N writers on one volume), released together by the barrier (pvbench.fio.clients);
the result holds the totals, each client's own numbers, the start skew and the overlap, and the
cell's volume lifecycle beside them. (N client pods, each with its own PVC, across nodes: not yet,
docs/multi-client.md.)
"""

from __future__ import annotations

import json

import pytest
from cluster_helpers import BUCKET, QUICK, describe, pod_minio, submit, wait_workflow

from pvbench.fio.merge import read_clients_raw
from pvbench.results import ResultDocument
from pvbench.store.layout import RAW_FIO_FILE, RESULT_FILE, results_prefix

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

CAMPAIGN = "ci-clients"


@pytest.fixture(scope="module")
def run():
    params = {
        **QUICK,
        "size": "32M",
        "storage-classes": '["pvbench-tmpfs"]',
        "profile": "scaling",
        "tests": "randread-iops-x2",
        "repetitions": "1",
        "campaign": CAMPAIGN,
        # the main run's node selection: it queues behind that run (mutex pvbench-node-localhost),
        # beside the failure scenario's runs, instead of after them
        "node-label": "kubernetes.io/hostname",
        "node-value": "localhost",
    }
    name = submit(params, "pvbench-clients-")
    return name, wait_workflow(name)


def test_two_clients_measure_the_same_seconds_and_their_totals_are_the_cells(run):
    name, wf = run
    assert wf["status"]["phase"] == "Succeeded", describe(wf)
    minio = pod_minio()
    [key] = [k for k in minio.keys(BUCKET, results_prefix(CAMPAIGN, name) + "/") if k.endswith(RESULT_FILE)]
    doc = ResultDocument.from_json(minio.client().get_object(BUCKET, key).read())
    assert doc.workload.clients == 2 and doc.clients is not None
    section = doc.clients
    assert section.count == 2 and [c.client for c in section.per_client] == [1, 2]
    assert section.start_skew_s is not None and section.start_skew_s < 0.5, section
    assert section.overlap_share is not None and section.overlap_share > 0.8, section
    [total] = [m for m in doc.metrics if m.iops]
    per_client = [m.iops for c in section.per_client for m in c.metrics if m.iops]
    assert len(per_client) == 2 and total.iops == pytest.approx(sum(per_client), rel=1e-6)
    assert 0 < total.straggler_ratio <= 1
    # the raw output keeps each client's own fio json+ (the totals are rebuilt from it)
    raw = minio.client().get_object(BUCKET, key.replace(RESULT_FILE, RAW_FIO_FILE)).read()
    assert json.loads(raw)["format"] == "pvbench.fio-clients/v1" and len(read_clients_raw(raw)) == 2
    assert doc.lifecycle is not None and doc.lifecycle.pod_start_s is not None
