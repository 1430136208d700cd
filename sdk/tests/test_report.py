"""The Evidence report, built for real and looked at in headless Chromium.

Two builds (module-scoped, ~2–3 min each), both from the real pipeline
(`pvbench import thesis-csv` + `pvbench aggregate`):
- thesis: the thesis's Azure appendix only (dbench), aggregated with the P30 disk limits — the
  vshn and sweep tables and the role/run comparisons are empty, so their pages must show a note
  instead of breaking; the anomalies page must flag Portworx over the limit and its warm-up;
- full: the thesis plus synthetic vshn, sweep and upgrade results (report_fixture.py) — fsync
  series, block size curves, before/after verdicts — without limits (the anomalies page says so),
  built with the `pvbench report build` CLI under `unshare -n` (no network at all) when the
  machine allows it.
Every page is opened in Chromium (outbound DNS blocked): charts must be painted, key numbers
present, no request may leave loopback. The first page is loaded, the others are reached by
following a link, as a reader does (a load starts DuckDB's WebAssembly and the JavaScript again;
a click does not); the browser keeps a disk cache, and no hashed asset may come over the network twice.
Screenshots go to $PVBENCH_ARTIFACTS/report/ (default /tmp/pvbench-artifacts/report/).

Under pytest-xdist (`make test-fast` runs `-n 2 --dist loadgroup`) the two sites' tests are one
xdist group, so each site is built once, both on one worker, one after the other: the second build
reuses the bundles the first compiled (its title is another, but plain), ~1.5 min instead of ~6
while the other worker runs the rest of the suite.
"""

from __future__ import annotations

import functools
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import duckdb
import pytest
from browser_helpers import browse
from proc_helpers import children, processes
from report_fixture import write_synthetic_results

from pvbench.cells.guards import GUARD_LIST
from pvbench.report import ReportError, build_report, check_installed, report_tables, stage_data, start_server
from pvbench.report.build import (
    TITLE_PLACEHOLDER,
    keep_bundles,
    put_title,
    restore_bundles,
    sort_data_manifest,
    write_empty_tables,
)
from pvbench.report.bundles import (
    ANALYSIS_FILE,
    ANALYSIS_REUSED_LOG_LINE,
    BUILD_LOG,
    BUNDLES_PATCH_MARKER,
    CACHE_DIR,
    PROJECT_OUTPUTS,
    REUSED_LOG_LINE,
    bundle_key,
)
from pvbench.results.metrics import METRIC_LIST

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parents[1]
THESIS_CSV = Path(os.environ.get("PVBENCH_THESIS_CSV", REPO / "examples" / "thesis-azure-runs.csv"))
ARTIFACTS = Path(os.environ.get("PVBENCH_ARTIFACTS", "/tmp/pvbench-artifacts")) / "report"
LIMITS = REPO / "examples" / "limits-azure-p30.yaml"
# one xdist group per built site: its tests share the module-scoped site on one worker
# how a chart names a unit: the metric catalog's (a lifecycle chart says "unit: s")
UNITS = tuple(f"unit: {m.unit}" if len(m.unit) == 1 else m.unit for m in METRIC_LIST)
# one xdist group: the two sites build one after the other, on one worker, the second reusing the
# bundles the first compiled (their titles are plain: pvbench.report.build.TITLE_PLACEHOLDER)
THESIS = FULL = pytest.mark.xdist_group("report-sites")
# Bundles kept across clones of the project (`make test-fast` sets it to the user's cache): a fresh
# clone's first site reuses what an earlier clone of the same pages compiled, as the report image's
# build reuses its cache mount (pvbench.report.build.restore_bundles); unset, the first site compiles.
SHARED_BUNDLES = os.environ.get("PVBENCH_TEST_BUNDLE_CACHE")

# Table 6.1 of the thesis (averages of all 20 runs: 3991.8 ± 119.5, 975.2 ± 32.0, 1007.5 ± 38.2,
# 4157.3 ± 250.6, 186.3 ± 10.1; Portworx 35745.0 ± 8231.0), as the overview prints them: rounded
# to what the spread supports (3 significant figures, a 4th only if the sd is that precise)
THESIS_MEANS = {
    "Random read IOPS": "3,990 ± 120",
    "Random write IOPS": "975 ± 32",
    "Read latency": "1,008 ± 38",
    "Write latency": "4,160 ± 250",
    "Random read bandwidth": "186 ± 10",
}
PORTWORX_READ_IOPS = "35,700 ± 8,200"


def pvbench(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "pvbench.cli", *args], capture_output=True, text=True)
    assert proc.returncode == 0, f"pvbench {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def can_unshare_net() -> bool:
    if not shutil.which("unshare"):
        return False
    return subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0


@dataclass
class Site:
    name: str
    site: Path
    url: str
    browse: dict
    reused: bool  # its build reused compiled bundles

    def page(self, name: str) -> dict:
        return next(p for p in self.browse["pages"] if p["name"] == name)


def evidence_project_copy(reports: Path, dest: Path) -> Path:
    """A private copy of the Evidence project, its node_modules linked (the build never writes there).

    `evidence build` works in place (.evidence/, data/, build/; build_report locks the project), so
    two sites built at the same time, on two xdist workers, need a project each."""
    # what a build writes, and node_modules (linked below); at the top level only
    skip = PROJECT_OUTPUTS
    shutil.copytree(
        reports, dest, symlinks=True, ignore=lambda d, names: skip & set(names) if Path(d) == reports else ()
    )
    (dest / "node_modules").symlink_to(reports / "node_modules", target_is_directory=True)
    return dest


def report_build_command(data: Path, site: Path, *options: str) -> list[str]:
    """`pvbench report build` as a user runs it (the CLI, in its own process)."""
    return [sys.executable, "-m", "pvbench.cli", "report", "build", "--data", str(data), "--out", str(site), *options]


def painted(chart: dict) -> bool:
    """Not blank: a real share of the canvas is drawn, in more than one colour."""
    return chart.get("painted", 0) > 0.01 and chart.get("colours", 0) >= 3


def section(text: str, start: str, end: str | None = None) -> str:
    """The page text from heading `start` up to `end` (or the end)."""
    assert start in text, start
    part = text.split(start, 1)[1]
    return part.split(end, 1)[0] if end else part


def row(text: str, first_cell: str) -> str:
    """The first table row (one line of the page text) that starts with `first_cell`."""
    rows = [line for line in text.splitlines() if line.startswith(first_cell + "\t")]
    assert rows, (first_cell, text[:2000])
    return rows[0]


@pytest.fixture(scope="module")
def reports() -> Path:
    if not THESIS_CSV.is_file():
        pytest.fail(f"{THESIS_CSV} is missing (set PVBENCH_THESIS_CSV to the thesis's per-run CSV)")
    try:
        return check_installed()
    except ReportError as exc:
        pytest.fail(f"{exc}  (ci/install-report.sh)")


def restore_shared_bundles(project: Path) -> None:
    """Before a site's build: the bundles an earlier clone compiled, from SHARED_BUNDLES. Here, in
    the sites' own xdist group, not in ``reports``: restoring takes the project's lock, which a site
    build holds for minutes while it compiles (other tests on the other worker would wait on it)."""
    if SHARED_BUNDLES:
        restore_bundles(Path(SHARED_BUNDLES), project=project)


def keep_compiled_bundles(project: Path) -> None:
    """After a site's build: the bundles it compiled go to SHARED_BUNDLES for the next clone."""
    if SHARED_BUNDLES:
        keep_bundles(Path(SHARED_BUNDLES), project=project)


@pytest.fixture(scope="module")
def thesis_site(reports, tmp_path_factory) -> Site:
    """The thesis only (dbench): built in-process with build_report()."""
    work = tmp_path_factory.mktemp("report-thesis")
    pvbench("import", "thesis-csv", str(THESIS_CSV), "--store", str(work / "store"), "--campaign", "thesis")
    pvbench(
        "aggregate",
        "--store",
        str(work / "store"),
        "--campaign",
        "thesis",
        "--out",
        str(work / "data"),
        "--limits",
        str(LIMITS),
    )
    restore_shared_bundles(reports)
    site = build_report(work / "data", work / "site", title="Thesis (Azure)", quiet=True)
    reused = REUSED_LOG_LINE in (reports / BUILD_LOG).read_text()
    keep_compiled_bundles(reports)
    server, url = start_server(site)
    try:
        shots = ARTIFACTS / "thesis"
        result = browse(
            reports,
            url,
            shots,
            [
                {"name": "index", "path": "/", "minCharts": 10},
                {"name": "boxplots", "path": "/boxplots/", "minCharts": 10},
                {"name": "fsync-empty", "path": "/fsync/"},
                {"name": "sweep-empty", "path": "/sweep/"},
                {"name": "latency-slo-empty", "path": "/latency-slo/"},
                {"name": "storage-classes", "path": "/storage-classes/"},
                {"name": "class-azure", "path": "/storage-classes/Azure%20Disk%20Storage/", "minCharts": 10},
                {"name": "class-portworx", "path": "/storage-classes/Portworx/", "minCharts": 10},
                {"name": "comparisons", "path": "/comparisons/", "minCharts": 6},
                {"name": "anomalies", "path": "/anomalies/", "minCharts": 5},
                {"name": "occasions", "path": "/occasions/", "minCharts": 44},
                {"name": "methodology", "path": "/methodology/"},
                {"name": "lifecycle-empty", "path": "/lifecycle/"},
                {"name": "scaling-empty", "path": "/scaling/"},
                {"name": "history-unjudged", "path": "/history/"},
            ],
            follow_links=True,
        )
        yield Site("thesis", site, url, result, reused)
    finally:
        server.shutdown()


