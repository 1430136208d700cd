"""Volume shapes (pvbench.cells.volume) on real volumes: a raw Block device (a loop device) and a
shared ReadWriteMany class on a network filesystem (an SFTP server mounted with sshfs), in local
mode with real fio; and the bad input each shape can meet, refused before anything is written."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import duckdb
import pytest
import yaml
from cli_helpers import pvbench

from pvbench.results import ResultDocument
from pvbench.results.volume import storage_label, volume_key
from pvbench.testing.volumes import LoopDevice, SftpShare, VolumeUnavailable

FAST = {"ramp": "0s", "runtime": "1s", "size": "8M", "repetitions": 1, "seed": 3}
MARK = b"pvbench-must-not-touch-this" * 16


def _need(kind: str, exc: VolumeUnavailable):
    if os.environ.get("CI"):
        pytest.fail(f"CI must be able to make a {kind}: {exc}")
    pytest.skip(f"needs a {kind}: {exc}")


@pytest.fixture
def loop(tmp_path):
    try:
        with LoopDevice(tmp_path / "disk.img", 96 * 2**20) as device:
            yield device
    except VolumeUnavailable as exc:
        _need("loop device (root)", exc)


@pytest.fixture
def share(tmp_path):
    try:
        with SftpShare(tmp_path / "export", tmp_path / "share") as mounted:
            yield mounted
    except VolumeUnavailable as exc:
        _need("network filesystem (sshfs)", exc)


def write_config(tmp_path: Path, classes: dict, **over) -> Path:
    cfg = {"campaign": "shapes", "store": str(tmp_path / "store"), "spool": str(tmp_path / "spool")}
    cfg.update(FAST, storage_classes=classes, profiles=["dbench"], tests=["randread-iops", "randwrite-iops"])
    cfg.update(over)
    path = tmp_path / "pvbench.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def results(store: Path) -> list[tuple[str, ResultDocument]]:
    return [
        (str(p.relative_to(store)), ResultDocument.from_json(p.read_bytes()))
        for p in sorted((store / "results").rglob("result.json"))
    ]


def test_a_block_class_runs_fio_on_the_device_and_is_a_row_of_its_own(tmp_path, loop):
    config = write_config(
        tmp_path, {"disk": str(tmp_path / "fs"), "raw": {"path": str(loop), "volume_mode": "Block", "scratch": True}}
    )
    proc = pvbench("local", "run", config, "--run", "r1", timeout=300)
    assert proc.returncode == 0, proc.stderr
    found = results(tmp_path / "store")
    assert len(found) == 4
    for key, doc in found:
        shape = (doc.identity.volume_mode, doc.identity.access_mode)
        assert shape == (
            ("Block", "ReadWriteOnce") if doc.identity.storage_class == "raw" else ("Filesystem", "ReadWriteOnce")
        )
        assert f"/volume={volume_key(*shape)}/" in key and key == doc.identity.result_key()
        options = doc.provenance.fio_options
        if doc.identity.storage_class == "raw":
            # fio on the device itself: no directory, no files, each job its own size bytes of it
            assert options["filename"] == str(loop) and "directory" not in options
            assert options["offset_increment"] == str(8 * 2**20) and doc.provenance.filesystem is None
        else:
            assert "filename" not in options and options["directory"] == str(tmp_path / "fs")
        assert doc.metrics[0].iops > 0
    # the report's rows: the class with its shape, never one mean of both
    tables = tmp_path / "store" / "analytics" / "campaign=shapes" / "run=all"
    con = duckdb.connect()
    rows = con.execute(
        f"select storage_class, class_name, volume_mode, access_mode from '{tables}/report_storage_classes.parquet' "
        "order by storage_class"
    ).fetchall()
    assert rows == [("disk", "disk", "Filesystem", "ReadWriteOnce"), ("raw (Block)", "raw", "Block", "ReadWriteOnce")]
    summary = {r[0] for r in con.execute(f"select storage_class from '{tables}/summary.parquet'").fetchall()}
    assert summary == {"disk", "raw (Block)"}


def test_the_report_label_of_every_shape_is_the_one_python_makes(tmp_path):
    from pvbench.testing.documents import doc, write

    shapes = [(vm, am) for vm in ("Filesystem", "Block") for am in ("ReadWriteOnce", "ReadWriteMany")]
    docs = []
    for i, (vm, am) in enumerate(shapes):
        d = doc(storage_class="ceph", rep=1, value=1000.0 + i, order=i)
        docs.append(
            d.model_copy(update={"identity": d.identity.model_copy(update={"volume_mode": vm, "access_mode": am})})
        )
    write(tmp_path / "store", docs)
    proc = pvbench("aggregate", "--store", tmp_path / "store", "--campaign", "syn", timeout=300)
    assert proc.returncode == 0, proc.stderr
    tables = tmp_path / "store" / "analytics" / "campaign=syn" / "run=all"
    got = (
        duckdb.connect()
        .execute(f"select storage_class, volume_mode, access_mode from '{tables}/report_storage_classes.parquet'")
        .fetchall()
    )
    assert sorted(got) == sorted((storage_label("ceph", vm, am), vm, am) for vm, am in shapes)
    assert {label for label, *_ in got} == {"ceph", "ceph (Block)", "ceph (RWX)", "ceph (Block, RWX)"}


def test_shared_clients_all_run_on_one_network_filesystem_and_the_server_saw_their_bytes(tmp_path, share):
    target = share.mount / "pvbench"
    config = write_config(
        tmp_path,
        {"nfs": {"path": str(target), "access_mode": "ReadWriteMany"}},
        profiles=["scaling"],
        tests=["randwrite-iops-x2"],
        size="4M",
    )
    before = share.server_io()
    proc = pvbench("local", "run", config, "--run", "r1", "--no-aggregate", timeout=300)
    after = share.server_io()
    assert proc.returncode == 0, proc.stderr
    [(key, doc)] = results(tmp_path / "store")
    assert doc.identity.access_mode == "ReadWriteMany" and "/volume=filesystem-rwx/" in key
    assert doc.provenance.filesystem == "fuse.sshfs"
    clients = doc.clients
    assert clients.count == 2 and clients.volumes == "shared"
    # every client on the one shared volume, each in its own directory of it
    assert sorted(c.target_path for c in clients.per_client) == [str(target / f"pvbench-client-{n}") for n in (1, 2)]
    per_client = [sum(m.io_bytes for m in c.metrics if m.direction == "write") for c in clients.per_client]
    total = sum(m.io_bytes for m in doc.metrics if m.direction == "write")
    assert all(b > 0 for b in per_client) and sum(per_client) == total
    # what the server wrote: the clients' bytes, and little else (its replies, the files' metadata)
    written = after["wchar"] - before["wchar"]
    assert total <= written <= 1.05 * total + 2**20, (total, written)


def test_a_test_that_writes_never_touches_a_device_not_marked_scratch(tmp_path, loop):
    with open(loop, "r+b") as f:
        f.write(MARK)
    config = write_config(tmp_path, {"raw": {"path": str(loop), "volume_mode": "Block"}})
    proc = pvbench("local", "run", config, timeout=60)
    assert proc.returncode == 2, proc.stderr
    message = " ".join(proc.stderr.split())
    assert f"{loop} is not marked scratch and the test writes to it" in message
    with open(loop, "rb") as f:
        assert f.read(len(MARK)) == MARK
    assert not (tmp_path / "store").exists()
    # reading it is harmless: a read-only test runs on it
    config = write_config(tmp_path, {"raw": {"path": str(loop), "volume_mode": "Block"}}, tests=["randread-iops"])
    proc = pvbench("local", "run", config, "--no-aggregate", timeout=120)
    assert proc.returncode == 0, proc.stderr
    with open(loop, "rb") as f:
        assert f.read(len(MARK)) == MARK


def test_a_mounted_device_is_refused(tmp_path, loop):
    subprocess.run(["mkfs.ext4", "-q", "-F", str(loop)], check=True, capture_output=True)
    (tmp_path / "mnt").mkdir()
    subprocess.run(["mount", str(loop), str(tmp_path / "mnt")], check=True)
    try:
        config = write_config(tmp_path, {"raw": {"path": str(loop), "volume_mode": "Block", "scratch": True}})
        proc = pvbench("local", "run", config, timeout=60)
        assert proc.returncode == 2, proc.stderr
        assert f"{loop} is in use ({loop.name} is mounted at {tmp_path / 'mnt'})" in " ".join(proc.stderr.split())
    finally:
        subprocess.run(["umount", str(tmp_path / "mnt")])


@pytest.mark.parametrize(
    "volume, over, message",
    [
        ({"volume_mode": "Block", "scratch": True}, {}, "is not a block device (a file)"),
        ({"volume_mode": "Filesystem", "scratch": True}, {}, "scratch is for Block devices"),
        ({"access_mode": "ReadWriteMany"}, {}, "access mode ReadWriteMany needs a directory on a shared filesystem"),
        ({"volume_mode": "Sideways"}, {}, "Input should be 'Filesystem' or 'Block'"),
    ],
)
def test_bad_volume_shapes_fail_before_any_fio(tmp_path, volume, over, message):
    path = tmp_path / "plain-file"
    path.write_bytes(MARK)
    target = path if volume.get("volume_mode") == "Block" else tmp_path / "dir"
    config = write_config(tmp_path, {"c": {"path": str(target), **volume}}, **over)
    proc = pvbench("local", "run", config, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert message in " ".join(proc.stderr.split())
    assert path.read_bytes() == MARK and not (tmp_path / "store").exists()


def test_a_block_class_refuses_tests_that_need_a_filesystem(tmp_path, loop):
    jobfile = tmp_path / "files.fio"
    jobfile.write_text("[global]\nsize=4M\nruntime=1\n[many-files]\nrw=randwrite\nbs=4k\nnrfiles=4\n")
    block = {"raw": {"path": str(loop), "volume_mode": "Block", "scratch": True}}
    proc = pvbench("local", "run", write_config(tmp_path, block, profiles=[f"file:{jobfile}"], tests=[]), timeout=60)
    assert proc.returncode == 2 and "test many-files needs a filesystem (nrfiles)" in " ".join(proc.stderr.split())
    proc = pvbench(
        "local", "run", write_config(tmp_path, block, profiles=["scaling"], tests=["randread-iops-x2"]), timeout=60
    )
    assert proc.returncode == 2 and "multi-client tests on Filesystem volumes only" in " ".join(proc.stderr.split())


ARGO_RUN = ["--campaign", "c", "--run", "r", "--occasion", "o", "--storage-classes", '["fast"]']


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--profiles", "scaling", "--client-volumes", "shared"],
            "that needs access mode ReadWriteMany, not ReadWriteOnce",
        ),
        (["--profiles", "scaling", "--volume-modes", "Block"], "multi-client tests on Filesystem volumes only"),
        (["--volume-modes", "Raw"], "volume mode 'Raw': choose Filesystem or Block"),
        (["--access-modes", "ReadOnlyMany"], "access mode 'ReadOnlyMany': choose ReadWriteOnce or ReadWriteMany"),
        (["--volume-modes", "Block Block"], "volume modes are listed twice"),
    ],
)
def test_argo_runs_with_a_shape_their_tests_cannot_use_are_refused_by_validate(args, message):
    proc = pvbench("validate", *ARGO_RUN, *args, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert message in " ".join(proc.stderr.split())


def test_expand_puts_each_shape_in_its_fan_out(tmp_path):
    out = tmp_path / "out"
    proc = pvbench(
        "expand", *ARGO_RUN, "--tests", "randread-iops", "--volume-modes", "Filesystem Block",
        "--access-modes", "ReadWriteOnce,ReadWriteMany", "--outputs", out, "--cells-per-pod", "2", timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    items = json.loads(proc.stdout)
    assert sorted((i["volume_mode"], i["access_mode"]) for i in items) == sorted(
        (vm, am) for vm in ("Filesystem", "Block") for am in ("ReadWriteOnce", "ReadWriteMany")
    )
    block = json.loads((out / "block-cells").read_text())
    assert {i["volume_mode"] for i in block} == {"Block"} and len(block) == 2
    # the Filesystem cells go two to a pod, each pod's text naming each cell's shape
    [pod] = json.loads((out / "cell-pods").read_text())
    assert sorted(c.split(":")[1:3] for c in pod["cells"].split()) == [
        ["Filesystem", "ReadWriteMany"],
        ["Filesystem", "ReadWriteOnce"],
    ]
