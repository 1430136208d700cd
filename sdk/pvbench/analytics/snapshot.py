"""A campaign's snapshot: its runs' compacts merged, a few Parquet files per table.

Reading a campaign from its runs' compacts is three or more reads per run: hundreds of files at 100
runs, and on S3 a GET (and a HEAD) each, which made adding a run to 100,000 results cost 7 s on MinIO.
The snapshot holds the same rows in a few parts, one file per table each, every row with the run
whose compact it came from (``compact_campaign``, ``compact_run``):

    snapshot/campaign=<c>/manifest.json        format, parts [{generation, {run: compact version}}],
                                               generations dropped (and when)
    snapshot/campaign=<c>/<generation>/documents.parquet, failures.parquet and the compact
                                      tables' (result_rows.parquet, occasion_measurements.parquet, …)

The runs' compacts stay what counts. A run is read from the part that holds it only while its
compact's version (the ETag or mtime of its documents.parquet, written last by a compaction) is the
one the manifest records; a run compacted again since, or one no part holds, is read from its own
compact, and a run whose compact is gone is not read at all. So a snapshot can be out of date, never
wrong, and losing it loses nothing.

Like the levels of an LSM tree, it is not written again for every run. Adding a run reads the parts
and the few compacts made since; when more than SNAPSHOT_LAG runs are read from their own compacts,
they are written as one more part (a few runs' rows: cheap whatever the campaign's size), and once
there would be more than MAX_PARTS parts, every part is merged into one. A full aggregation
(``pvbench aggregate`` without ``--run``) that finds the snapshot out of date merges too. A part's
files are written before the manifest that names it; a generation no part names any more is removed
SUPERSEDED_KEPT after it was dropped. A reader that finds its generation gone anyway reads every run
from its compact.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import tempfile
import threading
import uuid
import weakref
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterable

import duckdb

from pvbench.analytics.compact import (
    COMPACT_FORMAT,
    COMPACT_TABLE,
    COMPACT_TABLES,
    DOCUMENT_COLUMNS,
    Compact,
    Kept,
    list_compacts,
)
from pvbench.analytics.resources import readable
from pvbench.analytics.tables import FAILURES_COLUMNS, sql_literal
from pvbench.store import S3Store, Store
from pvbench.store.layout import (
    COMPACT_DOCUMENTS_FILE,
    COMPACT_FAILURES_FILE,
    COMPACT_FILE_PATTERN,
    PARQUET_TYPE,
    SNAPSHOT_MANIFEST,
    compact_table_file,
    snapshot_prefix,
)

log = logging.getLogger("pvbench.analytics")

# Runs read from their own compacts before adding one more writes them as a part of the snapshot:
# adding a run then reads at most this many compacts beside the snapshot's parts.
SNAPSHOT_LAG = 8

# Parts before the next one written merges them all (~1 s at 100,000 results): so one addition in
# (SNAPSHOT_LAG + 1) · MAX_PARTS rewrites the campaign's rows, and a campaign is read from at most
# MAX_PARTS files per table beside its newest compacts.
MAX_PARTS = 4

# A generation is removed this long after the manifest stopped naming it (or, if none ever did, after
# it was written): an aggregation that read the manifest before (its views read the generation's
# files until its models are done) has finished.
SUPERSEDED_KEPT = timedelta(hours=1)

GENERATION_TIME = "%Y%m%dT%H%M%S%fZ"  # a generation is named for when it was written (then a random part)

# Rows per row group of a snapshot file: several groups, so DuckDB reads one with all its threads.
ROW_GROUP_SIZE = 50_000

# The tables every campaign reads its compacts into (compact_<table>, each with compact_campaign,
# compact_run), and the file of a run's compact (and of the snapshot) that holds each.
COMPACT_FILES = {
    "compact_documents": COMPACT_DOCUMENTS_FILE,
    **{f"compact_{table}": compact_table_file(table) for table in COMPACT_TABLES},
    "compact_failures": COMPACT_FAILURES_FILE,
}
# Their columns where a compact may have no such file (a run without failures) or there is none.
FIXED_COLUMNS = {"compact_documents": DOCUMENT_COLUMNS, "compact_failures": FAILURES_COLUMNS}
WHERE_COLUMNS = {"compact_campaign": "VARCHAR", "compact_run": "VARCHAR"}


@dataclass
class Part:
    """One generation's files: the rows of ``runs`` (run → the version of its compact they are)."""

    generation: str
    runs: dict[str, str]