@pytest.fixture(scope="module")
def full_site(reports, tmp_path_factory) -> Site:
    """Thesis + synthetic vshn and sweep: built with the CLI, without network if possible. After
    (or before) thesis_site, in the same project: with another title, it reuses the bundles."""
    work = tmp_path_factory.mktemp("report-full")
    write_synthetic_results(work / "store")
    pvbench("import", "thesis-csv", str(THESIS_CSV), "--store", str(work / "store"), "--campaign", "thesis")
    pvbench("aggregate", "--store", str(work / "store"), "--out", str(work / "data"))
    restore_shared_bundles(reports)
    cmd = report_build_command(work / "data", work / "site", "--title", "pvbench test report")
    offline = can_unshare_net()
    if offline:
        cmd = ["unshare", "-n", *cmd]  # a network namespace with only a (down) loopback
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, (
        f"report build failed (offline={offline}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    )
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "full-build.txt").write_text(f"built without network: {offline}\n{proc.stderr}")
    keep_compiled_bundles(reports)
    server, url = start_server(work / "site")
    try:
        result = browse(
            reports,
            url,
            ARTIFACTS / "full",
            [
                {"name": "index", "path": "/", "minCharts": 24},
                {"name": "boxplots", "path": "/boxplots/", "minCharts": 24},
                {"name": "fsync", "path": "/fsync/", "minCharts": 2},
                {"name": "sweep", "path": "/sweep/", "minCharts": 18},
                {"name": "class-rook-ceph-rbd", "path": "/storage-classes/rook-ceph-rbd/", "minCharts": 30},
                {"name": "class-nvme-tcp", "path": "/storage-classes/nvme-tcp/", "minCharts": 18},
                {"name": "comparisons", "path": "/comparisons/", "minCharts": 12},
                {"name": "anomalies", "path": "/anomalies/", "minCharts": 5},
                {"name": "occasions", "path": "/occasions/", "minCharts": 49},
                {"name": "methodology", "path": "/methodology/"},
                {"name": "runs", "path": "/runs/"},
                {"name": "lifecycle", "path": "/lifecycle/", "minCharts": 1},
                {"name": "over-time", "path": "/over-time/", "minCharts": 18},
                {"name": "class-tmpfs", "path": "/storage-classes/tmpfs/", "minCharts": 36},
                {"name": "history", "path": "/history/", "minCharts": 2},
                {"name": "class-openebs-lvm", "path": "/storage-classes/openebs-lvm/", "minCharts": 10},
                # the run picked in the Runs page's Dropdown; waits for that run's mean of random writes
                {"name": "runs-before", "path": "/runs/", "select": "before-upgrade", "waitText": "19,400 ± 2,300"},
            ],
            follow_links=True,
        )
        yield Site("full", work / "site", url, result, "bundles reused" in proc.stderr)
    finally:
        server.shutdown()


# ------------------------------------------------------------------ quick (no build)


def test_numbers_are_rounded_to_what_the_data_supports():
    """The report's number formatting (reports/components/pvbench.js), run in node."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed: run `make setup` (ci/install-report.sh)")
    script = """
    const m = await import(process.argv[1]);
    console.log(JSON.stringify([
      m.meanSd(256083.6, 51728.9), m.meanSd(3991.8, 119.5), m.meanSd(1000.4, 5.2), m.meanSd(12.345, 0.5),
      m.meanSd(-4.2, 0), m.sig(0.012345), m.sig(35745), m.interval(244123, 268456, 256000), m.num(1.23456, 2),
    ]));"""
    proc = subprocess.run(
        [node, "--input-type=module", "-e", script, str(REPO / "reports" / "components" / "pvbench.js")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [
        "256,000 ± 52,000",
        "3,990 ± 120",
        "1,000 ± 5",
        "12.35 ± 0.50",
        "−4.20 ± 0.00",
        "0.0123",
        "35,700",
        "[244,000, 268,000]",
        "1.23",
    ]


def test_the_build_bounds_nodes_heap_unless_told_otherwise():
    """Node's heap is bounded (its default grows with the machine); a NODE_OPTIONS that sets its
    own bound wins, and other options are kept. --expose-gc is always there: the patched
    SvelteKit collects the build's garbage before each of its worker threads starts."""
    from pvbench.report.build import REPORT_HEAP_MIB, _node_options

    assert _node_options("") == f"--max-old-space-size={REPORT_HEAP_MIB} --expose-gc"
    assert _node_options("--trace-warnings") == f"--trace-warnings --max-old-space-size={REPORT_HEAP_MIB} --expose-gc"
    assert _node_options("--max-old-space-size=4096") == "--max-old-space-size=4096 --expose-gc"
    assert _node_options("--expose-gc --max-old-space-size=4096") == "--expose-gc --max-old-space-size=4096"
    quoted = '--require "/opt/my hooks/trace.js"'
    assert _node_options(quoted) == f"{quoted} --max-old-space-size={REPORT_HEAP_MIB} --expose-gc"


def test_the_build_tunes_malloc_unless_told_otherwise():
    from pvbench.report.build import MALLOC_ENV, REPORT_HEAP_MIB, _build_env

    env = _build_env({"PATH": "/usr/bin"})
    assert {name: env[name] for name in MALLOC_ENV} == MALLOC_ENV
    assert env["NODE_OPTIONS"] == f"--max-old-space-size={REPORT_HEAP_MIB} --expose-gc"
    mine = _build_env({"MALLOC_ARENA_MAX": "8", "NODE_OPTIONS": "--max-old-space-size=4096"})
    assert "MALLOC_ARENA_MAX" not in mine  # the user's own stays, from the process's environment
    assert mine["MALLOC_MMAP_THRESHOLD_"] == MALLOC_ENV["MALLOC_MMAP_THRESHOLD_"]
    assert mine["NODE_OPTIONS"] == "--max-old-space-size=4096 --expose-gc"


def test_a_page_query_that_fails_fails_the_build(tmp_path):
    """`evidence build:strict` logs a page query's error and exits 0 (the page would ship showing
    the error): the build step reads Evidence's line and fails, naming each query once."""
    from pvbench.report.build import _run_step

    printed = (
        'broken | Error in Query! Binder Error: Referenced column "no_such_column" not found in FROM clause!\n'
        "LINE 2: DESCRIBE SELECT * FROM (select no_such_column from pvbench.report_overview\n"
        'broken | Error in Query! Binder Error: Referenced column "no_such_column" not found in FROM clause!\n'
        "Build complete --> ./build\n"
    )
    step = {
        "cmd": [sys.executable, "-c", f"print({printed!r}, end='')"],
        "cwd": tmp_path,
        "env": dict(os.environ),
        "log_path": tmp_path / "build.log",
        "label": "evidence build",
        "status": None,
        "timeout_s": 60,
    }
    _run_step(**step)  # the sources step: exit 0 is success
    with pytest.raises(ReportError, match=r"1 page query failed.*\n  broken: Binder Error: Referenced column") as err:
        _run_step(**step, query_errors_fail=True)
    assert str(err.value).count("broken:") == 1


def test_missing_install_is_a_clear_error(tmp_path, monkeypatch):
    project = tmp_path / "reports"
    project.mkdir()
    for name in ("package.json", "evidence.config.yaml"):
        shutil.copy(REPO / "reports" / name, project / name)
    monkeypatch.setenv("PVBENCH_REPORTS_DIR", str(project))
    with pytest.raises(ReportError, match="install-report.sh"):
        build_report(tmp_path / "data", tmp_path / "site", quiet=True)


def test_an_install_without_the_workers_patch_is_a_clear_error(tmp_path, monkeypatch):
    """An Evidence install whose SvelteKit lacks reports/scripts/sveltekit-workers.mjs's patch
    (e.g. `npm ci --ignore-scripts`), or carries its older version (v1 patched fork.js only), is
    refused with the way to fix it, as the Parquet patch is."""
    import pvbench.report.build as report_build

    project = tmp_path / "reports"
    for name in ("package.json", "evidence.config.yaml"):
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / "reports" / name, project / name)
    modules = project / "node_modules"
    (modules / "@evidence-dev" / "evidence").mkdir(parents=True)
    (modules / "@evidence-dev" / "evidence" / "cli.js").write_text("")
    usql = modules / "@evidence-dev" / "universal-sql" / "src" / "client-duckdb" / "node.js"
    usql.parent.mkdir(parents=True)
    usql.write_text(f"// {report_build.PATCH_MARKER} v2")
    kit = modules / "@sveltejs" / "kit"
    fork, vite = kit / "src" / "utils" / "fork.js", kit / "src" / "exports" / "vite" / "index.js"
    for file in (fork, vite):
        file.parent.mkdir(parents=True)
        file.write_text("// as installed")
    monkeypatch.setattr(report_build.shutil, "which", lambda name: f"/usr/bin/{name}")
    with pytest.raises(ReportError, match="fork.js.*SvelteKit's build workers.*install-report.sh"):
        report_build.check_installed(project)
    fork.write_text("// pvbench-sveltekit-workers v1: the task is done")  # the older patch
    with pytest.raises(ReportError, match="fork.js"):
        report_build.check_installed(project)
    fork.write_text(f"// {report_build.WORKERS_PATCH_MARKER}: the task is done")
    with pytest.raises(ReportError, match="vite/index.js.*install-report.sh"):
        report_build.check_installed(project)
    vite.write_text(f"// {report_build.WORKERS_PATCH_MARKER}: not now")
    with pytest.raises(ReportError, match="pvbench-sveltekit-bundles.*reuse.*install-report.sh"):
        report_build.check_installed(project)  # the bundles patch (reports/scripts/sveltekit-bundles.mjs)
    vite.write_text(f"// {report_build.WORKERS_PATCH_MARKER}: not now\n// {BUNDLES_PATCH_MARKER}: reused")
    # the patch that makes the site work under any path prefix (reports/scripts/relative-base.mjs)
    for patched in report_build.RELATIVE_BASE_PATCHED_FILES:
        with pytest.raises(
            ReportError, match=f"relative-base.*{re.escape(patched)}.*any path prefix.*install-report.sh"
        ):
            report_build.check_installed(project)
        file = modules / "@evidence-dev" / patched
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(f"// {report_build.RELATIVE_BASE_MARKER}: base from SvelteKit")
    assert report_build.check_installed(project) == project


