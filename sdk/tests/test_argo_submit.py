"""`pvbench argo submit`: parameters checked locally, then one real HTTP request through Hera's
WorkflowsService to an Argo-Server-shaped endpoint on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from argo_helpers import PVBENCH


@pytest.fixture
def fake_argo_server():
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
            reply = json.dumps(
                {
                    "metadata": {"name": "pvbench-benchmark-abc12", "namespace": "bench"},
                    "spec": {"workflowTemplateRef": {"name": "pvbench-benchmark"}},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", seen
    server.shutdown()


def submit(host, *args, env=None):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("ARGO_TOKEN")} | (env or {})
    return subprocess.run(
        [PVBENCH, "argo", "submit", "--host", host, "--namespace", "bench", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=full_env,
    )


def test_submit_sends_the_template_and_parameters(fake_argo_server):
    host, seen = fake_argo_server
    proc = submit(
        host,
        "-p",
        'storage-classes=["gp3","io2"]',
        "-p",
        "repetitions=5",
        "--label",
        "pvbench.io/role=baseline",
        env={"ARGO_TOKEN": "s3cret"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "pvbench-benchmark-abc12"
    [req] = seen
    assert req["path"] == "/api/v1/workflows/bench/submit" and req["auth"] == "Bearer s3cret"
    assert req["body"]["resourceKind"] == "WorkflowTemplate" and req["body"]["resourceName"] == "pvbench-benchmark"
    opts = req["body"]["submitOptions"]
    assert opts["parameters"] == ['storage-classes=["gp3","io2"]', "repetitions=5"]
    assert opts["labels"] == "pvbench.io/role=baseline"


@pytest.mark.parametrize(
    "param, message",
    [("repetitons=3", "unknown parameter 'repetitons'"), ("profile=fast", "is not one of ['dbench', 'vshn'")],
)
def test_submit_rejects_bad_parameters_before_any_request(fake_argo_server, param, message):
    host, seen = fake_argo_server
    proc = submit(host, "-p", param)
    assert proc.returncode == 2 and message in proc.stderr
    assert seen == []


def test_submit_reports_an_unreachable_server():
    proc = submit("http://127.0.0.1:9", "-p", "repetitions=1")
    assert proc.returncode == 1 and "submit to http://127.0.0.1:9 failed" in proc.stderr


def test_the_token_comes_from_a_file_not_the_command_line(fake_argo_server, tmp_path):
    """A token on the command line is in every user's `ps`; a file (or ARGO_TOKEN) is not."""
    host, seen = fake_argo_server
    token_file = tmp_path / "token"
    token_file.write_text("Bearer from-a-file\n")  # what `argo auth token > FILE` writes
    proc = submit(host, "--token-file", str(token_file), "-p", "repetitions=1")
    assert proc.returncode == 0, proc.stderr
    assert seen[-1]["auth"] == "Bearer from-a-file"
    proc = submit(host, "-p", "repetitions=1", env={"ARGO_TOKEN_FILE": str(token_file)})
    assert proc.returncode == 0 and seen[-1]["auth"] == "Bearer from-a-file", proc.stderr
    assert "--token " not in submit(host, "--help").stdout, "the plain flag is no longer offered"


def test_the_plain_token_flag_still_works_but_warns(fake_argo_server):
    host, seen = fake_argo_server
    proc = submit(host, "--token", "s3cret", "-p", "repetitions=1")
    assert proc.returncode == 0, proc.stderr
    assert seen[-1]["auth"] == "Bearer s3cret"
    assert "deprecated" in proc.stderr and "process list" in " ".join(proc.stderr.split())


@pytest.mark.parametrize("content", [None, ""], ids=["missing", "empty"])
def test_an_unusable_token_file_is_a_clear_error_before_any_request(fake_argo_server, tmp_path, content):
    host, seen = fake_argo_server
    token_file = tmp_path / "token"
    if content is not None:
        token_file.write_text(content)
    proc = submit(host, "--token-file", str(token_file), "-p", "repetitions=1")
    assert proc.returncode == 2 and "token file" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert seen == []
