"""Build the Evidence report (reports/) from the analytics layer's report_* Parquet tables.

The Evidence project lives in the repository's ``reports/`` (or ``$PVBENCH_REPORTS_DIR``) and
must have been installed with ``ci/install-report.sh`` (npm ci + the air-gapped Parquet patch).
A build copies the tables into ``reports/data/``, runs ``evidence sources`` and
``evidence build`` there and copies the static site out: about 2 minutes and 2 GB of RAM when it
compiles the site's bundles, under a minute and 1 GB when it reuses those of an earlier build of
the same pages (pvbench.report.bundles). Nothing is downloaded: the build works on an air-gapped
machine.
"""

from __future__ import annotations

import fcntl
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import deque
from contextlib import contextmanager, nullcontext, suppress
from pathlib import Path
from typing import Iterator, Mapping

from rich.console import Console

from pvbench.report.bundles import (
    BUILD_LOCK,
    BUILD_LOG,
    BUNDLES_PATCH_MARKER,
    CACHE_DIR,
    CACHE_ENV,
    PROJECT_OUTPUTS,
    REUSED_LOG_LINE,
    bundle_cache,
    is_cached,
    restore_bundle,
    share_bundle,
)
from pvbench.stopping import start_group, stop_group
from pvbench.store.locks import folder_lock

# Tables that are empty when a profile did not run (the pages show a note instead); a data
# directory may lack them.
OPTIONAL_TABLES = (
    "report_fsync",
    "report_sweep",
    "report_failures",
    "report_scaling",
    "report_lifecycle",
    "report_latency_slo",
)


def report_tables() -> dict[str, dict[str, str]]:
    """The data contract: the tables the report pages read (the last layer, report_*) with their
    columns (name → DuckDB type), as the models make them (pvbench.pipeline.table_schemas: the
    models run over no results). Nothing here is typed by hand: a page that reads a column no
    model makes fails the build on the staged tables (its query's error, which Evidence only logs,
    fails build_report), and a data directory whose table lacks a column fails stage_data."""
    # imported here: the pipeline (DuckDB, NumPy, the models) is 0.25 s that `pvbench --help`,
    # `report serve` and `report locate` (which import this module) never use
    from pvbench.pipeline import table_schemas

    return {table: columns for table, columns in table_schemas().items() if table.startswith("report_")}


PATCH_MARKER = "pvbench-offline-parquet"
DEFAULT_TITLE = "pvbench report"
# The site title is inlined by Vite (VITE_PVBENCH_TITLE), so each title used to compile bundles of
# its own (pvbench.report.bundles). A plain title (letters, digits, spaces and punctuation that
# needs no escaping in HTML nor in a JavaScript string of any quote) is instead written into the
# built site in place of this placeholder, which the bundles are compiled with: every plain title
# shares one set of bundles, so `--title` costs no compile. Any other title is compiled in.
TITLE_PLACEHOLDER = "pvbench-site-title-7f3e1c"
_PLAIN_TITLE = re.compile(r"[\w .,:;()+\-/#@%]{1,120}")
_TITLED_SUFFIXES = (".html", ".js", ".json")
STEP_TIMEOUT_S = 900.0
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


# Node's heap for the build (MiB): a bound, so the build's memory does not depend on the machine
# (Node's default is ~4 GiB on a large one; the build then peaked at 3.5 GB RSS). The client build
# holds ~1.5 GB of heap whatever the campaign's size (1,000 or 100,000 results alike), so 2 GiB
# leaves a margin; within the `report` pod's 5 GiB. A given NODE_OPTIONS with its own
# --max-old-space-size wins.
REPORT_HEAP_MIB = 2048
# --expose-gc: the patched SvelteKit (reports/scripts/sveltekit-workers.mjs, v2) collects the
# build's garbage before each of its worker threads starts; with the workers ended when done and
# the client build started once the server build is freed, the build of a 100,000-result
# campaign's report peaks at ~2 GiB instead of 2.98 GiB (pvbench_lab.bench_aggregate). Both patched files
# carry the marker; an install with an older version of the patch is refused.
WORKERS_PATCH_MARKER = "pvbench-sveltekit-workers v2"
WORKERS_PATCHED_FILES = ("src/utils/fork.js", "src/exports/vite/index.js")
# reports/scripts/sveltekit-bundles.mjs: the build reuses the bundles of an earlier build (pvbench.report.bundles)
BUNDLES_PATCHED_FILE = "src/exports/vite/index.js"
# reports/scripts/relative-base.mjs, with paths.relative in reports/svelte.config.js: the built site
# finds the path prefix it is served under in the browser (the Argo UI's artifact view, an S3
# website, an ingress sub-path), so one build works under any prefix; without it, only at a web root
RELATIVE_BASE_MARKER = "pvbench-relative-base v1"
RELATIVE_BASE_PATCHED_FILES = (  # in node_modules/@evidence-dev/
    "sdk/src/utils/svelte/index.js",
    "sdk/src/build-dev/svelte/processors/addBasePathToHrefAndSrc/addBasePathToHrefAndSrc.js",
    "evidence/template/src/hooks.js",  # added: SvelteKit's reroute hook (…/index.html is …/)
)


