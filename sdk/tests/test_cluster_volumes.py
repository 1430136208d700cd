"""Volume shapes on the real engines (docs/volumes.md): one class measured as a Filesystem and as a
raw Block volume (two rows); a class of a provisioner that is not ours (rancher's
local-path-provisioner); and a shared (ReadWriteMany) volume of a network filesystem, both client
pods of a cell on it, checked against what its server wrote.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from pvbench.argo import conventions as c
from pvbench.results import ResultDocument
from pvbench.store.layout import RESULT_FILE, analytics_prefix, results_prefix
from pvbench.testing.cluster import (
    BUCKET,
    QUICK,
    STATE,
    WatchedRun,
    describe,
    installed_release,
    pod_minio,
    wait_until,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

CAMPAIGN = "ci-volumes"
LOCAL_PATH_DIR = STATE / "media" / "xfs" / "local-path"  # ci/cluster/lib.sh LOCAL_PATH_DIR
SHARED_EXPORT = STATE / "media" / "ext4" / "shared-export"  # what the SFTP server serves
SFTP_SERVER = Path("/usr/lib/openssh/sftp-server")
RUNDIR = Path(os.environ.get("PVBENCH_CLUSTER_RUN", "/run/pvbench-cluster"))
COMMON = {
    **QUICK,
    "campaign": CAMPAIGN,
    "occasion": "adhoc",
    "repetitions": "1",
    "seed": "3",
    "build-report": "false",
    "volume-timeout": "10m",  # a cell may wait for the node while other tests' cells hold it
}
SHAPES_RUN = {
    **COMMON,
    "storage-classes": '["pvbench-ext4"]',
    "profile": "dbench",
    "tests": "randwrite-iops",
    "volume-modes": "Filesystem Block",
}
LOCAL_PATH_RUN = {**COMMON, "storage-classes": '["local-path"]', "profile": "dbench", "tests": "randwrite-iops"}
SHARED_RUN = {
    **COMMON,
    "ramp": "0s",  # every byte the server sees is in the clients' io_bytes
    "size": "16M",
    "storage-classes": '["pvbench-shared"]',
    "profile": "scaling",
    "tests": "randwrite-iops-x2",
    "access-modes": "ReadWriteMany",
    "client-volumes": "shared",
}


def sftp_server_wchar() -> int:
    """Bytes the stage's sftp-servers wrote (their replies included): the shared class's server
    side. They are the processes of the stage's socat's group (ci/cluster/up.sh shared_fs); no
    other class is served by them."""
    group = int((RUNDIR / "sftp.pid").read_text())
    total = 0
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and os.getpgid(int(entry.name)) == group:
                if (entry / "exe").resolve() == SFTP_SERVER.resolve():
                    io_text = (entry / "io").read_text()
                    total += int(
                        next(v for k, _, v in (ln.partition(": ") for ln in io_text.splitlines()) if k == "wchar")
                    )
        except (OSError, StopIteration):
            continue
    return total


def results(minio, name: str) -> list[tuple[str, ResultDocument]]:
    keys = sorted(k for k in minio.keys(BUCKET, results_prefix(CAMPAIGN, name) + "/") if k.endswith(RESULT_FILE))
    return [(k, ResultDocument.from_json(minio.client().get_object(BUCKET, k).read())) for k in keys]


@pytest.fixture(scope="module")
def shapes():
    installed_release()
    run = WatchedRun(SHAPES_RUN, "pvbench-shapes-")
    return {"run": run, "wf": run.workflow, "minio": pod_minio()}


@pytest.fixture(scope="module")
def local_path():
    installed_release()
    run = WatchedRun(LOCAL_PATH_RUN, "pvbench-local-path-")
    return {"run": run, "wf": run.workflow, "minio": pod_minio()}


@pytest.fixture(scope="module")
def shared():
    installed_release()
    before = sftp_server_wchar()
    run = WatchedRun(SHARED_RUN, "pvbench-shared-")
    wf = run.workflow
    return {"run": run, "wf": wf, "written": sftp_server_wchar() - before, "minio": pod_minio()}


def test_a_class_measured_as_filesystem_and_as_block_is_two_rows(shapes):
    import pyarrow.parquet as pq

    wf, minio, run = shapes["wf"], shapes["minio"], shapes["run"]
    assert wf["status"]["phase"] == "Succeeded", describe(wf)
    found = {(d.identity.storage_class, d.identity.volume_mode): (k, d) for k, d in results(minio, run.name)}
    assert set(found) == {("pvbench-ext4", "Filesystem"), ("pvbench-ext4", "Block")}, found
    key, block = found[("pvbench-ext4", "Block")]
    assert "/volume=block-rwo/" in key and key == block.identity.result_key()
    # fio ran on the device itself, a fresh Block claim of the class mapped into the pod
    assert block.provenance.fio_options["filename"] == c.TARGET_DEVICE and block.provenance.filesystem is None
    assert block.metrics[0].iops > 0 and block.lifecycle is not None
    claim = run.pvcs[block.lifecycle.claim]
    assert claim["spec"]["volumeMode"] == "Block" and claim["spec"]["storageClassName"] == "pvbench-ext4"
    _, fs = found[("pvbench-ext4", "Filesystem")]
    assert fs.provenance.filesystem == "ext4" and run.pvcs[fs.lifecycle.claim]["spec"]["volumeMode"] == "Filesystem"
    tables = analytics_prefix(CAMPAIGN)
    rows = pq.read_table(
        io.BytesIO(minio.client().get_object(BUCKET, f"{tables}/report_storage_classes.parquet").read())
    ).to_pylist()
    shapes_of = {r["storage_class"]: (r["class_name"], r["volume_mode"]) for r in rows}
    assert shapes_of["pvbench-ext4"] == ("pvbench-ext4", "Filesystem")
    assert shapes_of["pvbench-ext4 (Block)"] == ("pvbench-ext4", "Block")


def test_local_path_provisioner_makes_binds_and_deletes_each_cells_volume(local_path):
    wf, minio, run = local_path["wf"], local_path["minio"], local_path["run"]
    assert wf["status"]["phase"] == "Succeeded", describe(wf)
    [(_, doc)] = results(minio, run.name)
    assert doc.metrics[0].iops > 0
    lc = doc.lifecycle
    assert lc is not None and lc.volume and lc.volume_bind_s is not None, lc
    claim = run.pvcs[lc.claim]
    assert claim["spec"]["storageClassName"] == "local-path"
    assert (claim["metadata"].get("annotations") or {}).get("volume.kubernetes.io/storage-provisioner") == (
        "rancher.io/local-path"
    )
    assert doc.provenance.filesystem == "xfs"  # a directory on the XFS medium
    # the claim went with the pod, and local-path's teardown helper pod removes the directory
    wait_until(
        f"local-path's teardown of {lc.volume}",
        lambda: not [p for p in LOCAL_PATH_DIR.iterdir() if lc.volume in p.name],
        timeout=180,
    )


def test_shared_clients_on_a_network_filesystem_and_what_its_server_wrote(shared):
    wf, minio, run = shared["wf"], shared["minio"], shared["run"]
    assert wf["status"]["phase"] == "Succeeded", describe(wf)
    [(key, doc)] = results(minio, run.name)
    assert doc.identity.access_mode == "ReadWriteMany" and "/volume=filesystem-rwx/" in key
    clients = doc.clients
    assert clients.count == 2 and clients.volumes == "shared" and clients.barrier == "pods"
    assert {c.target_path for c in clients.per_client} == {f"{c.TARGET_DIR}/pvbench-client-{n}" for n in (1, 2)}
    # one ReadWriteMany claim of the class, made by local-path on the shared filesystem
    [claim] = [p for p in run.pvcs.values() if p["spec"]["storageClassName"] == "pvbench-shared"]
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    per_client = [sum(m.io_bytes for m in cl.metrics if m.direction == "write") for cl in clients.per_client]
    total = sum(m.io_bytes for m in doc.metrics if m.direction == "write")
    assert all(b > 0 for b in per_client) and sum(per_client) == total
    written = shared["written"]
    assert total <= written <= 1.05 * total + 4 * 2**20, (total, written)
    wait_until("local-path's teardown of the shared volume", lambda: not list(SHARED_EXPORT.iterdir()), timeout=180)


def test_the_stage_runs_the_real_provisioner_unmodified():
    """local-path-provisioner is the module proxy's v0.0.30, run as a host process: its pid file."""
    pid = (RUNDIR / "local-path.pid").read_text().strip()
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert Path(cmdline[0].decode()).name == "local-path-provisioner-v0.0.30" and b"rancher.io/local-path" in cmdline