@dataclass
class Manifest:
    campaign: str
    parts: list[Part]
    # generations no part names any more → when they were dropped (removed SUPERSEDED_KEPT later)
    dropped: dict[str, str] = field(default_factory=dict)
    format: str = COMPACT_FORMAT

    def key(self, generation: str, file: str) -> str:
        return f"{snapshot_prefix(self.campaign)}/{generation}/{file}"

    def part_of(self, compact: Compact) -> Part | None:
        """The part that holds the compact as it is (newest first), if one does."""
        if compact.version is None:
            return None
        for part in reversed(self.parts):
            if part.runs.get(compact.run) == compact.version:
                return part
        return None

    def holds(self, compact: Compact) -> bool:
        return self.part_of(compact) is not None

    @property
    def runs(self) -> dict[str, str]:
        """Every run a part holds, with its version (a newer part's wins)."""
        return {run: version for part in self.parts for run, version in part.runs.items()}

    def body(self) -> dict:
        return {
            "format": self.format,
            "parts": [{"generation": p.generation, "runs": p.runs} for p in self.parts],
            "dropped": self.dropped,
        }


@dataclass
class Loaded:
    """What build_tables read: the snapshots used and the runs read from their own compacts."""

    manifests: dict[str, Manifest] = field(default_factory=dict)
    from_snapshot: list[Compact] = field(default_factory=list)
    own: list[Compact] = field(default_factory=list)


def read_manifest(store: Store, campaign: str) -> Manifest | None:
    key = f"{snapshot_prefix(campaign)}/{SNAPSHOT_MANIFEST}"
    try:
        data = json.loads(store.get_bytes(key))
    except Exception:  # none yet, or unreadable: the runs are read from their compacts
        return None
    if not isinstance(data, dict) or data.get("format") != COMPACT_FORMAT:
        return None  # another pvbench's: its rows lack columns, like a compact of another format
    parts = [Part(str(p["generation"]), dict(p["runs"])) for p in data.get("parts", [])]
    return Manifest(campaign, parts, dict(data.get("dropped", {})))


def _loaded(store: Store, compacts: list[Compact], manifests: dict[str, Manifest | None] | None = None) -> Loaded:
    """Which of ``compacts`` are read from their campaign's snapshot, which from their own files
    (``manifests``: those read already, by campaign)."""
    loaded = Loaded()
    manifests = manifests or {}
    for campaign in sorted({c.campaign for c in compacts}):
        manifest = manifests[campaign] if campaign in manifests else read_manifest(store, campaign)
        if manifest is not None:
            loaded.manifests[campaign] = manifest
    loaded.from_snapshot = [
        c for c in compacts if c.campaign in loaded.manifests and loaded.manifests[c.campaign].holds(c)
    ]
    loaded.own = [c for c in compacts if c not in set(loaded.from_snapshot)]
    return loaded


def load_compacts(
    con: duckdb.DuckDBPyConnection,
    store: Store,
    compacts: list[Compact],
    prefetched: Prefetch | None = None,
    kept: Kept | None = None,
) -> Loaded:
    """Tables compact_documents, compact_failures and compact_<table> of each COMPACT_TABLES: the rows
    of the given runs' compacts, from the snapshot where it holds them, else from their own files,
    or, for the runs this aggregation compacted on ``con``, from the tables it ``kept``.
    ``prefetched``: the manifest and files fetched already (adding a run: Prefetch)."""
    copies: dict[str, str] = {}
    manifests: dict[str, Manifest | None] = {}
    if prefetched is not None:
        manifests, copies = prefetched.result(con)
    loaded = _loaded(store, compacts, manifests)
    try:
        _create(con, store, loaded, copies, kept)
    except Exception as exc:  # the snapshot was replaced meanwhile: read every compact
        if not loaded.from_snapshot:
            raise
        log.warning("campaign snapshot unreadable (%s); reading every run's compact", exc)
        loaded = Loaded(own=list(compacts))
        _create(con, store, loaded, {}, kept)
    log.debug("read %d runs from snapshots, %d from their compacts", len(loaded.from_snapshot), len(loaded.own))
    return loaded