# glibc's malloc for the build's Node (each unless set already): at most 2 arenas for its threads,
# and blocks over 128 KiB mapped on their own and given back when freed, with the heap's free top
# trimmed from 128 KiB (glibc's defaults raise the mapping threshold up to 32 MiB as blocks are freed,
# and keep what the route-analysing and prerendering worker threads freed).
# pvbench_lab.bench_report_build prints the build's peak RSS with and without them, side by side
# (1.90–1.93 GiB with, 2.02 GiB without, no slower). musl (Alpine) ignores them.
MALLOC_ENV = {"MALLOC_ARENA_MAX": "2", "MALLOC_MMAP_THRESHOLD_": "131072", "MALLOC_TRIM_THRESHOLD_": "131072"}


def _build_env(given: Mapping[str, str]) -> dict[str, str]:
    """The environment variables the build needs, beside ``given`` (the process's): NODE_OPTIONS
    and glibc's malloc settings, a user's own kept."""
    return {
        **{name: value for name, value in MALLOC_ENV.items() if name not in given},
        "NODE_OPTIONS": _node_options(given.get("NODE_OPTIONS", "")),
    }


def _node_options(given: str) -> str:
    """The given NODE_OPTIONS kept as they are (quoting and all), with what the build needs added."""
    added = [] if "--max-old-space-size" in given else [f"--max-old-space-size={REPORT_HEAP_MIB}"]
    if "--expose-gc" not in given.split():
        added.append("--expose-gc")
    return " ".join([given.strip(), *added]).strip()


class ReportError(RuntimeError):
    """The report could not be built; the message says why and what to do."""


def reports_dir() -> Path:
    """The Evidence project: $PVBENCH_REPORTS_DIR, else the repository's reports/."""
    env = os.environ.get("PVBENCH_REPORTS_DIR") or os.environ.get("PVBENCH_REPORT_DIR")
    if env:
        return Path(env).expanduser().resolve()
    return (Path(__file__).resolve().parents[3] / "reports").resolve()


def check_installed(project: Path | None = None) -> Path:
    """The Evidence project directory, or a ReportError saying how to install it."""
    project = project or reports_dir()
    hint = "run ci/install-report.sh (npm ci in reports/ plus pvbench's patches)"
    if not (project / "package.json").is_file() or not (project / "evidence.config.yaml").is_file():
        raise ReportError(
            f"no Evidence project at {project}; set PVBENCH_REPORTS_DIR to the pvbench reports/ directory"
        )
    if shutil.which("node") is None:
        raise ReportError(f"node is not installed (Node.js 20 with npm is needed); then {hint}")
    cli = project / "node_modules" / "@evidence-dev" / "evidence" / "cli.js"
    if not cli.is_file():
        raise ReportError(f"{project}/node_modules is missing: {hint}")
    usql = project / "node_modules" / "@evidence-dev" / "universal-sql" / "src" / "client-duckdb" / "node.js"
    if not usql.is_file() or PATCH_MARKER not in usql.read_text(encoding="utf-8", errors="replace"):
        raise ReportError(
            "the Evidence install lacks the air-gapped Parquet patch (the build would try to download "
            f"DuckDB's parquet extension and hang offline): {hint}"
        )
    kit = project / "node_modules" / "@sveltejs" / "kit"
    for patched in WORKERS_PATCHED_FILES:
        file = kit / patched
        if not file.is_file() or WORKERS_PATCH_MARKER not in file.read_text(encoding="utf-8", errors="replace"):
            raise ReportError(
                f"the Evidence install lacks {WORKERS_PATCH_MARKER} in SvelteKit's {patched}, the patch that "
                f"makes SvelteKit's build workers and server build give memory back (the build would peak "
                f"~1 GiB higher): {hint}"
            )
    vite_plugin = kit / BUNDLES_PATCHED_FILE
    if BUNDLES_PATCH_MARKER not in vite_plugin.read_text(encoding="utf-8", errors="replace"):
        raise ReportError(
            f"the Evidence install lacks {BUNDLES_PATCH_MARKER} in SvelteKit's {BUNDLES_PATCHED_FILE}, the patch "
            f"that lets a build reuse the site's compiled bundles (every build would take ~2 minutes): {hint}"
        )
    for patched in RELATIVE_BASE_PATCHED_FILES:
        file = project / "node_modules" / "@evidence-dev" / patched
        if not file.is_file() or RELATIVE_BASE_MARKER not in file.read_text(encoding="utf-8", errors="replace"):
            raise ReportError(
                f"the Evidence install lacks {RELATIVE_BASE_MARKER} in @evidence-dev/{patched}, the patch that "
                f"makes the built site work under any path prefix (it would work at a web root only): {hint}"
            )
    return project