def test_a_plain_title_is_put_into_the_built_site(tmp_path):
    """Plain titles share the bundles: the build compiles the placeholder, then writes the title
    where it is; a site without the placeholder (the pages changed) is an error, not a site
    titled by accident."""
    site = tmp_path / "site"
    (site / "_app").mkdir(parents=True)
    (site / "index.html").write_text(f"<title>{TITLE_PLACEHOLDER}</title><h1>{TITLE_PLACEHOLDER}</h1>")
    (site / "_app" / "a.js").write_text(f'const t="{TITLE_PLACEHOLDER}"||`x`;')
    (site / "_app" / "b.css").write_text(TITLE_PLACEHOLDER)  # not where a title is shown
    put_title(site, "Ceph vs. Longhorn (Q3, 4k/128k) #2")
    assert (site / "index.html").read_text() == (
        "<title>Ceph vs. Longhorn (Q3, 4k/128k) #2</title><h1>Ceph vs. Longhorn (Q3, 4k/128k) #2</h1>"
    )
    assert (site / "_app" / "a.js").read_text() == 'const t="Ceph vs. Longhorn (Q3, 4k/128k) #2"||`x`;'
    with pytest.raises(ReportError, match="no title placeholder"):
        put_title(site, "again")
    from pvbench.report.build import is_plain_title

    assert is_plain_title("Thesis (Azure)") and is_plain_title("Prüfung: Rook-Ceph 2026-11")
    for title in ('Ceph "fast"', "Ceph's", "A & B", "<b>x</b>", "a\\b", "${x}", "`x`", "x" * 121, ""):
        assert not is_plain_title(title), title


def test_the_bundle_key_follows_what_the_bundles_are_made_of(tmp_path):
    """The bundles are reused only where the same ones would be compiled: the key changes with a
    page, a component, the installed packages or the title (VITE_*), not with the staged data, the
    build output, Evidence's working copy or unrelated environment variables."""
    project = evidence_project_copy(REPO / "reports", tmp_path / "reports")
    (project / "node_modules").unlink()
    (project / "node_modules").mkdir()
    (project / "node_modules" / ".package-lock.json").write_text('{"lockfileVersion": 3}')
    env = {"VITE_PVBENCH_TITLE": "pvbench report", "HOME": "/root"}
    key = bundle_key(project, env)
    for where in ("data/report_overview.parquet", "build/index.html", ".evidence/template/x.js", ".pvbench-build.lock"):
        (project / where).parent.mkdir(parents=True, exist_ok=True)
        (project / where).write_text("anything")
    assert bundle_key(project, {**env, "HOME": "/tmp", "PATH": "/bin"}) == key
    assert bundle_key(project, {**env, "VITE_PVBENCH_TITLE": "Thesis (Azure)"}) != key
    assert bundle_key(project, {**env, "PUBLIC_X": "1"}) != key
    changes = {
        "pages/index.md": lambda text: text + "\nOne more line.\n",
        "components/pvbench.js": lambda text: text + "\n// a comment\n",
        "node_modules/.package-lock.json": lambda text: '{"lockfileVersion": 3, "packages": {}}',
        "scripts/sveltekit-bundles.mjs": lambda text: text + "\n",
    }
    for where, change in changes.items():
        file = project / where
        before = file.read_text()
        file.write_text(change(before))
        assert bundle_key(project, env) != key, where
        file.write_text(before)
        assert bundle_key(project, env) == key, where


def test_prime_with_a_cache_copies_its_bundles_in_and_compiles_nothing(reports, tmp_path):
    """`pvbench report prime --cache DIR` (the report image's build, DIR its cache mount): bundles
    of these pages found in DIR are put in place without a build, so an image rebuilt after a change
    to pvbench's Python code alone primes in seconds instead of compiling for ~2 minutes."""
    import pvbench.report.build as build

    project = evidence_project_copy(reports, tmp_path / "reports")
    key = bundle_key(project, build._evidence_env(project, build.DEFAULT_TITLE))
    shared = tmp_path / "cache-mount"
    (shared / key / "server").mkdir(parents=True)
    (shared / key / "bundle.json").write_text("{}")
    (shared / key / "server" / "index.js").write_text("// compiled once")
    (shared / f"{key}.partial-99").mkdir()  # another build's copy in progress: left alone
    env = {**os.environ, "PVBENCH_REPORTS_DIR": str(project)}
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "pvbench.cli", "report", "prime", "--cache", str(shared)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "nothing compiled" in " ".join(proc.stderr.split()), proc.stderr
    assert time.monotonic() - started < 30  # a build, even one reusing bundles, takes longer
    restored = project / ".evidence" / "pvbench-bundles" / key
    assert (restored / "server" / "index.js").read_text() == "// compiled once"
    assert not (project / BUILD_LOG).exists() and not (project / "build").exists()  # Evidence never ran
    assert sorted(p.name for p in shared.iterdir()) == sorted([key, f"{key}.partial-99"])


def test_prime_copies_the_bundles_it_compiled_to_its_cache(tmp_path, monkeypatch):
    """Bundles compiled by `prime --cache` are copied there whole (staged, then renamed), and the
    cache keeps the KEEP used last, as the project does."""
    import pvbench.report.build as build
    import pvbench.report.bundles as bundles

    project = tmp_path / "reports"
    (project / "pages").mkdir(parents=True)
    (project / "pages" / "index.md").write_text("# hello")
    monkeypatch.setattr(build, "check_installed", lambda project=None: tmp_path / "reports")
    monkeypatch.setattr(build, "reports_dir", lambda: tmp_path / "reports")
    shared = tmp_path / "cache-mount"
    for age, name in enumerate(["a", "b", "c"]):
        (shared / name).mkdir(parents=True)
        (shared / name / "bundle.json").write_text("{}")
        os.utime(shared / name, (time.time() - 10 * (age + 1),) * 2)

    def compile_bundles(data, site, **kwargs):  # what the patched SvelteKit leaves after compiling
        cache = bundles.bundle_cache(project, build._evidence_env(project, build.DEFAULT_TITLE))
        (cache / "client").mkdir(parents=True)
        (cache / "client" / "app.js").write_text("// compiled")
        (cache / "bundle.json").write_text("{}")
        return site

    monkeypatch.setattr(build, "build_report", compile_bundles)
    done = build.prime_bundles(shared=shared)
    key = bundle_key(project, build._evidence_env(project, build.DEFAULT_TITLE))
    assert done.startswith("bundles compiled") and str(shared) in done
    assert (shared / key / "client" / "app.js").read_text() == "// compiled"
    assert sorted(p.name for p in shared.iterdir()) == sorted([key, "a", "b"])  # KEEP = 3
    # primed again: nothing to compile, the project has them; the cache keeps them
    monkeypatch.setattr(build, "build_report", lambda *a, **k: pytest.fail("compiled again"))
    assert "nothing compiled" in build.prime_bundles(shared=shared)


def test_a_fresh_clone_restores_the_bundles_another_clone_compiled(tmp_path, monkeypatch):
    """restore_bundles/keep_bundles (what the suite does with $PVBENCH_TEST_BUNDLE_CACHE): bundles
    one copy of the pages compiled are put in place in another copy of the same pages, for any
    plain title; pages that differ, or a title compiled in, find none."""
    import pvbench.report.build as build
    import pvbench.report.bundles as bundles

    def clone(name: str, page: str = "# hello") -> Path:
        project = tmp_path / name
        (project / "pages").mkdir(parents=True)
        (project / "pages" / "index.md").write_text(page)
        return project

    shared = tmp_path / "user-cache"
    first = clone("first")
    assert build.restore_bundles(shared, project=first) is None  # nothing anywhere: the build compiles
    assert build.keep_bundles(shared, project=first) is None  # and nothing to keep before it has
    compiled = bundles.bundle_cache(first, build._evidence_env(first, build.DEFAULT_TITLE))
    (compiled / "server").mkdir(parents=True)
    (compiled / "server" / "index.js").write_text("// compiled once")
    (compiled / "bundle.json").write_text("{}")
    assert build.keep_bundles(shared, project=first) == compiled

    second = clone("second")
    done = build.restore_bundles(shared, title="Thesis (Azure)", project=second)
    assert done is not None and done.startswith("bundles restored"), done
    restored = second / CACHE_DIR / compiled.name
    assert (restored / "server" / "index.js").read_text() == "// compiled once"
    assert build.restore_bundles(shared, project=second).startswith("bundles already in")
    assert build.restore_bundles(shared, project=clone("changed", "# other")) is None
    assert build.restore_bundles(shared, title="<b>compiled in</b>", project=clone("third")) is None
    monkeypatch.setenv(bundles.REUSE_ENV, "0")  # reuse turned off: nothing restored
    assert build.restore_bundles(shared, project=clone("off")) is None


