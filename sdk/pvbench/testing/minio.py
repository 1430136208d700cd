"""A real MinIO server on loopback, and the tools it runs from (.tools/bin, ci/install-minio.sh).

Shared by the tests (sdk/tests/conftest.py's ``minio_server`` fixture) and the benchmarks of
pvbench_lab (a MinIO store on loopback); nothing here is mocked.
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

from pvbench.testing import REPO


def tool(name: str) -> str:
    """A tool from .tools/bin (or $PVBENCH_TOOLS/bin), else PATH; a clear failure if missing."""
    for base in (os.environ.get("PVBENCH_TOOLS"), str(REPO / ".tools")):
        if base and (Path(base) / "bin" / name).is_file():
            return str(Path(base) / "bin" / name)
    found = shutil.which(name)
    if not found:
        message = f"{name} is not installed: run `make setup` (ci/setup.sh) first"
        if "pytest" in sys.modules:  # in a test: a failure that says so, not an error
            import pytest

            pytest.fail(message)
        raise SystemExit(message)
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