class Prefetch:
    """What adding a run reads beside the run, fetched while the run's documents are read and
    compacted (a thread; S3 requests and DuckDB both release the GIL): the campaign's compacts as
    listed, its snapshot's manifest, and, on S3, local copies of the files load_compacts reads —
    the snapshot's parts that hold runs, and the compacts of the runs read on their own. Not the
    added run's, nor any compact of an older format: those are compacted again, their files are
    read once written.

    Adding a run to 100,000 results on MinIO did these one after the other: listing the
    campaign's compacts, then the run's documents, reading and compacting them, then the manifest
    and the snapshot's files."""

    def __init__(self, store: Store, campaign: str, run: str):
        self.store, self.campaign, self.run = store, campaign, run
        self._listed: Future = Future()
        self._fetched: Future = Future()
        self.folder: Path | None = None
        threading.Thread(target=self._fetch, name="pvbench-prefetch", daemon=True).start()

    def _fetch(self) -> None:
        try:
            listed = list_compacts(self.store, self.campaign)
        except BaseException as exc:
            self._listed.set_exception(exc)
            self._fetched.set_exception(exc)
            return
        self._listed.set_result(listed)
        try:
            manifest = read_manifest(self.store, self.campaign)
            others = [c for (_, run), c in listed.items() if c.complete and run != self.run]
            keys = [
                key for keys in _keys(_loaded(self.store, others, {self.campaign: manifest})).values() for key in keys
            ]
            copies = {}
            if isinstance(self.store, S3Store) and keys:
                self.folder = Path(tempfile.mkdtemp(prefix="pvbench-compacts-"))
                copies = _fetch(self.store, keys, self.folder)
            self._fetched.set_result(({self.campaign: manifest}, copies))
        except BaseException as exc:  # what was not fetched is read when it is needed
            log.debug("prefetch of campaign %s failed: %s", self.campaign, exc)
            self._fetched.set_result(({}, {}))

    def compacts(self) -> dict[tuple[str, str], Compact]:
        """The campaign's compacts, as list_compacts lists them (raises what listing them raised)."""
        return dict(self._listed.result())

    def result(self, con: duckdb.DuckDBPyConnection) -> tuple[dict[str, Manifest | None], dict[str, str]]:
        """(the manifest by campaign, local copies by key); the copies live as long as ``con``."""
        try:
            fetched = self._fetched.result()
        except BaseException:
            fetched = ({}, {})
        if self.folder is not None:  # adopted by the connection
            weakref.finalize(con, shutil.rmtree, self.folder, True)
            self.folder = None
        return fetched

    def close(self) -> None:
        """Wait for the thread; remove its copies if no connection took them (an error meanwhile)."""
        with contextlib.suppress(BaseException):
            self._fetched.result()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None


def _held(loaded: Loaded) -> list[tuple[Manifest, Part, list[str]]]:
    """Each part that holds runs read from it, with those runs."""
    held: dict[tuple[str, str], list[str]] = {}
    for c in loaded.from_snapshot:
        part = loaded.manifests[c.campaign].part_of(c)
        held.setdefault((c.campaign, part.generation), []).append(c.run)
    return [
        (manifest, part, held[(campaign, part.generation)])
        for campaign, manifest in loaded.manifests.items()
        for part in manifest.parts
        if (campaign, part.generation) in held
    ]


