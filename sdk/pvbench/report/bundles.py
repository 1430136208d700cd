"""The report's compiled bundles, reused from one build to the next.

Most of a report build is compiling the site, not the data: Vite's server bundle and client
bundle of every Evidence component and page (~80 s of a ~2-minute build on 2 cores), then
prerendering each page with the campaign's tables (~25 s). The two bundles do not depend on the
tables (two builds of the same pages with different campaigns differ only in the prerendered
pages and the data), so ``reports/scripts/sveltekit-bundles.mjs`` lets SvelteKit reuse them: a
build given ``PVBENCH_BUNDLE_CACHE=<dir>`` restores them from there when they are there and stores
them there when it made them. This module names that directory: a hash of everything the bundles
are made from, so any change to the pages, components, Evidence config, installed packages,
pvbench's patches or the VITE_/EVIDENCE_/PUBLIC_ environment (the site title) builds them anew.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path
from typing import Mapping

BUNDLES_PATCH_MARKER = "pvbench-sveltekit-bundles v2"
CACHE_ENV = "PVBENCH_BUNDLE_CACHE"  # read by the patched SvelteKit
REUSE_ENV = "PVBENCH_REPORT_REUSE_BUNDLES"  # "0": compile every bundle, cache nothing
CACHE_DIR = Path(".evidence") / "pvbench-bundles"  # in the Evidence project, beside Evidence's own cache
KEEP = 3  # bundles kept (least recently used removed): one per title a team builds, at most a few
STALE_PARTIAL_S = 3600.0  # a staged bundle this old belongs to a build that died
REUSED_LOG_LINE = "[pvbench] reusing the server and client bundles"
ANALYSIS_REUSED_LOG_LINE = "[pvbench] reusing the routes' analysis"
ANALYSIS_FILE = "analysis.v8"  # beside a bundle: SvelteKit's analysis of the routes, reused with it

# At the Evidence project's top level: what a build writes or reads as its data (pvbench.report.build
# stages the tables in data/, takes the lock, logs to .evidence/), and the installed packages.
# Not what the bundles are made of: node_modules counts through npm's record of what it installed.
BUILD_LOCK = ".pvbench-build.lock"
BUILD_LOG = Path(".evidence") / "pvbench-build.log"
PROJECT_OUTPUTS = frozenset({"node_modules", ".evidence", ".svelte-kit", "build", "data", BUILD_LOCK})
# Vite inlines VITE_* (the title: VITE_PVBENCH_TITLE) and SvelteKit PUBLIC_* into the bundles; EVIDENCE_* configure Evidence.
_ENV_PREFIXES = ("VITE_", "EVIDENCE_", "PUBLIC_")


def bundle_key(project: Path, env: Mapping[str, str]) -> str:
    """A hash of what the bundles are compiled from: the project's files (data and build output
    aside), the installed packages, and the environment that Vite and Evidence read."""
    digest = hashlib.sha256()

    def add(name: str, content: bytes) -> None:
        digest.update(name.encode() + b"\0" + len(content).to_bytes(8, "little") + content)

    for path in _source_files(project):
        add(path.relative_to(project).as_posix(), path.read_bytes())
    modules = project / "node_modules"
    lock = modules / ".package-lock.json"
    add("installed", lock.read_bytes() if lock.is_file() else b"")
    if modules.is_symlink():
        # a working copy's packages are the install's, linked (pvbench.report.build.working_copy):
        # Node and Vite resolve the link, so the bundles name each package by where it really is,
        # relative to the project, and bundles of one layout do not build in another ("Could not
        # find file … in Vite manifest"). A project with its own node_modules keeps its key.
        add("node_modules at", os.path.relpath(modules.resolve(), project.resolve()).encode())
    for name in sorted(env):
        if name.startswith(_ENV_PREFIXES):
            add(f"env:{name}", env[name].encode())
    return digest.hexdigest()[:20]


def _source_files(project: Path) -> list[Path]:
    files: list[Path] = []
    for root, dirs, names in os.walk(project):
        here = Path(root)
        if here == project:
            dirs[:] = [d for d in dirs if d not in PROJECT_OUTPUTS]
            names = [n for n in names if n not in PROJECT_OUTPUTS]
        dirs.sort()
        files.extend(here / n for n in sorted(names) if (here / n).is_file())
    return files


def bundle_cache(project: Path, env: Mapping[str, str]) -> Path | None:
    """The directory the build reuses its bundles from (or stores them in), or None when
    $PVBENCH_REPORT_REUSE_BUNDLES is 0. Older bundles beyond KEEP are removed."""
    if env.get(REUSE_ENV, "1").strip() == "0":
        return None
    root = project / CACHE_DIR
    root.mkdir(parents=True, exist_ok=True)
    cache = root / bundle_key(project, env)
    if is_cached(cache):
        os.utime(cache)  # most recently used: kept by prune
    _prune(root, keep=cache)
    return cache


def is_cached(cache: Path | None) -> bool:
    return cache is not None and (cache / "bundle.json").is_file()


def _prune(root: Path, keep: Path) -> None:
    now = time.time()
    bundles = []
    for entry in root.iterdir():
        if ".partial-" in entry.name:
            if now - entry.stat().st_mtime > STALE_PARTIAL_S:
                shutil.rmtree(entry, ignore_errors=True)
        elif entry != keep and entry.is_dir():
            bundles.append(entry)
    bundles.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for old in bundles[KEEP - 1 :]:  # KEEP - 1 besides the one this build uses
        shutil.rmtree(old, ignore_errors=True)


def restore_bundle(shared: Path, cache: Path) -> bool:
    """Copy the bundles for ``cache``'s key from ``shared`` (a directory kept across builds, e.g.
    an image build's cache mount) into ``cache``; False when ``shared`` has none for that key."""
    source = shared / cache.name
    if not is_cached(source):
        return False
    _copy_whole(source, cache)
    os.utime(source)  # used: kept by the shared directory's prune
    return True


def share_bundle(cache: Path, shared: Path) -> None:
    """Copy the bundles a build compiled into ``shared`` for later builds elsewhere (the next image
    build), keeping only the KEEP used last there too."""
    shared.mkdir(parents=True, exist_ok=True)
    _copy_whole(cache, shared / cache.name)
    _prune(shared, keep=shared / cache.name)


def _copy_whole(source: Path, target: Path) -> None:
    """Copy a bundle directory so that ``target`` is either absent or whole: staged beside it
    (a ".partial-" name, which _prune clears when stale), then renamed into place. A target that
    is already whole (another build put it there meanwhile) is left as it is."""
    if is_cached(target):
        return
    staging = target.with_name(f"{target.name}.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(source, staging)
    if is_cached(target):
        shutil.rmtree(staging, ignore_errors=True)
        return
    shutil.rmtree(target, ignore_errors=True)  # a directory without bundle.json: not whole
    os.replace(staging, target)