def _columns(con, path: Path) -> dict[str, str]:
    import duckdb

    try:
        rows = con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(path)]).fetchall()
    except duckdb.Error as exc:  # truncated (a copy cut short), not Parquet at all
        why = str(exc).splitlines()[0]
        raise ReportError(
            f"{path} is not a readable Parquet table ({why}): write the tables again with `pvbench aggregate --out DIR`"
        ) from exc
    return {r[0]: r[1] for r in rows}


def stage_data(data_dir: Path, target: Path) -> dict[str, int]:
    """Check the report_* tables against the contract (report_tables) and copy them into ``target``.

    A missing optional table (a profile that did not run) is written empty, with the columns its
    model gives it. Returns row counts.
    """
    import duckdb  # pvbench's own DuckDB, only to check and write Parquet

    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise ReportError(f"data directory {data_dir} does not exist (write it with `pvbench aggregate --out DIR`)")
    contract = report_tables()
    present = {p.stem for p in data_dir.glob("report_*.parquet")}
    missing_required = [t for t in contract if t not in present and t not in OPTIONAL_TABLES]
    if missing_required:
        raise ReportError(
            f"{data_dir} lacks {', '.join(t + '.parquet' for t in missing_required)}: "
            "point --data at the Parquet output of `pvbench aggregate`"
        )
    target.mkdir(parents=True, exist_ok=True)
    for old in target.glob("*.parquet"):
        old.unlink()
    counts: dict[str, int] = {}
    con = duckdb.connect()
    try:
        problems = []
        # one set of tables: an aggregation writing into data_dir meanwhile replaces its set once
        # this copy is done, not in the middle of it (outputs.write_parquet takes the same lock)
        with folder_lock(data_dir, shared=True):
            for table, schema in contract.items():
                src = data_dir / f"{table}.parquet"
                dst = target / f"{table}.parquet"
                if not src.is_file():
                    _write_empty(con, dst, schema)
                    counts[table] = 0
                    continue
                have = _columns(con, src)
                lacking = [c for c in schema if c not in have]
                if lacking:
                    problems.append(f"{table}.parquet lacks column(s) {', '.join(lacking)}")
                    continue
                shutil.copyfile(src, dst)
                counts[table] = con.execute("SELECT count(*) FROM read_parquet(?)", [str(dst)]).fetchone()[0]
        if problems:
            raise ReportError("the data does not match the report's contract: " + "; ".join(problems))
    finally:
        con.close()
    return counts


def _write_empty(con, dst: Path, schema: Mapping[str, str]) -> None:
    cols = ", ".join(f'NULL::{typ} AS "{col}"' for col, typ in schema.items())
    con.execute(f"COPY (SELECT {cols} LIMIT 0) TO '{_sql_str(dst)}' (FORMAT parquet)")


def _sql_str(path: Path) -> str:
    return str(path).replace("'", "''")