def _local_copies(
    con: duckdb.DuckDBPyConnection, store: Store, keys: list[str], have: dict[str, str] | None = None
) -> dict[str, str]:
    """Where DuckDB reads each key: a local store's file as it is; an S3 object copied once into a
    folder that lives as long as the connection (the GETs overlap: Store.get_many), unless ``have``
    has a copy of it already. The models read the compacts through views, a scan per model: over
    HTTP each would fetch the files again."""
    if not isinstance(store, S3Store):
        return {key: store.duckdb_path(key) for key in keys}
    have = have or {}
    copies = {key: have[key] for key in keys if key in have}
    missing = [key for key in keys if key not in have]
    if missing:
        folder = Path(tempfile.mkdtemp(prefix="pvbench-compacts-"))
        weakref.finalize(con, shutil.rmtree, folder, True)
        copies.update(_fetch(store, missing, folder))
    return copies


def _fetch(store: Store, keys: list[str], folder: Path) -> dict[str, str]:
    """Each key's object copied under ``folder`` (its key's folders kept: compact_run is read from
    the path): key → path."""
    copies = {}
    for key, content in store.get_many(keys):
        if isinstance(content, Exception):
            raise content
        path = folder / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        copies[key] = str(path)
    return copies


def _keys(loaded: Loaded, in_memory: set[tuple[str, str]] = frozenset()) -> dict[tuple[str, str, str] | str, list[str]]:
    """The keys _create reads: by (campaign, generation, file) for each snapshot part that holds
    runs read, and by file for the compacts read on their own (not those ``in_memory``: Kept)."""
    keys: dict[tuple[str, str, str] | str, list[str]] = {
        (manifest.campaign, part.generation, file): [manifest.key(part.generation, file)]
        for manifest, part, _ in _held(loaded)
        for file in COMPACT_FILES.values()
    }
    for file in COMPACT_FILES.values():
        keys[file] = [
            f"{c.prefix}/{file}"
            for c in loaded.own
            if (file != COMPACT_FAILURES_FILE or c.has_failures) and (c.campaign, c.run) not in in_memory
        ]
    return keys


def _create(
    con: duckdb.DuckDBPyConnection, store: Store, loaded: Loaded, have: dict[str, str], kept: Kept | None
) -> None:
    held = _held(loaded)
    in_memory = kept.runs if kept is not None else set()
    keys = _keys(loaded, in_memory)
    snapshot_keys = {where: found[0] for where, found in keys.items() if isinstance(where, tuple)}
    own_keys = {file: found for file, found in keys.items() if isinstance(file, str)}
    local = _local_copies(
        con, store, [*snapshot_keys.values(), *(k for found in own_keys.values() for k in found)], have
    )
    # runs read from their own files: many of them (a first aggregation of a campaign compacted by
    # another, the Argo step) are read once into a table (below)
    from_files = sum(1 for c in loaded.own if (c.campaign, c.run) not in in_memory)
    own = [(c.campaign, c.run) for c in loaded.own]
    for table, file in COMPACT_FILES.items():
        parts = []
        for manifest, part, runs in held:
            path = sql_literal(local[snapshot_keys[(manifest.campaign, part.generation, file)]])
            parts.append(f"SELECT * FROM read_parquet({path}) WHERE list_contains({sql_literal(runs)}, compact_run)")
        fixed = FIXED_COLUMNS.get(table)
        if own_keys[file]:
            paths = sql_literal([local[k] for k in own_keys[file]])
            files = (
                "SELECT * EXCLUDE (filename),"
                # the run a compact's file belongs to, from its path (compact/campaign=<c>/run=<r>/<file>)
                f" regexp_extract(filename, '{COMPACT_FILE_PATTERN}', 1) AS compact_campaign,"
                f" regexp_extract(filename, '{COMPACT_FILE_PATTERN}', 2) AS compact_run"
                f" FROM read_parquet({paths}, filename = true, union_by_name = true)"
            )
            if fixed is None and from_files > SNAPSHOT_LAG and table != f"compact_{COMPACT_TABLE}":
                # many runs' files: read once into a table, as a view over hundreds of files would
                # be read again by every model (~3 s more at 100 runs). Not result_rows: its rows
                # are wide and only a few models read a few of its columns (the Argo step adding a
                # run to 164,000 results: 2.75 s → 2.57 s).
                con.execute(f"CREATE OR REPLACE TABLE files_{table} AS {files}")
                files = f"SELECT * FROM files_{table}"
            parts.append(files)
        if kept is not None and (rows := kept.select(table.removeprefix("compact_"), own)) is not None:
            parts.append(rows)  # compacted by this aggregation: its tables, not its files read back
        union = " UNION ALL BY NAME ".join(parts)
        if fixed is not None:  # typed even when no compact has the file
            columns = {**fixed, **WHERE_COLUMNS}
            if parts and table == "compact_documents" and from_files <= SNAPSHOT_LAG:
                # a campaign's documents read from its snapshot: a view. Reading them is a few scans
                # of a column or two (inputs.select_documents), where copying every row of 100,000
                # keys into a table was 0.16 s of every addition to such a campaign
                typed = ", ".join(f"CAST({name} AS {kind}) AS {name}" for name, kind in columns.items())
                con.execute(f"CREATE OR REPLACE VIEW {table} AS SELECT {typed} FROM ({union})")
                con.execute(f"SELECT count(*) FROM {table}").fetchone()  # the files are there (else IOException)
            else:  # small (failures), or many runs' own documents: read once into a table
                con.execute(f"CREATE OR REPLACE TABLE {table} ({', '.join(f'{n} {t}' for n, t in columns.items())})")
                if parts:
                    con.execute(f"INSERT INTO {table} SELECT {', '.join(columns)} FROM ({union})")
        else:  # a view: each model reads the columns it needs, nothing is copied
            con.execute(f"CREATE OR REPLACE VIEW {table} AS {union}")
            con.execute(f"SELECT count(*) FROM {table}").fetchone()  # the files are there (else IOException)


