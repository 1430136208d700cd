"""Latency-bounded IOPS on the real engines: the `latency-slo` profile's 4k random-read (p99 ≤ 1 ms)
and etcd-like fdatasync (p99 ≤ 10 ms) tests, submitted as the Argo UI does, on the node's ext4
volumes. Each cell's pod searches fio's rate_iops on its fresh PVC and stores the answer with every
probe of its search; the campaign's tables carry it as the metric slo_iops.
"""

from __future__ import annotations

import pytest

from pvbench.results import ResultDocument
from pvbench.store.layout import RESULT_FILE, results_prefix
from pvbench.testing.cluster import BUCKET, QUICK, describe, installed_release, pod_minio, submit, wait_workflow

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

CAMPAIGN = "ci-latency-slo"


@pytest.fixture(scope="module")
def run():
    installed_release()
    params = {
        **QUICK,
        "size": "32M",
        "storage-classes": '["pvbench-ext4"]',
        "profile": "latency-slo",
        "tests": "randread-4k-p99-1ms,etcd-fsync-p99-10ms",
        "repetitions": "1",
        "campaign": CAMPAIGN,
        "node-label": "kubernetes.io/hostname",
        "node-value": "localhost",
        "volume-timeout": "10m",  # its pods may wait for the node while other runs' cells hold it
        "build-report": "false",  # see test_cluster_clients
    }
    name = submit(params, "pvbench-slo-")
    return name, wait_workflow(name)


def test_each_cell_stores_its_search_and_the_highest_iops_within_the_target(run):
    name, wf = run
    assert wf["status"]["phase"] == "Succeeded", describe(wf)
    minio = pod_minio()
    keys = [k for k in minio.keys(BUCKET, results_prefix(CAMPAIGN, name) + "/") if k.endswith(RESULT_FILE)]
    docs = {
        d.identity.workload: d
        for d in (ResultDocument.from_json(minio.client().get_object(BUCKET, k).read()) for k in keys)
    }
    assert sorted(docs) == ["etcd-fsync-p99-10ms", "randread-4k-p99-1ms"]
    for workload, doc in docs.items():
        slo = doc.latency_slo
        assert slo is not None, workload
        phases = [p.phase for p in slo.probes]
        assert phases[0] == "max" and "confirm" in phases, (workload, phases)
        assert slo.bound in {"device", "latency", "not-met"}
        if slo.met:  # a number only when a full-length run met the target, and then within it
            assert slo.iops > 0 and slo.latency_us <= slo.target_us, slo
        else:
            assert slo.iops is None, slo
        assert "latency_slo" in doc.provenance.notes
    assert docs["etcd-fsync-p99-10ms"].latency_slo.latency == "sync"
    assert docs["randread-4k-p99-1ms"].latency_slo.target_us == 1000