# Build in a working copy of the project at this path (made and refreshed by every build) rather
# than in the project itself: for an install that may not be written, as the report image's is
# (its pods have a read-only root filesystem and a writable /tmp). The image sets it.
WORKDIR_ENV = "PVBENCH_REPORT_WORKDIR"
# What a working copy does not copy: what a build writes and the packages (linked instead); of
# .evidence/, only Evidence's copy of its template and the log (the kept bundles are added).
_NOT_COPIED = PROJECT_OUTPUTS - {".evidence"}
_EVIDENCE_NOT_COPIED = frozenset({"template", BUILD_LOG.name})  # .evidence/: Evidence's copy of its template, the log


def _working_project(installed: Path) -> Path:
    """Where a build of ``installed``'s pages happens: the project itself, or its working copy."""
    workdir = os.environ.get(WORKDIR_ENV, "").strip()
    if not workdir:
        return installed
    path = Path(workdir).expanduser().resolve()
    if path == installed or installed in path.parents:
        raise ReportError(
            f"{WORKDIR_ENV}={workdir} is the Evidence project {installed} or inside it: give another directory"
        )
    return path


def _replace_with_nothing(target: Path) -> None:
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif target.exists() or target.is_symlink():
        target.unlink()


def _replace(source: Path, target: Path) -> None:
    """``target`` made a copy of ``source`` (a file, a link or a folder), whatever it was before."""
    _replace_with_nothing(target)
    if source.is_dir() and not source.is_symlink():
        shutil.copytree(source, target, symlinks=True)
    else:
        shutil.copy2(source, target, follow_symlinks=False)


def working_copy(installed: Path, workdir: Path) -> None:
    """Make ``workdir`` a project that builds ``installed``'s pages (WORKDIR_ENV): its files copied
    as they are now (what the copy had of an earlier version replaced or removed), its compiled
    bundles added to those the copy has, and node_modules a link to the install's, which a build
    only reads. A copy of node_modules (~700 MB, ~38,000 files) was ~8 s of every report step on
    Kubernetes and that much of the pod's /tmp. The bundles compiled in a working copy name the
    packages by where they really are (bundle_key tells the layouts apart), so the report image
    compiles its bundles in a working copy at the path its steps use. Called under the copy's lock."""
    workdir.mkdir(parents=True, exist_ok=True)
    names = {entry.name for entry in installed.iterdir()}
    for target in workdir.iterdir():  # what the install no longer has (a page folder removed)
        if target.name not in names and target.name not in PROJECT_OUTPUTS:
            _replace_with_nothing(target)
    for entry in installed.iterdir():
        if entry.name in _NOT_COPIED:
            continue
        if entry.name != ".evidence" or not entry.is_dir():
            _replace(entry, workdir / entry.name)
            continue
        for item in entry.iterdir():
            if item.name in _EVIDENCE_NOT_COPIED:
                continue
            if item.name == CACHE_DIR.name and item.is_dir():
                for bundle in item.iterdir():
                    if is_cached(bundle):
                        share_bundle(bundle, workdir / CACHE_DIR)
                continue
            (workdir / ".evidence").mkdir(exist_ok=True)
            _replace(item, workdir / ".evidence" / item.name)
    link, packages = workdir / "node_modules", (installed / "node_modules").resolve()
    if not (link.is_symlink() and link.resolve() == packages):
        _replace_with_nothing(link)
        link.symlink_to(packages, target_is_directory=True)


def _keep_in_install(project: Path, installed: Path, cache: Path | None) -> None:
    """Bundles a working copy has (compiled, or restored from a cache mount) kept in the install's
    project too: what the next working copy starts with. An install that may not be written (the
    report image's, at run time) keeps the ones it has."""
    if project != installed and is_cached(cache):
        with suppress(OSError):
            share_bundle(cache, installed / CACHE_DIR)