def held_documents(
    con: duckdb.DuckDBPyConnection, store: Store, compacts: dict[tuple[str, str], Compact]
) -> dict[tuple[str, str], set[tuple[str, int, str]]]:
    """What each run's compact read (key, size, version of its result.json documents), for the runs
    the campaign's snapshot holds as they are: checking a 100-run campaign for changes then reads
    a few files, not every run's documents.parquet."""
    held: dict[tuple[str, str], set[tuple[str, int, str]]] = {}
    for campaign in sorted({c for c, _ in compacts}):
        manifest = read_manifest(store, campaign)
        if manifest is None:
            continue
        by_part: dict[str, list[str]] = {}
        for (cc, run), c in compacts.items():
            part = manifest.part_of(c) if cc == campaign else None
            if part is not None:
                by_part.setdefault(part.generation, []).append(run)
        for generation, runs in by_part.items():
            try:
                rows = con.execute(
                    "SELECT compact_run, source_key, size, version FROM read_parquet(?)"
                    " WHERE list_contains(?, compact_run)",
                    [readable(con, store, manifest.key(generation, COMPACT_DOCUMENTS_FILE)), runs],
                ).fetchall()
            except duckdb.Error:  # replaced meanwhile: each run's own documents are read instead
                continue
            for run in runs:
                held[(campaign, run)] = set()
            for run, key, size, version in rows:
                held[(campaign, run)].add((key, int(size), version))
    return held


# What due() asks write_snapshot to do.
PART = "part"  # write the runs read on their own as one more part
MERGE = "merge"  # write every run as one part, replacing the others


def due(loaded: Loaded, compacts: Iterable[Compact], campaign: str, full: bool) -> str | None:
    """Is the campaign's snapshot to be written, and how? MERGE when none is usable, or (``full``:
    every run was listed and checked) when it differs at all from the runs as they are; when more
    than SNAPSHOT_LAG runs were read from their own compacts, PART, or MERGE once there are
    MAX_PARTS parts already. None: nothing to write."""
    manifest = loaded.manifests.get(campaign)
    current = {c.run: c.version for c in compacts if c.campaign == campaign}
    if manifest is None or (full and manifest.runs != current):
        return MERGE
    own = sum(1 for c in loaded.own if c.campaign == campaign)
    if own > SNAPSHOT_LAG:
        return PART if len(manifest.parts) < MAX_PARTS else MERGE
    return None


