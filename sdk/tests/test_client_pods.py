"""Multi-client cells as N pods (the Argo version, issue 14), run here as the pods run them: the
cell's `pvbench barrier` server on loopback, one `pvbench fio-step --client` process per client on
its own directory (its own volume in the pod), real fio, then `pvbench fio-step --merge`."""

import json
import socket
import subprocess
import threading
import time

import pytest
from cli_helpers import PVBENCH, pvbench

from pvbench.cells.matrix import CELLS_FAN_OUT, CLIENT_CELLS_FAN_OUT, SHARED_CLIENT_CELLS_FAN_OUT, argo_fan_outs
from pvbench.fio.pod_barrier import BarrierClient, BarrierServer, parse_address
from pvbench.fio.runner import FioError
from pvbench.profiles import ProfileError
from pvbench.results import ResultDocument
from pvbench.store.layout import CLIENT_FILE, RAW_FIO_FILE, RESULT_FILE

pytestmark = pytest.mark.quiet

MAX_SKEW_S = 0.5  # as test_clients: loopback TCP adds well under a millisecond to the file barrier's skew


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(server: BarrierServer, port: int) -> tuple[threading.Thread, list]:
    code: list = []
    thread = threading.Thread(target=lambda: code.append(server.run("127.0.0.1", port)), daemon=True)
    thread.start()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # listening?
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()  # like the readiness probe
            break
        except OSError:
            time.sleep(0.02)
    return thread, code


def test_the_barrier_releases_every_client_once_all_are_ready():
    port = _free_port()
    server = BarrierServer(3, timeout_s=10, log=lambda _: None)
    thread, code = _serve(server, port)
    released: dict[int, float] = {}

    def client(n: int, delay: float) -> None:
        with BarrierClient(f"127.0.0.1:{port}", n, timeout_s=10) as gate:
            time.sleep(delay)  # laying out its files
            gate.release()
            released[n] = time.monotonic()

    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(n, d)) for n, d in ((1, 0.0), (2, 0.3), (3, 0.6))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    thread.join(5)
    assert code == [0] and sorted(released) == [1, 2, 3]
    # nobody left before the last was ready, and all left at once
    assert min(released.values()) - started >= 0.6
    assert max(released.values()) - min(released.values()) < 0.1


def test_a_client_that_leaves_aborts_the_others_at_once():
    port = _free_port()
    server = BarrierServer(2, timeout_s=30, log=lambda _: None)
    thread, code = _serve(server, port)
    gone = BarrierClient(f"127.0.0.1:{port}", 2, timeout_s=30).connect()
    waiting = BarrierClient(f"127.0.0.1:{port}", 1, timeout_s=30).connect()
    threading.Timer(0.3, gone.close).start()  # its pod died while laying out its files
    t0 = time.monotonic()
    with pytest.raises(FioError, match="client 2 of 2 left before the start"):
        waiting.release()
    assert time.monotonic() - t0 < 5  # told at once, not after the 30 s deadline
    thread.join(5)
    assert code == [1]


def test_the_barrier_gives_up_on_clients_that_never_come():
    port = _free_port()
    server = BarrierServer(2, timeout_s=1, log=lambda _: None)
    thread, code = _serve(server, port)
    with BarrierClient(f"127.0.0.1:{port}", 1, timeout_s=10) as gate:
        with pytest.raises(FioError, match=r"only 1 of 2 clients were ready after 1 s \(not ready: 2\)"):
            gate.release()
    thread.join(5)
    assert code == [1]


def test_barrier_addresses():
    assert parse_address("10.0.0.7:7077") == ("10.0.0.7", 7077)
    assert parse_address("10.0.0.7") == ("10.0.0.7", 7077)
    assert parse_address("[fd00::1]:9000") == ("fd00::1", 9000)
    with pytest.raises(ValueError):
        parse_address(":x")


