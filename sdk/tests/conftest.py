"""Shared fixtures: a real MinIO server on loopback, real fio, throwaway stores.

Nothing here is mocked: tests that need S3 talk to a MinIO process started from
.tools/bin (ci/install-minio.sh), tests that need fio run /usr/bin/fio.

A test that asserts on what fio measured (a rate, a verdict between media) or on wall time
("stopped at once", a barrier's skew) belongs in a module marked ``pytest.mark.quiet``: `make
test` runs those first, with the machine to itself, and the rest beside the Kubernetes stage,
where such a test would be flaky (ci/test-stages.sh).
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# The thesis's published per-run values, kept in the repository (examples/README.md says where from).
THESIS_CSV = REPO / "examples" / "thesis-azure-runs.csv"


def tool(name: str) -> str:
    """A tool from .tools/bin (or $PVBENCH_TOOLS/bin), else PATH; a clear failure if missing."""
    for base in (os.environ.get("PVBENCH_TOOLS"), str(REPO / ".tools")):
        if base and (Path(base) / "bin" / name).is_file():
            return str(Path(base) / "bin" / name)
    found = shutil.which(name)
    if not found:
        pytest.fail(f"{name} is not installed: run `make setup` (ci/setup.sh) first")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class MinioServer:
    data_dir: Path
    port: int = field(default_factory=free_port)
    console_port: int = field(default_factory=free_port)
    access_key: str = "pvbench-test"
    # one secret per server: a server that answers on our port but rejects it is not ours
    secret_key: str = field(default_factory=lambda: "pvbench-test-" + secrets.token_hex(8))
    proc: subprocess.Popen | None = None
    started: bool = field(default=False, init=False, repr=False)  # once: a restart keeps the port

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        """What a pvbench process needs to use this server as an s3:// store."""
        return {
            "PVBENCH_S3_ENDPOINT": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "PVBENCH_S3_SECURE": "false",
        }

    def start(self) -> None:
        # free_port() only finds a port that was free a moment ago: with parallel test workers
        # (pytest-xdist) each starting a server, another one may take it first; then new ports.
        # A restart (test_local stops and starts the session's server) must keep its address.
        for attempt in range(1 if self.started else 3):
            if attempt:
                self.port, self.console_port = free_port(), free_port()
            if self._start_once():
                self.started = True
                return
        raise RuntimeError(f"MinIO could not start: {self.endpoint} was taken by another process")

    def _start_once(self) -> bool:
        """Start on self.port: True once this server is ready, False if the port was not ours."""
        env = {
            **os.environ,
            "MINIO_ROOT_USER": self.access_key,
            "MINIO_ROOT_PASSWORD": self.secret_key,
            "MINIO_BROWSER": "off",
        }
        self.proc = subprocess.Popen(
            [
                tool("minio"),
                "server",
                str(self.data_dir),
                "--address",
                self.endpoint,
                "--console-address",
                f"127.0.0.1:{self.console_port}",
                "--quiet",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:  # exited: most likely the port was taken
                return False
            try:
                with urllib.request.urlopen(f"http://{self.endpoint}/minio/health/ready", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.2)
        else:
            self.stop()
            raise RuntimeError("MinIO did not become ready in 30 s")
        if self._answers_with_our_secret():
            return True
        self.stop()
        return False

    def _answers_with_our_secret(self) -> bool:
        from minio import Minio
        from minio.error import S3Error

        try:
            Minio(self.endpoint, access_key=self.access_key, secret_key=self.secret_key, secure=False).list_buckets()
        except S3Error:
            return False
        return True

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.proc = None

    def make_bucket(self, name: str) -> None:
        from minio import Minio

        client = Minio(self.endpoint, access_key=self.access_key, secret_key=self.secret_key, secure=False)
        if not client.bucket_exists(name):
            client.make_bucket(name)


@pytest.fixture(scope="session")
def minio_server(tmp_path_factory) -> MinioServer:
    server = MinioServer(tmp_path_factory.mktemp("minio"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def s3_store_url(minio_server, monkeypatch, request) -> str:
    """A fresh bucket on the session's MinIO, with the environment set for s3:// stores."""
    for key, value in minio_server.env.items():
        monkeypatch.setenv(key, value)
    bucket = "t-" + "".join(c if c.isalnum() else "-" for c in request.node.name.lower())[:50].strip("-")
    minio_server.make_bucket(bucket)
    return f"s3://{bucket}/pvbench"


@pytest.fixture(scope="session")
def fio_bin() -> str:
    return tool("fio")


@pytest.fixture
def quick_timing() -> dict[str, str]:
    """Timing overrides that keep a real fio cell to about a second."""
    return {"ramp": "200ms", "runtime": "500ms", "size": "16M"}


@pytest.fixture(scope="session")
def thesis_store(tmp_path_factory) -> Path:
    """The thesis's 800 published per-run values, imported through the CLI (read-only: copy to modify)."""
    store = tmp_path_factory.mktemp("thesis")
    proc = subprocess.run(
        [sys.executable, "-m", "pvbench.cli", "import", "thesis-csv", str(THESIS_CSV), "--store", str(store)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return store


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config, items):
    """Parallel runs (`make test-fast`: pytest-xdist, -n 2 --dist loadgroup): tests that share a
    module-scoped fixture (a calibration run, an aggregated store) stay in one xdist group, so the
    fixture is computed once, not once per worker; tests with their own xdist_group mark keep it
    (test_report.py: one group per built report site). Session fixtures (MinIO, the thesis store)
    run once per worker, in that worker's own tmp_path_factory directory, on free ports."""
    for item in items:  # before pytest-xdist's own hook reads the marks
        if item.get_closest_marker("xdist_group") is None and _uses_a_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
    result = yield
    if getattr(config.option, "loadgroup", False):  # set in the xdist workers of --dist loadgroup
        _tag_xdist_groups(items)
        # the slow tests (report builds, fio comparisons) first: a long test handed out last
        # keeps one worker busy while the other idles (xdist hands out larger groups first, then
        # the rest in this order)
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    return result


def _uses_a_module_fixture(item) -> bool:
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    return any(defs[name][-1].scope == "module" for name in item.fixturenames if defs.get(name))


def _tag_xdist_groups(items) -> None:
    """pytest-xdist 3.8.0 tells its scheduler a test's group by appending "@group" to
    item._nodeid, which pytest 9.2 no longer reads (node ids are structured now): --dist loadgroup
    silently spreads every group over all workers (pytest-dev/pytest-xdist#1386), and each worker
    would build both report sites. Put the same tag on the structured id; stop if it does not take."""
    try:
        from _pytest.nodeid import NodeId
    except ImportError:  # an older pytest: xdist's own tag works
        NodeId = None
    for item in items:
        groups = {
            str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")
        }
        tag = "@" + "_".join(sorted(groups))
        if groups and not item.nodeid.endswith(tag) and NodeId is not None:
            item._id = NodeId.parse(item.nodeid + tag)
        if groups and not item.nodeid.endswith(tag):
            raise pytest.UsageError(
                f"--dist loadgroup: could not tag {item.nodeid} with its xdist group "
                f"{tag[1:]} (pytest-xdist#1386); run with --dist load or check the versions"
            )


@pytest.fixture(scope="session", autouse=True)
def cluster_runs_up_front(request):
    """With cluster tests selected and a node up, start the long benchmark run of test_cluster_run
    at once: it then runs beside the other cluster tests' runs instead of after them."""
    if not any(item.get_closest_marker("cluster") for item in request.session.items):
        return
    from cluster_helpers import kube_or_none, main_run

    if kube_or_none() is not None:
        main_run()