def write_snapshot(
    con: duckdb.DuckDBPyConnection,
    store: Store,
    campaign: str,
    compacts: Iterable[Compact],
    how: str = MERGE,
    manifest: Manifest | None = None,
    now: datetime | None = None,
) -> Manifest:
    """Write the campaign's rows of the compact_* tables as a new generation, then the manifest
    that names it, then remove the generations dropped long enough ago (remove_superseded). Only
    runs whose compact version is known are written.

    ``how``: MERGE writes every run into one part, which replaces the others; PART writes the runs
    that no part of ``manifest`` (the one read) holds as they are, beside its parts."""
    compacts = [c for c in compacts if c.campaign == campaign and c.version is not None]
    runs = {c.run: c.version for c in compacts}
    now = now or datetime.now(timezone.utc)
    generation = f"{now:{GENERATION_TIME}}-{uuid.uuid4().hex[:8]}"
    old = manifest.parts if manifest is not None and how == PART else []
    new_runs = {c.run: c.version for c in compacts if manifest is None or how == MERGE or not manifest.holds(c)}
    kept = []
    for part in old:  # a run is in one part: the one that holds it as it is; a part of none is dropped
        still = {r: v for r, v in part.runs.items() if runs.get(r) == v and r not in new_runs}
        if still:
            kept.append(Part(part.generation, still))
    named = {p.generation for p in kept} | {generation}
    dropped = dict(manifest.dropped) if manifest is not None else {}
    for part in manifest.parts if manifest is not None else []:
        if part.generation not in named:
            dropped.setdefault(part.generation, f"{now:{GENERATION_TIME}}")
    written = Manifest(campaign, [*kept, Part(generation, new_runs)], dropped)
    with tempfile.TemporaryDirectory(prefix="pvbench-snapshot-") as tmp:
        for table, file in COMPACT_FILES.items():
            con.execute(
                f"COPY (SELECT * FROM {table} WHERE compact_campaign = ? AND compact_run IN (SELECT unnest(?)))"
                f" TO '{Path(tmp) / file}' (FORMAT parquet, ROW_GROUP_SIZE {ROW_GROUP_SIZE})",
                [campaign, list(new_runs)],
            )
        store.put_many(
            (written.key(generation, f), (Path(tmp) / f).read_bytes(), PARQUET_TYPE) for f in COMPACT_FILES.values()
        )
    remove_superseded(store, written, now)  # before the manifest is written: it says what is left
    store.put_bytes(f"{snapshot_prefix(campaign)}/{SNAPSHOT_MANIFEST}", json.dumps(written.body(), indent=1).encode())
    log.debug("campaign %s: snapshot part %s of %d runs written (%s)", campaign, generation, len(new_runs), how)
    return written


def remove_superseded(store: Store, manifest: Manifest, now: datetime | None = None) -> None:
    """Remove the files of every generation no part of ``manifest`` names that was dropped (or, if
    it was never named, written) more than SUPERSEDED_KEPT ago; forget the dropped ones removed."""
    prefix = f"{snapshot_prefix(manifest.campaign)}/"
    files: dict[str, list[str]] = {}
    for key in store.list_keys(prefix):
        rest = key[len(prefix) :]
        if "/" in rest:
            files.setdefault(rest.split("/", 1)[0], []).append(key)
    now = now or datetime.now(timezone.utc)
    named = {p.generation for p in manifest.parts}
    for generation, keys in files.items():
        if generation in named:
            continue
        since = manifest.dropped.get(generation, generation.split("-", 1)[0])
        try:
            when = datetime.strptime(since, GENERATION_TIME).replace(tzinfo=timezone.utc)
        except ValueError:  # not a generation this pvbench named
            continue
        if now - when > SUPERSEDED_KEPT:
            for key in keys:
                store.delete(key)
            manifest.dropped.pop(generation, None)
    for generation in list(manifest.dropped):  # dropped, and gone already
        if generation not in files:
            del manifest.dropped[generation]