@contextmanager
def _project_lock(project: Path) -> Iterator[None]:
    """One build at a time per Evidence project (it builds in place)."""
    lock_path = project / BUILD_LOCK
    with open(lock_path, "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            Console(stderr=True).print(f"waiting for another report build in {project} …")
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# How Evidence reports a page query that failed while prerendering ("<query> | Error in Query! <why>"):
# `evidence build:strict` logs it and still exits 0, shipping a page that shows the error.
_QUERY_ERROR = re.compile(r"^(?P<query>\S+) \| Error in Query! (?P<why>.+)$")


def _next_line(lines: queue.Queue[str | None]) -> str | None:
    """The step's next line of output; "" after half a second without one; None at its end."""
    try:
        return lines.get(timeout=0.5)
    except queue.Empty:
        return ""


def _run_step(
    cmd: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    log_path: Path,
    label: str,
    status,
    timeout_s: float,
    query_errors_fail: bool = False,
) -> None:
    """Run one Evidence command, streaming its output into the log and the spinner. With
    ``query_errors_fail``, a page query that failed fails the step, though Evidence exits 0."""
    started = time.monotonic()
    tail: deque[str] = deque(maxlen=40)
    failed_queries: dict[str, str] = {}
    lines: queue.Queue[str | None] = queue.Queue()
    with open(log_path, "a", encoding="utf-8") as log:
        log.write(f"\n$ {' '.join(cmd)}\n")
        log.flush()
        proc = start_group(  # Evidence ends with pvbench, even one killed outright
            cmd,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
        )

        def reader() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=reader, daemon=True).start()
        last = ""
        try:
            while (line := _next_line(lines)) is not None:
                if line:
                    clean = _ANSI.sub("", line).rstrip()
                    log.write(clean + "\n")
                    if clean.strip():
                        tail.append(clean)
                        last = clean.strip()
                        failed = _QUERY_ERROR.match(last)
                        if failed:
                            failed_queries.setdefault(failed["query"], failed["why"])
                elapsed = time.monotonic() - started
                if status is not None:
                    status.update(f"[bold]{label}[/] {elapsed:4.0f}s  [dim]{last[:70]}[/]")
                if elapsed > timeout_s:
                    raise ReportError(
                        f"{label} did not finish within {timeout_s:.0f}s (log: {log_path}). If it hung, check "
                        "that ci/install-report.sh applied the air-gapped Parquet patch."
                    )
            code = proc.wait()
        except BaseException:
            # stopped (Ctrl-C, SIGTERM, a timeout, an error here): Evidence goes too. It runs in a
            # session of its own, which Ctrl-C at the terminal never reaches; left running, it went
            # on writing reports/build/ under the next build once the project's lock was released
            stop_group(proc, signal.SIGTERM)
            raise
    if code != 0:
        raise ReportError(f"{label} failed (exit {code}); log: {log_path}\n" + "\n".join(tail))
    if query_errors_fail and failed_queries:
        raise ReportError(
            f"{label}: {len(failed_queries)} page quer{'y' if len(failed_queries) == 1 else 'ies'} failed (the "
            f"site would show the error instead of the data); log: {log_path}\n"
            + "\n".join(f"  {query}: {why}" for query, why in sorted(failed_queries.items()))
        )


def _is_site(path: Path) -> bool:
    return (path / "index.html").is_file() and (path / "_app").is_dir()


def build_report(
    data_dir: Path, out_dir: Path, *, title: str | None = None, timeout_s: float = STEP_TIMEOUT_S, quiet: bool = False
) -> Path:
    """Build the static report site from ``data_dir``'s report_* Parquet tables into ``out_dir``.

    Returns ``out_dir``. Serve it over HTTP (``serve_report``, or any static file server), at the web
    root or under any path prefix: its URLs are relative (reports/scripts/relative-base.mjs).
    """
    installed = check_installed()
    project = _working_project(installed)
    out_dir = Path(out_dir).resolve()
    title = title or DEFAULT_TITLE
    plain_title = is_plain_title(title)
    if out_dir.exists() and any(out_dir.iterdir()) and not _is_site(out_dir):
        raise ReportError(f"{out_dir} exists and is not a pvbench report; choose an empty or new directory")
    console = Console(stderr=True, quiet=quiet)
    node = shutil.which("node")
    assert node is not None
    cli = str(project / "node_modules" / "@evidence-dev" / "evidence" / "cli.js")
    env = _evidence_env(project, title)
    started = time.monotonic()
    project.mkdir(parents=True, exist_ok=True)
    with _project_lock(project):
        if project != installed:
            working_copy(installed, project)
        cache = bundle_cache(project, env)
        reusing = is_cached(cache)
        if cache is not None:
            env[CACHE_ENV] = str(cache)
        log_path = project / BUILD_LOG
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_text("")
        counts = stage_data(Path(data_dir), project / "data")
        # `evidence build` copies its output over reports/build/ without emptying it first: pages
        # and data of an earlier build (other storage classes, older Parquet) would ship too
        shutil.rmtree(project / "build", ignore_errors=True)
        status_cm = console.status("Building the report …") if not quiet else nullcontext()
        with status_cm as status:
            _run_step(
                [node, cli, "sources", "--strict"],
                cwd=project,
                env=env,
                log_path=log_path,
                label="evidence sources",
                status=status,
                timeout_s=timeout_s,
            )
            _run_step(
                [node, cli, "build:strict"],
                cwd=project,
                env=env,
                log_path=log_path,
                label="evidence build (under a minute: bundles reused)" if reusing else "evidence build (about 2 min)",
                status=status,
                timeout_s=timeout_s,
                query_errors_fail=True,
            )
        built = project / "build"
        if not _is_site(built):
            raise ReportError(f"evidence build finished but {built} holds no site; log: {log_path}")
        if plain_title:
            put_title(built, title)
        sort_data_manifest(built)
        _install_site(built, out_dir)
        reused = REUSED_LOG_LINE in log_path.read_text(encoding="utf-8", errors="replace")
        if not reused:
            _keep_in_install(project, installed, cache)
    rows = ", ".join(f"{t.removeprefix('report_')} {n}" for t, n in counts.items())
    how = "bundles reused" if reused else "bundles compiled" + (f", kept in {cache}" if cache else "")
    console.print(f"report built in {time.monotonic() - started:.0f}s ({how}) → {out_dir}  [dim]({rows})[/]")
    return out_dir


