"""Shared fixtures: a real MinIO server on loopback, real fio, throwaway stores.

Nothing here is mocked: tests that need S3 talk to a MinIO process started from
.tools/bin (ci/install-minio.sh), tests that need fio run /usr/bin/fio.
"""

from __future__ import annotations

import os
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
    secret_key: str = "pvbench-test-secret"
    proc: subprocess.Popen | None = None

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
            try:
                with urllib.request.urlopen(f"http://{self.endpoint}/minio/health/ready", timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("MinIO did not become ready in 30 s")

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


@pytest.fixture(scope="session", autouse=True)
def cluster_runs_up_front(request):
    """With cluster tests selected and a node up, start the long benchmark run of test_cluster_run
    at once: it then runs beside the other cluster tests' runs instead of after them."""
    if not any(item.get_closest_marker("cluster") for item in request.session.items):
        return
    from cluster_helpers import kube_or_none, main_run

    if kube_or_none() is not None:
        main_run()