def _installed_project(root: Path) -> Path:
    """An Evidence project as installed: pages, packages, the bundles `prime` kept, and what
    earlier builds left (Evidence's template copy, the site, the staged tables)."""
    for name, text in {
        "pages/index.md": "# hello",
        "components/Old.svelte": "<p/>",
        "package.json": "{}",
        "node_modules/.package-lock.json": '{"packages": {}}',
        "node_modules/pkg/index.js": "export default 1",
        ".evidence/template/src/app.html": "<html/>",
        ".evidence/pvbench-bundles/k1/bundle.json": "{}",
        "build/index.html": "<old site/>",
        "data/report_runs.parquet": "PAR1",
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_a_working_copy_links_the_packages_and_copies_the_rest(tmp_path, monkeypatch):
    """working_copy (PVBENCH_REPORT_WORKDIR, the report image's steps): the project's files and its
    kept bundles copied, node_modules a link to the install's, Evidence's template copy, the last
    site and its tables left behind; refreshed from the install at every build (a page removed
    there is removed from the copy), keeping the bundles the copy compiled."""
    import pvbench.report.build as build

    installed = _installed_project(tmp_path / "opt" / "reports")
    work = tmp_path / "tmp" / "pvbench" / "evidence"
    build.working_copy(installed, work)
    link = work / "node_modules"
    assert link.is_symlink() and link.resolve() == (installed / "node_modules").resolve()
    assert (work / "pages" / "index.md").read_text() == "# hello"
    assert (work / "components" / "Old.svelte").is_file() and (work / "package.json").is_file()
    assert (work / CACHE_DIR / "k1" / "bundle.json").is_file()  # what the image compiled
    for left in (".evidence/template", "build", "data"):
        assert not (work / left).exists(), left

    (installed / "components" / "Old.svelte").unlink()  # the install changes; the copy has built since
    (installed / "pages" / "index.md").write_text("# changed")
    (work / CACHE_DIR / "k2").mkdir()
    (work / CACHE_DIR / "k2" / "bundle.json").write_text("{}")
    build.working_copy(installed, work)
    assert (work / "pages" / "index.md").read_text() == "# changed"
    assert not (work / "components" / "Old.svelte").exists()
    assert {p.name for p in (work / CACHE_DIR).iterdir()} == {"k1", "k2"}
    assert link.is_symlink() and link.resolve() == (installed / "node_modules").resolve()

    monkeypatch.setenv(build.WORKDIR_ENV, str(installed / "work"))  # inside the project: refused
    with pytest.raises(ReportError, match="inside it"):
        build._working_project(installed.resolve())


def test_the_bundles_key_tells_a_working_copy_from_the_install(tmp_path):
    """Bundles compiled in a working copy name the packages by their real place (Node and Vite
    resolve the link), so they must not be reused where node_modules is elsewhere relative to the
    project (Vite's manifest then misses them): the key covers where node_modules really is, when
    it is a link. A project with its own node_modules keeps the key it had."""
    import pvbench.report.build as build

    installed = _installed_project(tmp_path / "opt" / "reports")
    clone = tmp_path / "clone"
    shutil.copytree(installed, clone)  # its own node_modules: the same key as the install's
    here, there = tmp_path / "tmp" / "a" / "evidence", tmp_path / "tmp" / "b" / "evidence"
    deeper = tmp_path / "tmp" / "c" / "d" / "evidence"
    for work in (here, there, deeper):
        build.working_copy(installed, work)
    key = {p: bundle_key(p, {}) for p in (installed, clone, here, there, deeper)}
    assert key[clone] == key[installed]
    assert key[here] != key[installed]
    assert key[here] == key[there]  # the same layout, relative to the project: the same bundles
    assert key[deeper] != key[here]


def test_a_working_copy_primes_from_the_cache_mount_into_the_install(tmp_path, monkeypatch):
    """`pvbench report prime --cache` in the report image, PVBENCH_REPORT_WORKDIR set: bundles of
    the working copy's layout found in the cache mount are put in the install's project, where
    every step's working copy takes them from; nothing is compiled."""
    import pvbench.report.build as build
    import pvbench.report.bundles as bundles

    installed = _installed_project(tmp_path / "opt" / "reports")
    work = tmp_path / "tmp" / "pvbench" / "evidence"
    monkeypatch.setattr(build, "check_installed", lambda project=None: installed)
    monkeypatch.setenv(build.WORKDIR_ENV, str(work))
    build.working_copy(installed, work)
    key = bundle_key(work, build._evidence_env(work, build.DEFAULT_TITLE))
    shared = tmp_path / "cache-mount"
    (shared / key / "server").mkdir(parents=True)
    (shared / key / "server" / "index.js").write_text("// compiled by an earlier image build")
    (shared / key / "bundle.json").write_text("{}")
    monkeypatch.setattr(build, "build_report", lambda *a, **k: pytest.fail("compiled"))
    done = build.prime_bundles(shared=shared)
    assert "nothing compiled" in done, done
    kept = installed / CACHE_DIR / key
    assert (kept / "server" / "index.js").read_text() == "// compiled by an earlier image build"
    shutil.rmtree(work)  # the next step's pod: a fresh /tmp
    build.working_copy(installed, work)
    assert bundles.is_cached(bundles.bundle_cache(work, build._evidence_env(work, build.DEFAULT_TITLE)))


def test_bundles_are_kept_for_the_few_latest_keys(tmp_path, monkeypatch):
    """bundle_cache names the directory for the key, keeps it and the KEEP - 1 bundles used last,
    removes the rest and any bundle a dead build left half-staged; REUSE_ENV=0 turns reuse off."""
    import pvbench.report.bundles as bundles

    project = tmp_path / "reports"
    (project / "pages").mkdir(parents=True)
    (project / "pages" / "index.md").write_text("# hello")
    root = project / bundles.CACHE_DIR
    for age, name in enumerate(["a", "b", "c", "d.partial-12", "e.partial-13"]):
        (root / name).mkdir(parents=True)
        (root / name / "bundle.json").write_text("{}")
        stamp = time.time() - 10 * (age + 1) - (2 * bundles.STALE_PARTIAL_S if name.startswith("d") else 0)
        os.utime(root / name, (stamp, stamp))
    cache = bundles.bundle_cache(project, {})
    assert cache is not None and cache.parent == root and not bundles.is_cached(cache)
    kept = sorted(p.name for p in root.iterdir())
    assert kept == sorted(["a", "b", "e.partial-13"])  # KEEP - 1 = 2 most recent, the fresh staging
    (cache / "bundle.json").parent.mkdir()
    (cache / "bundle.json").write_text("{}")
    assert bundles.bundle_cache(project, {}) == cache and bundles.is_cached(cache)
    assert bundles.bundle_cache(project, {bundles.REUSE_ENV: "0"}) is None


def test_the_data_manifest_lists_its_files_in_one_order(tmp_path):
    """Evidence lists a source's query files as its concurrent queries finish: sorted after the
    build, two builds of the same tables make the same site."""
    (tmp_path / "data").mkdir()
    manifest = tmp_path / "data" / "manifest.json"
    manifest.write_text(json.dumps({"renderedFiles": {"pvbench": ["b/2.parquet", "a/1.parquet"]}}))
    sort_data_manifest(tmp_path)
    assert json.loads(manifest.read_text()) == {"renderedFiles": {"pvbench": ["a/1.parquet", "b/2.parquet"]}}


def test_the_sources_read_the_tables_of_the_contract():
    """Every report_* table the models make has a source query, and no source reads another."""
    read = {
        table
        for sql in (REPO / "reports" / "sources" / "pvbench").glob("*.sql")
        for table in re.findall(r"(\w+)\.parquet", sql.read_text())
    }
    assert read == set(report_tables())


def test_stage_data_checks_the_contract(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    con = duckdb.connect()
    for table, schema in report_tables().items():
        if table in ("report_fsync", "report_sweep", "report_scaling", "report_lifecycle", "report_latency_slo"):
            continue  # optional: a profile that did not run
        cols = ", ".join(f'NULL::{t} AS "{c}"' for c, t in schema.items())
        con.execute(f"COPY (SELECT {cols}) TO '{data / (table + '.parquet')}' (FORMAT parquet)")
    counts = stage_data(data, tmp_path / "staged")
    assert counts["report_fsync"] == 0 and counts["report_sweep"] == 0 and counts["report_scaling"] == 0
    assert (tmp_path / "staged" / "report_sweep.parquet").is_file()
    # a column missing from the contract is named in the error
    con.execute(f"COPY (SELECT 'c' AS campaign) TO '{data / 'report_overview.parquet'}' (FORMAT parquet)")
    with pytest.raises(ReportError, match="report_overview.parquet lacks column"):
        stage_data(data, tmp_path / "staged")
    # a table cut short (a copy interrupted): named, one line, not DuckDB's traceback
    whole = (data / "report_overview.parquet").read_bytes()
    (data / "report_overview.parquet").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ReportError, match="report_overview.parquet is not a readable Parquet table"):
        stage_data(data, tmp_path / "staged")
    (data / "report_runs.parquet").unlink()
    with pytest.raises(ReportError, match="report_runs.parquet"):
        stage_data(data, tmp_path / "staged")


# ------------------------------------------------------------------ thesis build


@pytest.mark.slow
@THESIS
def test_thesis_overview_shows_table_6_1(thesis_site):
    index = thesis_site.page("index")
    assert index["status"] == 200
    text = index["text"]
    assert "Thesis (Azure)" in text
    for workload, mean_pm_sd in THESIS_MEANS.items():
        assert workload in text and mean_pm_sd in text, workload
    assert PORTWORX_READ_IOPS in text
    for sc in ("Azure Disk Storage", "Portworx", "OpenEBS", "Rook-Ceph"):
        assert sc in text
    for unit in ("IOPS", "MiB/s", "µs"):
        assert unit in text
    # a headline chart per workload: the classes side by side, mean with its 95% CI, unit on the axis
    charts = index["charts"]
    assert len(charts) == 10 and all(painted(c) for c in charts), charts
    labels = [c["label"] for c in charts]
    assert (
        "Random read IOPS — read (IOPS). mean and 95% CI per storage class, higher is better; n = 20 results per class · unit: IOPS"
        in labels
    ), labels
    assert any(lb.startswith("Read latency — read (µs)") and "lower is better" in lb for lb in labels), labels
    assert "the candidate is" not in text  # no candidate run in the thesis: no verdict banner


@pytest.mark.slow
@THESIS
def test_thesis_box_plots_are_drawn_with_unit_and_n(thesis_site):
    page = thesis_site.page("boxplots")
    assert len(page["charts"]) == 10, page["charts"]
    assert all(painted(c) for c in page["charts"]), page["charts"]
    labels = [c["label"] for c in page["charts"]]  # title, unit and n of every figure
    assert all("n = 20 per storage class" in lb and "unit: " in lb for lb in labels), labels
    assert any(lb.startswith("Random read IOPS — read (IOPS)") for lb in labels), labels
    assert any(lb.startswith("Read latency — read (µs)") and lb.endswith("unit: µs") for lb in labels), labels


@pytest.mark.slow
@THESIS
def test_thesis_storage_class_pages(thesis_site):
    for name, mean in (("class-azure", THESIS_MEANS["Write latency"]), ("class-portworx", PORTWORX_READ_IOPS)):
        page = thesis_site.page(name)
        assert page["status"] == 200
        assert len(page["charts"]) == 10 and all(painted(c) for c in page["charts"]), (name, page["charts"])
        assert mean in page["text"]
        assert all("n = 20 results" in c["label"] for c in page["charts"]), page["charts"]
    assert "Azure Disk Storage" in thesis_site.page("storage-classes")["text"]
    assert (thesis_site.site / "storage-classes" / "Azure Disk Storage" / "index.html").is_file()


@pytest.mark.slow
@THESIS
def test_profiles_that_did_not_run_show_a_note(thesis_site):
    fsync = thesis_site.page("fsync-empty")
    assert "No fsync series in this data set" in fsync["text"] and not fsync["charts"]
    sweep = thesis_site.page("sweep-empty")
    assert "No block size / queue depth sweep" in sweep["text"] and not sweep["charts"]
    lifecycle = thesis_site.page("lifecycle-empty")  # imported results: no Kubernetes cells
    assert "No lifecycle timings in this data set" in lifecycle["text"] and not lifecycle["charts"]
    scaling = thesis_site.page("scaling-empty")  # no multi-client cells
    assert "No multi-client cells in this data set" in scaling["text"] and not scaling["charts"]


@pytest.mark.slow
@THESIS
def test_thesis_history_lists_series_too_short_to_judge(thesis_site):
    """4 occasions per class: the History page lists every series, judges none (6 needed) and
    draws no chart; the overview has no history banner."""
    page = thesis_site.page("history-unjudged")
    text = page["text"]
    assert not page["charts"] and "No series has enough occasions to be judged yet" in text
    assert "Every series" in text and "not judged: 4 occasions: change points need at least 6" in text
    assert "confirms a change of level" not in thesis_site.page("index")["text"]


@pytest.mark.slow
@THESIS
def test_thesis_comparisons_show_verdicts(thesis_site):
    page = thesis_site.page("comparisons")
    text = page["text"]
    # the rule, with the settings the verdicts were made with
    assert "α = 0.05" in text and "smallest meaningful change of 5%" in text and "0.95–1.05" in text
    # every pair of the four classes, each a table of 10 workloads with n per side
    pair = section(text, "Portworx against Azure Disk Storage · thesis", " against ")
    read = row(pair, "Random read IOPS — read")
    assert "▲ better" in read and "20 / 20" in read and "IOPS" in read and "3,990 → 35,700" in read
    latency = row(pair, "Write latency — write")  # latency: lower is better, Portworx's is lower
    assert "▲ better" in latency and "↓ lower" in latency and "µs" in latency
    assert "▼ worse" in row(pair, "Sequential write — write")
    openebs = section(text, "OpenEBS against Azure Disk Storage · thesis", " against ")
    assert "● no meaningful difference" in row(openebs, "Mixed read IOPS — read")
    assert text.count("· thesis") == 6
    for verdict in ("▲ better", "▼ worse", "● no meaningful difference"):
        assert verdict in pair + openebs, verdict
    # the thesis has one run and no role labels: those kinds show a note
    assert "No results carry role=baseline and role=candidate labels" in text
    assert "No storage class has two runs" in text
    # one forest plot per comparison: change with its CI against the ±5% band
    assert len(page["charts"]) == 6 and all(painted(c) for c in page["charts"]), page["charts"]
    assert all(c["label"].startswith("Change of the candidate against the baseline (%)") for c in page["charts"])


@pytest.mark.slow
@THESIS
def test_thesis_anomalies_flag_portworx(thesis_site):
    page = thesis_site.page("anomalies")
    text = page["text"]
    over = section(text, "Over the declared limit", "Warm-up: the first repetition is slower")
    assert "5000 IOPS" in over and "200 MB/s" in over  # the declared limits (P30)
    assert "Portworx" in over
    assert "20 of 20 results above the declared 5000 IOPS" in over and "8.8× the limit" in over
    assert "Azure Disk Storage" not in text  # the disk itself is never flagged
    warm = section(text, "Warm-up: the first repetition is slower", "Outliers")
    portworx = row(warm, "Portworx")
    assert "Random read IOPS" in portworx and "first repetition slower in 4 of 4 occasions" in portworx
    assert "OpenEBS" in warm
    labels = [c["label"] for c in page["charts"]]
    assert len(labels) == 5 and all(painted(c) for c in page["charts"]), page["charts"]
    assert (
        "Over the declared limit (IOPS). thesis · highest result vs declared limit; n = 20 results per cell · unit: IOPS"
        in labels
    )
    assert any(lb.startswith("Over the declared limit (MiB/s)") for lb in labels)
    assert sum(lb.startswith("Warm-up: first repetition vs the others") for lb in labels) == 3  # IOPS, MiB/s, µs
    assert "studentized t" in section(text, "Outliers")


@pytest.mark.slow
@THESIS
def test_thesis_occasions_split_the_variance(thesis_site):
    page = thesis_site.page("occasions")
    text = page["text"]
    assert len(page["charts"]) == 44 and all(painted(c) for c in page["charts"]), page["charts"]
    labels = [c["label"] for c in page["charts"]]
    shares = [lb for lb in labels if "share of the variance" in lb]
    assert len(shares) == 4 and all("n = 20 results per workload on 4 occasions" in lb for lb in shares), shares
    boxes = [lb for lb in labels if lb not in shares]
    assert all("n = 5 per occasion, 4 occasions · unit: " in lb for lb in boxes), boxes
    assert "Rook-Ceph: Sequential read — read (MiB/s). n = 5 per occasion, 4 occasions · unit: MiB/s" in labels
    # Rook-Ceph's sequential reads: almost all of the spread is the occasion (a Saturday ran faster)
    rook = row(section(text, "Rook-Ceph · thesis"), "Sequential read — read")
    assert "mostly occasions" in rook and "99%" in rook
    assert "no clear occasion effect" in row(
        section(text, "Azure Disk Storage · thesis", "OpenEBS · thesis"), "Sequential read — read"
    )


@pytest.mark.slow
@THESIS
def test_thesis_methodology_from_the_data(thesis_site):
    text = thesis_site.page("methodology")["text"]
    for expected in (
        "Campaign thesis",
        "Setup",
        "storage class: Portworx",
        "platform (imported): Azure",
        "versions: pvbench",
        "Design",
        "matrix: 4 storage classes × 10 workloads (imported) × 4 occasions × 5 repetitions",
        "values per cell (n): 20",
        "occasions: 1 (Fri 2023-04-21 12:38 UTC)",
        "Units",
        "µs, lower is better",
        "Confidence levels and tests",
        "ratio with its 95% CI from the same estimate",
        "t test on the log of the occasion means",
        "Holm-corrected",
        "mean ± t(0.975, k−1)·sd/√k",
        "Declared limits",
        "5000 IOPS",
        "Resources and cost",
        "fio time not recorded",
        "no cost computed",
    ):
        assert expected in text, expected


# ------------------------------------------------------------------ full build


@pytest.mark.slow
@FULL
def test_fsync_series_is_drawn(full_site):
    page = full_site.page("fsync")
    assert len(page["charts"]) == 2 and all(painted(c) for c in page["charts"]), page["charts"]
    text = page["text"]
    for sc in ("rook-ceph-rbd", "cephfs", "longhorn"):
        assert sc in text
    labels = sorted(c["label"] for c in page["charts"])
    assert "(IOPS)" in labels[0] + labels[1] and "(MiB/s)" in labels[0] + labels[1], labels
    assert all("mean ± sd" in lb and "n = 10 per point" in lb for lb in labels), labels


@pytest.mark.slow
@FULL
def test_sites_with_other_titles_share_the_compiled_bundles(thesis_site, full_site):
    """Each site shows its own title, and the second of the two builds (another title) reused the
    bundles the first compiled: a plain title is written into the built site, not compiled in."""
    assert thesis_site.reused or full_site.reused, "both builds compiled their bundles"
    for site, title, other in (
        (thesis_site, "Thesis (Azure)", "pvbench test report"),
        (full_site, "pvbench test report", "Thesis (Azure)"),
    ):
        index = site.page("index")["text"]
        assert title in index and other not in index, (site.name, index[:300])
        html = (site.site / "index.html").read_text()
        assert title in html and TITLE_PLACEHOLDER not in html
        assert not any(TITLE_PLACEHOLDER.encode() in p.read_bytes() for p in site.site.rglob("*.js")), site.name


@pytest.mark.slow
@FULL
def test_sweep_curves_are_drawn(full_site):
    # the sweep page filters with a Dropdown: its query runs in the browser's DuckDB,
    # on tables loaded through the air-gapped Parquet path
    page = full_site.page("sweep")
    assert len(page["charts"]) == 18, page["charts"]  # 6 group/direction panels × IOPS, MiB/s, latency
    assert all(painted(c) for c in page["charts"]), page["charts"]
    labels = [c["label"] for c in page["charts"]]
    assert all("n = 3 per point" in lb for lb in labels), labels
    assert sum("Mean latency (µs, log scale)" in lb for lb in labels) == 6, labels
    assert "Random read — read" in page["text"] and "Balanced mix 50/50 — write" in page["text"]
    nvme = full_site.page("class-nvme-tcp")
    assert len(nvme["charts"]) == 18 and all(painted(c) for c in nvme["charts"])


@pytest.mark.slow
@FULL
def test_full_report_has_every_profile(full_site):
    index = full_site.page("index")["text"]
    for section in ("imported · thesis", "vshn · synthetic", "sweep · synthetic", "dbench · upgrade"):
        assert section in index
    box = full_site.page("boxplots")
    # one per campaign, profile and workload with a headline (the upgrade's volume lifecycle too;
    # the demo's 10)
    assert len(box["charts"]) == 35 and all(painted(c) for c in box["charts"])
    rbd = full_site.page("class-rook-ceph-rbd")
    # 10 vshn run panels + 2 fsync charts + 18 sweep curves
    assert len(rbd["charts"]) == 30 and all(painted(c) for c in rbd["charts"]), rbd["charts"]


@pytest.mark.slow
@FULL
def test_full_runs_page_selects_a_run(full_site):
    """One report for all runs: the Runs page shows one run (the newest first), the Dropdown another."""
    assert "This data set has 6 runs in 4 campaigns" in full_site.page("index")["text"]
    newest = full_site.page("runs")["text"]
    table = section(newest, "Run after-upgrade", "Failed cells")
    writes = row(table, "Random write IOPS — write")  # 20% slower after the upgrade
    assert "15,500 ± 1,800\tIOPS\t15\tafternoon, evening, morning\t17,500\t0.890×" in writes, writes
    assert "19,400 ± 2,300" not in table
    assert "No failed cells" in newest
    verdicts = section(newest, "Latest run against the run before")
    assert "▼ worse" in row(verdicts, "after-upgrade against before-upgrade\tRandom write IOPS — write")
    picked = full_site.page("runs-before")
    runs = [o.split(" · ")[0] for o in picked["options"]]  # run · when it started, newest first
    # newest first; of the 6 runs the Dropdown's virtual list shows the first few
    assert 3 <= len(runs) <= 6 and runs[:3] == ["after-upgrade", "before-upgrade", "sweep-1"], runs
    table = section(picked["text"], "Run before-upgrade", "Failed cells")
    assert "19,400 ± 2,300\tIOPS\t15" in row(table, "Random write IOPS — write") and "15,500 ± 1,800" not in table


@pytest.mark.slow
@FULL
def test_full_overview_says_whether_the_upgrade_hurt(full_site):
    index = full_site.page("index")
    text = index["text"]
    # the verdict banner at the top: which metrics got worse, by how much, with what confidence,
    # on how many occasions and runs
    banner = text[text.index("openebs-lvm (upgrade)") :][:900]
    # 2 of 4 tests' headline metrics, and the volume lifecycle: attach took ~3x as long
    assert banner.startswith("openebs-lvm (upgrade): the candidate is worse in 3 of 5 headline metrics"), banner
    assert "baseline: 3 occasion(s) in 1 run(s); candidate: 3 occasion(s) in 1 run(s)" in banner, banner
    assert "Random write IOPS — write: −19" in banner and "Write latency — write: +2" in banner, banner
    assert "95% CIs, Holm at α = 0.05" in banner, banner
    assert text.index("openebs-lvm (upgrade)") < text.index("Storage classes")  # where a person lands
    assert len(index["charts"]) >= 24 and all(painted(c) for c in index["charts"])


@pytest.mark.slow
@FULL
def test_full_comparisons_catch_the_upgrade(full_site):
    page = full_site.page("comparisons")
    text = page["text"]
    assert len(page["charts"]) >= 12 and all(painted(c) for c in page["charts"]), page["charts"]
    for heading in (
        "openebs-lvm: role=candidate against role=baseline · upgrade",
        "openebs-lvm: run=after-upgrade against run=before-upgrade · upgrade",
    ):
        part = section(text, heading, " against ")
        for workload in ("Random write IOPS — write", "Write latency — write"):  # 20% slower writes
            assert "▼ worse" in row(part, workload) and "15 / 15" in row(part, workload), (heading, workload)
            assert "3 (1 run) / 3 (1 run)" in row(part, workload), (heading, workload)
        for workload in ("Random read IOPS — read", "Read latency — read"):  # unchanged reads
            assert "● no meaningful difference" in row(part, workload), (heading, workload)
        # every cell's volume lifecycle: pod created -> started, attach ~2 s before, ~6 s after
        assert "▼ worse" in row(part, "Volume lifecycle — volume") and "60 / 60" in row(
            part, "Volume lifecycle — volume"
        ), heading
    # one occasion a side, nothing else: how much days differ is unknown, so no verdict — and why
    sweep = section(text, "rook-ceph-rbd against nvme-tcp · synthetic", " against ")
    assert "▲" not in sweep and "▼" not in sweep and "3 / 3" in sweep and "◌ withheld" in sweep
    assert "day-to-day variation unknown" in sweep
    assert "No results carry role" not in text and "No storage class has two runs" not in text


@pytest.mark.slow
@FULL
def test_full_demo_design_is_judged_and_the_overview_says_which_class_is_faster(full_site):
    """`make demo`'s design (two local classes, dbench, 2 occasions × 3 repetitions, tmpfs 2-40x
    faster than a disk): every comparison judged with its CI, and the overview names the faster
    class. It used to withhold all of them (2 occasions a side were "too few")."""
    text = full_site.page("comparisons")["text"]
    part = section(text, "tmpfs against disk · demo", " against ")
    for workload in ("Random read IOPS — read", "Sequential write — write", "Write latency — write"):
        line = row(part, workload)
        assert "▲ better" in line and "2 (1 run) / 2 (1 run)" in line and "[" in line, line
    assert "◌ withheld" not in part and "prior" in part
    overview = full_site.page("index")["text"]
    assert "tmpfs is faster than disk (demo): better in 10 of 10 judged headline metrics, worse in none" in overview


@pytest.mark.slow
@FULL
def test_full_demo_seconds_are_drawn_and_its_guard_flags_listed(full_site):
    """The demo's cells second by second (#63): the over-time page compares the classes per workload
    (IOPS and p99 per second), a class page draws its latest run's band, lines and heatmap; tmpfs's
    page-cache flag (not excluding: the class is memory) is listed on the anomalies page with the
    fio version, and the methodology page lists every guard of the catalog."""
    over = full_site.page("over-time")
    # a panel per workload and the direction of its series (the mixed test's: its first), 2 charts each
    assert len(over["charts"]) == 18 and all(painted(c) for c in over["charts"]), over["charts"]
    assert "Random read IOPS — read" in over["text"] and "No series in this data set" not in over["text"]
    tmpfs = full_site.page("class-tmpfs")
    assert "Over time" in tmpfs["text"] and all(painted(c) for c in tmpfs["charts"])
    assert sum("Latency over time" in c["label"] for c in tmpfs["charts"]) == 9, tmpfs["charts"]
    anomalies = full_site.page("anomalies")["text"]
    assert "tmpfs: the class is memory" in anomalies and "fio-3.33" in anomalies
    methodology = full_site.page("methodology")["text"]
    for guard in GUARD_LIST:
        assert guard.title in methodology, guard.title


@pytest.mark.slow
@FULL
def test_full_history_draws_the_series_that_moved_and_each_class_its_own(full_site):
    """The History page (#64): only the upgrade's class has 6 occasions (3 a run), so only its 5
    headline series are judged. 3 + 3 occasions cannot show a step at α = 0.05 (the permutation
    test's smallest p is 1/20): no change point, and the slower writes read as a drift, so the
    page draws those 2 series, the candidate run as an event rule on each; every series is listed.
    The class page draws all 5."""
    page = full_site.page("history")
    assert len(page["charts"]) == 2 and all(painted(c) for c in page["charts"]), page["charts"]
    for chart in page["charts"]:
        label = chart["label"]
        assert label.startswith("openebs-lvm: ") and "n = 6 occasions" in label and "drifting" in label, label
    text = page["text"]
    assert "No change point in any series" in text and "Series that moved" in text and "Every series" in text
    lvm = full_site.page("class-openebs-lvm")
    history = [c for c in lvm["charts"] if "occasion means" in c["label"]]
    assert len(history) == 5 and all(painted(c) for c in history), lvm["charts"]
    assert "History" in lvm["text"] and "no change point; no drift" in lvm["text"]


@pytest.mark.slow
@FULL
def test_full_lifecycle_page_shows_each_step_and_the_slower_attach(full_site):
    page = full_site.page("lifecycle")
    text = page["text"]
    assert len(page["charts"]) >= 1 and all(painted(c) for c in page["charts"]), page["charts"]
    for step in ("Claim created → volume bound", "Scheduled → volume attached", "Pod created → benchmark started"):
        assert step in text, step
    assert "openebs-lvm" in text and "No lifecycle timings" not in text
    assert "worse" in text  # the role and run verdicts on pod_start_s


@pytest.mark.slow
@FULL
def test_full_anomalies_and_methodology(full_site):
    anomalies = full_site.page("anomalies")
    assert "No limits declared for this data set" in anomalies["text"]  # aggregated without --limits
    # warm-up charts per campaign and unit: thesis IOPS, MiB/s, µs; upgrade IOPS, µs
    assert len(anomalies["charts"]) == 5 and all(painted(c) for c in anomalies["charts"])
    assert sum("upgrade · first repetition" in c["label"] for c in anomalies["charts"]) == 2
    assert "openebs-lvm" in section(anomalies["text"], "Warm-up: the first repetition is slower", "Outliers")
    occasions = full_site.page("occasions")
    # per class with occasions: a share chart and a box plot per headline (the upgrade's lifecycle
    # too; the demo's two classes, 11 each)
    assert len(occasions["charts"]) == 72 and all(painted(c) for c in occasions["charts"])
    assert "openebs-lvm · upgrade" in occasions["text"]
    assert "cephfs ·" not in occasions["text"]  # one occasion only: no split
    text = section(full_site.page("methodology")["text"], "Campaign upgrade")
    for expected in (
        "provisioner local.csi.openebs.io",
        "kernel 6.1.0-18-amd64",
        "Kubernetes v1.31.4",
        "× 6 occasions × 5 repetitions",
        "randomized interleaving",
        "seed 2026",
        "ramp 2s + 15s measured",
        "fio time 1,800 s",
        "no prices declared",
    ):
        assert expected in text, expected


@pytest.mark.slow
@THESIS
def test_a_campaign_without_results_still_gets_its_report(thesis_site, tmp_path):
    """Every cell failed, or nothing ran yet: every table empty. SvelteKit used to fail such a build
    (nothing linked to a storage class page; reports/svelte.config.js gives the route an entry);
    the site says there is nothing, and where failures would be. Built with the thesis site's
    title, so it reuses that site's bundles."""
    write_empty_tables(tmp_path / "data")
    site = build_report(tmp_path / "data", tmp_path / "site", title="Thesis (Azure)", quiet=True)
    assert REUSED_LOG_LINE in (check_installed() / BUILD_LOG).read_text()
    classes = (site / "storage-classes" / "index.html").read_text()
    assert "No storage class has results in this data set" in classes
    assert "No results for storage class" in (site / "storage-classes" / "_none" / "index.html").read_text()
    assert (site / "index.html").is_file() and (site / "runs" / "index.html").is_file()


@pytest.mark.parametrize(
    "signum", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=["SIGINT", "SIGTERM", "SIGKILL"]
)
def test_a_stopped_build_stops_evidence_too(reports, tmp_path, signum):
    """Evidence runs in a session of its own (so a timeout can stop its whole group), which Ctrl-C
    at the terminal never reaches: stopping `pvbench report build` left it building, writing into
    the project under the next build once the project's lock was released. Now Ctrl-C (SIGINT to
    pvbench) and SIGTERM (`kill`, a deleted pod) stop Evidence's whole session with pvbench, which
    says so in one line and exits 128 + the signal; and after SIGKILL (the OOM killer), which
    pvbench cannot handle, Evidence's session ends too (test_aggregate_stopped's keeper test shows
    the keeper doing it for a command that, unlike Evidence here, writes nothing meanwhile)."""
    project = evidence_project_copy(reports, tmp_path / "reports")
    write_empty_tables(tmp_path / "data")
    build = subprocess.Popen(
        report_build_command(tmp_path / "data", tmp_path / "site"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PVBENCH_REPORTS_DIR": str(project)},
    )
    evidence: list[int] = []  # pvbench's child, the leader of a session of its own (start_new_session)
    deadline = time.monotonic() + 60
    while not evidence and build.poll() is None and time.monotonic() < deadline:
        evidence = children(build.pid)
        time.sleep(0.1)
    assert evidence and build.poll() is None, "Evidence did not start"
    time.sleep(2)  # under way
    build.send_signal(signum)
    _, said = build.communicate(timeout=60)
    if signum == signal.SIGKILL:
        assert build.returncode == -signal.SIGKILL
    else:
        assert build.returncode == 128 + signum, said
        assert f"report build interrupted by {signal.Signals(signum).name}" in said and "Traceback" not in said, said
    left = []
    deadline = time.monotonic() + 60  # its grace: SIGTERM, then SIGKILL after 10 s (a build takes minutes)
    while time.monotonic() < deadline:
        left = [p.pid for p in processes() if p.session in evidence and p.alive]
        if not left:
            break
        time.sleep(0.1)
    assert left == [], "Evidence's processes outlived pvbench"
    assert not (tmp_path / "site").exists()


# the ids Evidence's components draw at random for each render (menus, tabs): "Gc3Sf7R_W4"
_RANDOM_ID = re.compile(rb'"[A-Za-z0-9_-]{10}"')


@pytest.mark.slow
@THESIS
def test_a_rebuild_reuses_the_bundles_and_makes_the_same_site(thesis_site, tmp_path):
    """The next build of the same pages and title reuses the bundles the first compiled
    (reports/scripts/sveltekit-bundles.mjs, pvbench.report.bundles): it takes a fraction of the
    time and makes the same site: the same files, each the same but for the random ids of each
    render. Under api/, the query results prerendered for the browser are named by a hash of their
    Arrow bytes, and an Evidence chart's own query (e.g. `runs_data`) orders ties as DuckDB's
    threads happen to: the same queries, by name, on the same pages.

    SvelteKit's analysis of the routes is cached with the bundles too: of the two builds compared,
    one analyses the routes and the other reuses that analysis (the thesis site built first did if
    it compiled the bundles; if it reused them, this one analyses again, the cached one set aside)."""
    analyses = list((check_installed() / CACHE_DIR).glob(f"*/{ANALYSIS_FILE}"))
    assert analyses, "the bundles were stored without the routes' analysis"
    analyse_again = thesis_site.reused  # the thesis site reused the cached analysis: analyse here
    if analyse_again:
        for file in analyses:
            file.rename(file.with_suffix(".aside"))
    try:
        started = time.monotonic()
        site = build_report(thesis_site.site.parent / "data", tmp_path / "site", title="Thesis (Azure)", quiet=True)
        took = time.monotonic() - started
    finally:
        if analyse_again:
            for file in analyses:
                file.with_suffix(".aside").rename(file)
    log = (check_installed() / BUILD_LOG).read_text()
    assert REUSED_LOG_LINE in log, log[-3000:]
    assert (ANALYSIS_REUSED_LOG_LINE in log) != analyse_again, log[-3000:]

    def listing(root: Path) -> list[Path]:
        return sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file() and p.parts[len(root.parts)] != "api")

    def queries(root: Path) -> dict[str, list[str]]:
        return {
            str(p.relative_to(root)): sorted(json.loads(p.read_text())) for p in root.glob("api/*/*/all-queries.json")
        }

    files = listing(site)
    assert files == listing(thesis_site.site)
    differ = []
    for name in files:
        mine, first = (site / name).read_bytes(), (thesis_site.site / name).read_bytes()
        if name.suffix == ".html":
            mine, first = _RANDOM_ID.sub(b'"id"', mine), _RANDOM_ID.sub(b'"id"', first)
        if mine != first:
            differ.append(str(name))
    assert not differ, differ
    assert queries(site) == queries(thesis_site.site) and queries(site)
    print(
        f"rebuilt with the bundles reused in {took:.0f} s ({'routes analysed again' if analyse_again else 'analysis reused'})"
    )


@pytest.mark.slow
@pytest.mark.parametrize("which", [pytest.param("thesis_site", marks=THESIS), pytest.param("full_site", marks=FULL)])
def test_no_request_leaves_loopback_and_no_errors(which, request):
    site: Site = request.getfixturevalue(which)
    assert site.browse["external"] == []
    assert site.browse["bad"] == []  # no 404s etc. on the site itself
    # the site's data really went through the browser's DuckDB (Parquet via parquet-wasm)
    assert any(u.endswith(".parquet") for u in site.browse["requests"])
    assert any("arrow1_bg" in u and u.endswith(".wasm") for u in site.browse["requests"])
    # the hashed assets (DuckDB's WebAssembly and the JavaScript every page loads) came once, then
    # from the browser's cache: the server says they may be kept (pvbench.report.serve)
    assert site.browse["refetched"] == []
    for page in site.browse["pages"]:
        assert page["status"] == 200, page["url"]
        assert not page["consoleErrors"], (page["url"], page["consoleErrors"])
        # Evidence's warnings (a DataTable searched over rows that are not a query showed "Search
        # Failed" on the page, and prerendering carried it into other pages)
        assert "Search Failed" not in page["text"], page["url"]
        for chart in page["charts"]:  # every figure carries its unit and n
            assert "n = " in chart["label"] and any(u in chart["label"] for u in UNITS), chart
        shot = Path(page["screenshot"])
        assert shot.is_file() and shot.stat().st_size > 20_000
    assert not [str(p) for p in site.site.rglob("*.html") if b"Search Failed" in p.read_bytes()]


# Where the Argo UI's artifact view serves a run's report (argo-server's /artifact-files/<namespace>/
# workflows/<workflow>/<node-id>/outputs/<artifact>/<file>)
ARGO_ARTIFACT_PREFIX = "/artifact-files/pvbench/workflows/wf-1/node-2/outputs/report/"


class _StaticFiles(SimpleHTTPRequestHandler):
    """A plain static file server, as an S3 website or an artifact server is to the site: no
    pvbench code, no caching headers, a folder's index.html for its path; it notes every path asked."""

    asked: list[str]
    extensions_map = {**SimpleHTTPRequestHandler.extensions_map, ".wasm": "application/wasm"}

    def send_head(self):
        self.asked.append(unquote(urlsplit(self.path).path))
        return super().send_head()

    def log_message(self, format: str, *args) -> None:  # noqa: A002
        pass


def serve_under_prefixes(
    site: Path, root: Path, prefixes: tuple[str, ...]
) -> tuple[ThreadingHTTPServer, str, list[str]]:
    """Serve ``site`` at each of ``prefixes`` (and nothing at the web root) from a folder tree
    under ``root``; the server, its base URL and the paths it was asked for."""
    for prefix in prefixes:
        place = root / prefix.strip("/")
        place.parent.mkdir(parents=True, exist_ok=True)
        place.symlink_to(site, target_is_directory=True)
    asked: list[str] = []
    handler = type("StaticFiles", (_StaticFiles,), {"asked": asked})
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(root)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    return server, f"http://{host}:{port}", asked


@pytest.mark.slow
@THESIS
def test_the_site_works_under_any_path_prefix(reports, thesis_site, tmp_path):
    """One build opens from any path prefix, with no server of ours: the Argo UI's artifact view
    (ARGO_ARTIFACT_PREFIX), an S3 website (…/report/index.html), an ingress sub-path. The site
    (thesis_site's, built before the prefixes were chosen) is served by a plain static server at
    the Argo path and at a prefix made up after the build; nothing is served at the web root.
    Charts are drawn (the data came through the browser's DuckDB), links of the page's text and of
    the sidebar lead to pages under the same prefix, a page two levels down loads on its own, and
    no request leaves the prefix (reports/svelte.config.js paths.relative,
    reports/scripts/relative-base.mjs)."""
    ingress = f"/team-{secrets.token_hex(4)}/reports/thesis/"  # no build could know it
    server, url, asked = serve_under_prefixes(thesis_site.site, tmp_path / "www", (ARGO_ARTIFACT_PREFIX, ingress))
    try:
        result = browse(
            reports,
            url,
            ARTIFACTS / "prefix",
            [
                {"name": "index", "path": ARGO_ARTIFACT_PREFIX, "minCharts": 10},
                # a link of the page's markdown ([box plots](/boxplots/)), clicked
                {"name": "boxplots", "path": ARGO_ARTIFACT_PREFIX + "boxplots/", "minCharts": 10, "via": "box plots"},
                # the sidebar's link (Evidence's layout), clicked
                {
                    "name": "comparisons",
                    "path": ARGO_ARTIFACT_PREFIX + "comparisons/",
                    "minCharts": 6,
                    "via": "Comparisons",
                },
                # a link the page makes from the data (/storage-classes/{class}/), clicked
                {"name": "classes", "path": ingress + "storage-classes/", "load": True},
                {"name": "portworx", "path": ingress + "storage-classes/Portworx/", "minCharts": 10, "via": "Portworx"},
                # a page two levels down, loaded on its own; and index.html as an S3 website's link names it
                {
                    "name": "azure",
                    "path": ingress + "storage-classes/Azure%20Disk%20Storage/",
                    "minCharts": 10,
                    "load": True,
                },
                {"name": "index-html", "path": ingress + "index.html", "minCharts": 10, "load": True},
            ],
            follow_links=True,
        )
    finally:
        server.shutdown()
        server.server_close()
    for page in result["pages"]:
        assert page["status"] == 200, page["url"]
        assert not page["consoleErrors"], (page["url"], page["consoleErrors"])
        assert all(painted(c) for c in page["charts"]), (page["url"], page["charts"])
    pages = {p["name"]: p for p in result["pages"]}
    assert len(pages["index"]["charts"]) == 10 and len(pages["index-html"]["charts"]) == 10
    assert THESIS_MEANS["Random read IOPS"] in pages["index"]["text"]
    assert PORTWORX_READ_IOPS in pages["index-html"]["text"]
    assert len(pages["boxplots"]["charts"]) == 10 and len(pages["portworx"]["charts"]) >= 10
    assert "Portworx" in pages["portworx"]["title"] + pages["portworx"]["text"]
    assert result["external"] == [] and result["bad"] == []  # no 404: nothing asked where it is not
    # every request stayed under the prefix its page was opened at: none to the web root
    origin = url
    outside = [u for u in result["requests"] if not u.startswith((origin + ARGO_ARTIFACT_PREFIX, origin + ingress))]
    assert not outside, outside
    assert not [p for p in asked if not p.startswith((ARGO_ARTIFACT_PREFIX, ingress))]
    # the data: the manifest and the Parquet tables, and DuckDB's WebAssembly, under both prefixes
    for prefix in (ARGO_ARTIFACT_PREFIX, ingress):
        assert prefix + "data/manifest.json" in asked, prefix
        assert any(p.startswith(prefix + "data/") and p.endswith(".parquet") for p in asked), prefix
        assert any(p.startswith(prefix + "_app/immutable/") and p.endswith(".wasm") for p in asked), prefix


@pytest.mark.slow
@THESIS
def test_the_built_pages_name_no_root_absolute_url(thesis_site):
    """The prerendered pages carry relative URLs only (./_app/…, ../runs/, ../../storage-classes/x/):
    a root-absolute one (href="/runs/") would leave the prefix the site is served under."""
    absolute = re.compile(rb"""\b(?:href|src|action)=["']?/(?!/)[^"'\s>]*""")
    found = {}
    for page in thesis_site.site.rglob("*.html"):
        hits = absolute.findall(page.read_bytes())
        if hits:
            found[str(page.relative_to(thesis_site.site))] = sorted({h.decode() for h in hits})[:5]
    assert not found, found
    index = (thesis_site.site / "index.html").read_text()
    assert 'href="./_app/immutable/' in index and 'href="./boxplots' in index
    nested = (thesis_site.site / "storage-classes" / "Portworx" / "index.html").read_text()
    assert 'href="../../_app/immutable/' in nested


def _fake_site(root: Path, text: str, size: int = 0) -> Path:
    (root / "_app").mkdir(parents=True)
    (root / "index.html").write_text(text)
    (root / "_app" / "bundle.js").write_bytes(b"x" * size)
    return root


def test_a_site_replaces_the_report_in_its_folder_only_once_it_is_whole(tmp_path):
    """build_report's last step (report.build._install_site): the new site is copied beside the
    folder and renamed into place. On a disk without room for it, the report that was there stays
    as it was and the error is one line (it used to be removed first, and the failed copy's
    traceback listed every file)."""
    from pvbench.report.build import _install_site

    out = tmp_path / "site"
    _install_site(_fake_site(tmp_path / "built1", "first"), out)
    _install_site(_fake_site(tmp_path / "built2", "second"), out)
    assert (out / "index.html").read_text() == "second" and sorted(p.name for p in tmp_path.iterdir()) == [
        "built1",
        "built2",
        "site",
    ]
    disk = tmp_path / "small"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        _install_site(_fake_site(tmp_path / "built3", "third"), disk / "site")
        with pytest.raises(ReportError) as err:
            _install_site(_fake_site(tmp_path / "built4", "fourth", size=256 * 1024), disk / "site")
        assert "cannot write the report to" in str(err.value) and "No space left" in str(err.value)
        assert "\n" not in str(err.value)
        assert (disk / "site" / "index.html").read_text() == "third"
        assert sorted(p.name for p in disk.iterdir()) == ["site"]  # nothing half-copied left beside it
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)