def sort_data_manifest(site: Path) -> None:
    """Sort the lists of the built site's ``data/manifest.json``: Evidence writes each source's query
    files in the order its concurrent queries finished, so two builds of the same tables differed
    in that file alone. The order means nothing to the pages (they load every file listed)."""
    manifest = site / "data" / "manifest.json"
    if not manifest.is_file():
        return
    data = json.loads(manifest.read_text())
    files = data.get("renderedFiles")
    if isinstance(files, dict):
        data["renderedFiles"] = {k: sorted(v) if isinstance(v, list) else v for k, v in sorted(files.items())}
        manifest.write_text(json.dumps(data))


def _evidence_env(project: Path, title: str) -> dict[str, str]:
    """The environment of Evidence's build of ``project`` for ``title``: what the bundles' key
    reads (VITE_PVBENCH_TITLE: the placeholder for a plain title), Node's and malloc's settings."""
    return {
        **os.environ,
        "PATH": f"{project / 'node_modules' / '.bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "VITE_PVBENCH_TITLE": TITLE_PLACEHOLDER if is_plain_title(title) else title,
        "NO_COLOR": "1",
        "FORCE_COLOR": "0",
        "NO_UPDATE_NOTIFIER": "1",
        "npm_config_update_notifier": "false",
        **_build_env(os.environ),
    }


def is_plain_title(title: str) -> bool:
    """Whether ``title`` is put into the built site (bundles shared) rather than compiled in."""
    return _PLAIN_TITLE.fullmatch(title) is not None


def put_title(site: Path, title: str) -> None:
    """Write the title into the pages and scripts the placeholder was compiled into (plain titles
    only: the same characters are right as HTML text, in an attribute and in a JavaScript string)."""
    placeholder, wanted = TITLE_PLACEHOLDER.encode(), title.encode()
    found = 0
    for path in site.rglob("*"):
        if path.suffix in _TITLED_SUFFIXES and path.is_file():
            content = path.read_bytes()
            if placeholder in content:
                path.write_bytes(content.replace(placeholder, wanted))
                found += 1
    if not found:  # the pages no longer show VITE_PVBENCH_TITLE as it is (reports/pages/+layout.svelte)
        raise ReportError(f"the built site holds no title placeholder ({TITLE_PLACEHOLDER}) to put the title in")


def _install_site(built: Path, out_dir: Path) -> None:
    """Copy the built site to ``out_dir``, replacing the report there only once the copy is whole:
    it is copied beside it first, then renamed into place. A full disk or a folder pvbench may not
    write is a ReportError and leaves the previous report as it was (it used to be removed before
    the copy, and a copy that failed part-way left half a site and a traceback listing every file)."""
    staging = out_dir.with_name(f".{out_dir.name}.pvbench-new")
    old = out_dir.with_name(f".{out_dir.name}.pvbench-old")
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        for leftover in (staging, old):  # of a build killed while it copied
            shutil.rmtree(leftover, ignore_errors=True)
        shutil.copytree(built, staging)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise ReportError(f"cannot write the report to {out_dir}: {_first_error(exc)}") from exc
    if out_dir.exists():
        os.replace(out_dir, old)
    os.replace(staging, out_dir)
    shutil.rmtree(old, ignore_errors=True)