def test_profiles_with_multi_client_tests_run_every_cell_as_client_pods():
    items = [("scaling", "randread-iops-x1", {"order": 0}), ("dbench", "rand-read-iops", {"order": 1})]
    items.append(("scaling", "randwrite-iops-x4", {"order": 2}))
    fan_outs = argo_fan_outs(items)
    # x1 too: the family's N = 1 is measured by the same kind of pods, in the same random order
    assert fan_outs[CLIENT_CELLS_FAN_OUT] == [{"order": 0, "clients": 1}, {"order": 2, "clients": 4}]
    assert fan_outs[CELLS_FAN_OUT] == [{"order": 1}] and fan_outs[SHARED_CLIENT_CELLS_FAN_OUT] == []
    shared = argo_fan_outs(items, "shared")
    assert shared[SHARED_CLIENT_CELLS_FAN_OUT] == fan_outs[CLIENT_CELLS_FAN_OUT] and shared[CLIENT_CELLS_FAN_OUT] == []
    with pytest.raises(ProfileError, match="choose one of own, shared"):
        argo_fan_outs(items, "rwx")


def test_expand_writes_the_two_fan_outs(tmp_path):
    common = ["--campaign", "c", "--run", "r", "--occasion", "o", "--storage-classes", "fast,slow"]
    proc = pvbench("expand", *common, "--profiles", "scaling", "--tests", "randread-iops-x2,randread-iops-x1",
                   "--repetitions", "2", "--outputs", str(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    everything = json.loads(proc.stdout)
    client_cells = json.loads((tmp_path / CLIENT_CELLS_FAN_OUT).read_text())
    assert json.loads((tmp_path / CELLS_FAN_OUT).read_text()) == []
    assert [{k: v for k, v in i.items() if k != "clients"} for i in client_cells] == everything  # same order
    assert {(i["workload"], i["clients"]) for i in client_cells} == {("randread-iops-x2", 2), ("randread-iops-x1", 1)}


def _step(*args: str) -> list[str]:
    common = ["--campaign", "c", "--run", "r", "--occasion", "o", "--storage-class", "fast", "--profile", "scaling"]
    timing = ["--ramp", "200ms", "--runtime", "2s", "--size", "8M"]
    return [*PVBENCH, "fio-step", *common, "--rep", "1", "--order", "3", *timing, *args]


@pytest.mark.parametrize("shared", [False, True], ids=["own-volumes", "shared-volume"])
def test_two_client_pods_measure_the_same_seconds_and_merge_into_one_result(tmp_path, shared):
    """What the client-cell DAG does, with the pods as processes: barrier, 2 clients, merge (each
    client on a volume of its own, or both on one shared volume, each in its own directory)."""
    port = _free_port()
    barrier = subprocess.Popen(
        [*PVBENCH, "barrier", "--clients", "2", "--timeout", "60s", "--port", str(port), "--linger"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        clients = []
        for n in (1, 2):
            volume = tmp_path / ("shared" if shared else f"volume-{n}")  # the shared PVC, or each pod's own
            volume.mkdir(exist_ok=True)
            out = tmp_path / "clients" / str(n)  # clients/<n>/ under the cell's key
            args = ["--workload", "randread-iops-x2", "--target", str(volume), "--client", str(n)]
            args += ["--barrier", f"127.0.0.1:{port}", "--out", str(out), "--cleanup"]
            args += ["--shared-volume"] if shared else []
            clients.append(subprocess.Popen(_step(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        for proc in clients:
            stdout, stderr = proc.communicate(timeout=120)
            assert proc.returncode == 0, stdout + stderr
        assert barrier.poll() is None  # a daemon step stays up after GO, until Argo stops it
        barrier.terminate()
        assert barrier.wait(10) == 0, barrier.stdout.read()
        assert "GO" in barrier.stdout.read()
    finally:
        barrier.kill()
    # --cleanup: fio's files, and on a shared volume each client's own directory
    assert sorted(p.name for p in (tmp_path / ("shared" if shared else "volume-1")).iterdir()) == []
    assert len(list((tmp_path / "clients").rglob(CLIENT_FILE))) == 2

    out = tmp_path / "cell"
    proc = subprocess.run(
        _step(
            "--workload",
            "randread-iops-x2",
            "--merge",
            str(tmp_path / "clients"),
            "--out",
            str(out),
            "--label",
            "role=adhoc",
        ),  # fmt: skip
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = ResultDocument.from_json((out / RESULT_FILE).read_bytes())
    section = doc.clients
    assert section.count == 2 and section.barrier == "pods" and doc.workload.clients == 2
    assert section.volumes == ("shared" if shared else "own")
    expected = [tmp_path / "shared" / f"pvbench-client-{n}" if shared else tmp_path / f"volume-{n}" for n in (1, 2)]
    assert [c.target_path for c in section.per_client] == [str(path) for path in expected]
    assert section.start_skew_s is not None and section.start_skew_s < MAX_SKEW_S, section
    assert section.overlap_share is not None and section.overlap_share > 0.8, section
    [total] = [m for m in doc.metrics if m.iops]
    per_client = [m.iops for c in section.per_client for m in c.metrics if m.iops]
    assert total.iops == pytest.approx(sum(per_client), rel=1e-9) and 0 < total.straggler_ratio <= 1
    assert doc.identity.labels == {"role": "adhoc"} and doc.identity.rep == 1
    # each pod checked the guards itself; a flag of the cell names the client that tripped it
    assert all("guards" in json.loads(f.read_text()) for f in (tmp_path / "clients").rglob(CLIENT_FILE))
    assert all(f.detail.startswith(("client 1 of 2: ", "client 2 of 2: ")) for f in doc.guards), doc.guards
    raw = json.loads((out / RAW_FIO_FILE).read_text())
    assert raw["format"] == "pvbench.fio-clients/v1" and [c["client"] for c in raw["clients"]] == [1, 2]


def test_a_merge_without_every_client_stores_nothing(tmp_path):
    (tmp_path / "clients" / "1").mkdir(parents=True)
    out = tmp_path / "cell"
    proc = subprocess.run(
        _step("--workload", "randread-iops-x2", "--merge", str(tmp_path / "clients"), "--out", str(out)),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and "0 client outputs for a 2-client cell" in " ".join(proc.stderr.split())
    assert not out.exists()


def test_client_steps_are_checked_before_anything_runs(tmp_path):
    for args, message in (
        (["--target", str(tmp_path), "--client", "3", "--barrier", "h:1", "--out", str(tmp_path)], "has 2 client"),
        (["--target", str(tmp_path), "--client", "1", "--out", str(tmp_path)], "--client needs --barrier"),
        (["--target", str(tmp_path), "--merge", str(tmp_path)], "no --target"),
        ([], "--target is needed"),
    ):
        proc = subprocess.run(_step("--workload", "randread-iops-x2", *args), capture_output=True, text=True)
        assert proc.returncode == 2 and message in " ".join(proc.stderr.split()), (args, proc.stderr)


def test_validate_checks_the_volume_each_client_pod_writes_to():
    """own: one client's files per volume; shared: every client's files in the one volume."""
    common = ["--campaign", "c", "--run", "r", "--occasion", "o", "--storage-classes", "fast", "--profiles", "scaling"]
    common += ["--tests", "randread-iops-x8", "--volume-size", "2Gi"]
    assert pvbench("validate", *common).returncode == 0
    proc = pvbench("validate", *common, "--client-volumes", "shared", "--access-modes", "ReadWriteMany")
    message = " ".join(proc.stderr.split())
    assert proc.returncode == 2 and "of 8 clients together does not fit in a 2Gi Filesystem volume" in message, message
    proc = pvbench("validate", *common, "--client-volumes", "rwx")
    assert proc.returncode == 2 and "choose one of own, shared" in proc.stderr
