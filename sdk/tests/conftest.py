"""Shared fixtures: a real MinIO server on loopback, real fio, throwaway stores.

Nothing here is mocked: tests that need S3 talk to a MinIO process started from
.tools/bin (ci/install-minio.sh; the server: pvbench.testing.minio, shared with the
benchmarks), tests that need fio run /usr/bin/fio.

A test that asserts on what fio measured (a rate, a verdict between media) or on wall time
("stopped at once", a barrier's skew) belongs in a module marked ``pytest.mark.quiet``: `make
test` runs those first, with the machine to itself, and the rest beside the Kubernetes stage,
where such a test would be flaky (ci/test-stages.sh).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pvbench.testing import REPO, THESIS_CSV
from pvbench.testing.minio import MinioServer, free_port, tool

__all__ = ["REPO", "THESIS_CSV", "MinioServer", "free_port", "tool"]  # the tests import these from here


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
    and the upgrade scenario's baselines at once: they then run beside the other cluster tests'
    runs instead of after them."""
    if not any(item.get_closest_marker("cluster") for item in request.session.items):
        return
    from pvbench.testing.cluster import kube_or_none, main_run
    from pvbench.testing.upgrade import baseline_runs

    modules = {item.path.name for item in request.session.items}
    if kube_or_none() is not None:
        if "test_cluster_run.py" in modules:
            main_run()
        if "test_cluster_upgrade.py" in modules:
            baseline_runs()  # the upgrade scenario's history, on a node selection of its own