def _first_error(exc: OSError) -> str:
    """An OSError in one line: shutil.copytree's Error lists every file that failed, with why."""
    if isinstance(exc, shutil.Error) and exc.args and isinstance(exc.args[0], list) and exc.args[0]:
        source, target, why = exc.args[0][0]
        more = len(exc.args[0]) - 1
        return f"{why}" + (f" (and {more} more file{'s' if more > 1 else ''})" if more else "")
    return str(exc)


def write_empty_tables(data_dir: Path) -> None:
    """Every table of the report's contract, empty, in ``data_dir``: a campaign where nothing ran."""
    import duckdb  # pvbench's own DuckDB, only to write Parquet

    data_dir.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    try:
        for table, schema in report_tables().items():
            _write_empty(con, data_dir / f"{table}.parquet", schema)
    finally:
        con.close()


def _bundles_of(project: Path, title: str | None) -> Path | None:
    """Where a build of ``project`` for ``title`` keeps its bundles (None: reuse turned off)."""
    return bundle_cache(project, _evidence_env(project, title or DEFAULT_TITLE))


def restore_bundles(shared: Path, *, title: str | None = None, project: Path | None = None) -> str | None:
    """Have in the project the bundles a build of its pages (and of ``title``) would compile, from
    ``shared``: a directory kept across builds (an image build's cache mount, a CI machine's cache)
    and across copies of the project (a fresh clone compiles what another clone compiled before).
    Returns what it did, or None when neither the project nor ``shared`` has them. Bundles the
    project has already are copied to ``shared`` too (a no-op when they are there)."""
    project = project or check_installed()
    cache = _bundles_of(project, title)
    if cache is None:  # reuse turned off
        return None
    with _project_lock(project):
        if is_cached(cache):
            share_bundle(cache, shared)
            return f"bundles already in {cache}"
        if restore_bundle(shared, cache):
            return f"bundles restored from {shared} into {cache}"
    return None


def keep_bundles(shared: Path, *, title: str | None = None, project: Path | None = None) -> Path | None:
    """Copy the bundles a build compiled in the project (for its pages and ``title``) to ``shared``
    (see restore_bundles); returns where they are in the project, or None when it has none."""
    project = project or check_installed()
    cache = _bundles_of(project, title)
    if cache is None or not is_cached(cache):
        return None
    with _project_lock(project):
        share_bundle(cache, shared)
    return cache


def prime_bundles(*, title: str | None = None, quiet: bool = False, shared: Path | None = None) -> str:
    """Compile the site's bundles and keep them (pvbench.report.bundles) with a build over empty
    tables whose site is thrown away, so that the next build, of real data, reuses them: what the
    report image does once when it is built, so that every workflow's report step takes under a
    minute instead of two. Returns what it did, in a few words.

    ``shared``: a directory kept from one image build to the next (a build cache mount). Bundles
    found there for these pages are copied in, and nothing is built: an image rebuilt after a change
    to pvbench's Python code, not to the pages, primes in seconds instead of ~2 minutes on 2 cores
    (the bundles are made of the Evidence project alone). Bundles compiled here are copied there.

    With WORKDIR_ENV set (the report image sets it), the bundles are those of a working copy at
    that path, kept in the project too: what every build's working copy starts with."""
    installed = check_installed()
    project = _working_project(installed)
    if shared is not None:
        if project != installed:  # the key of the working copy's layout
            project.mkdir(parents=True, exist_ok=True)
            with _project_lock(project):
                working_copy(installed, project)
        done = restore_bundles(shared, title=title, project=project)
        if done is not None:
            _keep_in_install(project, installed, _bundles_of(project, title))
            return f"{done}, nothing compiled"
    with tempfile.TemporaryDirectory(prefix="pvbench-prime-") as tmp:
        write_empty_tables(Path(tmp) / "data")
        build_report(Path(tmp) / "data", Path(tmp) / "site", title=title, quiet=quiet)
    if shared is not None:
        cache = keep_bundles(shared, title=title, project=project)
        if cache is not None:
            return f"bundles compiled, kept in {cache} and copied to {shared}"
    return "bundles compiled"
