"""A campaign's snapshot: its runs' compacts merged, one Parquet file per table.

Reading a campaign from its runs' compacts is three or four reads per run: 400 files at 100 runs,
and on S3 a GET (and a HEAD) each, which made adding a run to 100,000 results cost 7 s on MinIO.
The snapshot holds the same rows in one file per table, each row with the run whose compact it
came from (``compact_campaign``, ``compact_run``):

    snapshot/campaign=<c>/manifest.json        format, generation, {run: compact version}
    snapshot/campaign=<c>/<generation>/documents.parquet, failures.parquet and the compact
                                      tables' (result_rows.parquet, occasion_measurements.parquet, …)

The runs' compacts stay what counts. A run is read from the snapshot only while its compact's
version (the ETag or mtime of its documents.parquet, written last by a compaction) is the one the
manifest records; a run compacted again since, or one the snapshot does not hold, is read from its
own compact, and a run whose compact is gone is not read at all. So a snapshot can be out of date,
never wrong, and losing it loses nothing.

Like the levels of an LSM tree, the snapshot is not written again for every run: adding a run
reads the snapshot and the few compacts made since, and the snapshot is written again when more
than SNAPSHOT_LAG runs are read from their own compacts, or by a full aggregation (``pvbench
aggregate`` without ``--run``) that finds it out of date. A generation's files are written before
the manifest that names them; a generation is removed SUPERSEDED_KEPT after a newer one replaced
it. A reader that finds its generation gone anyway reads every run from its compact.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import uuid
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterable

import duckdb

from pvbench.analytics.compact import COMPACT_FORMAT, COMPACT_TABLES, DOCUMENT_COLUMNS, S3_READERS, Compact
from pvbench.analytics.tables import FAILURES_COLUMNS
from pvbench.store import S3Store, Store
from pvbench.store.layout import (
    COMPACT_DOCUMENTS_FILE,
    COMPACT_FAILURES_FILE,
    SNAPSHOT_MANIFEST,
    compact_table_file,
    snapshot_prefix,
)

log = logging.getLogger("pvbench.analytics")

# Runs read from their own compacts before adding one more writes the snapshot again: adding a
# run then reads at most this many compacts beside the snapshot, and one in SNAPSHOT_LAG + 1
# additions pays for writing it (~1 s at 100,000 results).
SNAPSHOT_LAG = 8

# A generation is removed this long after a newer one replaced it: an aggregation that read the
# manifest before (its views read the generation's files until its models are done) has finished.
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
# compact/campaign=<c>/run=<r>/<file>: the run a compact's file belongs to
_FROM_PATH = r"campaign=([^/]+)/run=([^/]+)/[^/]+$"


@dataclass
class Manifest:
    campaign: str
    generation: str
    runs: dict[str, str]  # run → the version of its compact the snapshot holds
    format: str = COMPACT_FORMAT

    def key(self, file: str) -> str:
        return f"{snapshot_prefix(self.campaign)}/{self.generation}/{file}"

    def holds(self, compact: Compact) -> bool:
        return compact.version is not None and self.runs.get(compact.run) == compact.version


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
    return Manifest(campaign, str(data["generation"]), dict(data["runs"]))


def load_compacts(con: duckdb.DuckDBPyConnection, store: Store, compacts: list[Compact]) -> Loaded:
    """Tables compact_documents, compact_failures and compact_<table> of each COMPACT_TABLES: the rows
    of the given runs' compacts, from the snapshot where it holds them, else from their own files."""
    loaded = Loaded()
    for campaign in sorted({c.campaign for c in compacts}):
        manifest = read_manifest(store, campaign)
        if manifest is not None:
            loaded.manifests[campaign] = manifest
    loaded.from_snapshot = [
        c for c in compacts if c.campaign in loaded.manifests and loaded.manifests[c.campaign].holds(c)
    ]
    loaded.own = [c for c in compacts if c not in set(loaded.from_snapshot)]
    try:
        _create(con, store, loaded)
    except Exception as exc:  # the snapshot was replaced meanwhile: read every compact
        if not loaded.from_snapshot:
            raise
        log.warning("campaign snapshot unreadable (%s); reading every run's compact", exc)
        loaded = Loaded(own=list(compacts))
        _create(con, store, loaded)
    log.debug("read %d runs from snapshots, %d from their compacts", len(loaded.from_snapshot), len(loaded.own))
    return loaded


def _sql(value: str | list[str]) -> str:
    """A string or a list of strings as an SQL literal (a view cannot take parameters)."""
    if isinstance(value, list):
        return "[" + ", ".join(map(_sql, value)) + "]"
    return "'" + value.replace("'", "''") + "'"


def _local_copies(con: duckdb.DuckDBPyConnection, store: Store, keys: list[str]) -> dict[str, str]:
    """Where DuckDB reads each key: a local store's file as it is; an S3 object copied once into a
    folder that lives as long as the connection (S3_READERS GETs at a time). The models read the
    compacts through views, a scan per model: over HTTP each would fetch the files again."""
    if not isinstance(store, S3Store):
        return {key: store.duckdb_path(key) for key in keys}
    folder = Path(tempfile.mkdtemp(prefix="pvbench-compacts-"))
    weakref.finalize(con, shutil.rmtree, folder, True)

    def fetch(key: str) -> tuple[str, str]:
        path = folder / key  # the key's folders kept: compact_run is read from the path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(store.get_bytes(key))
        return key, str(path)

    with ThreadPoolExecutor(S3_READERS) as pool:
        return dict(pool.map(fetch, keys))


def _create(con: duckdb.DuckDBPyConnection, store: Store, loaded: Loaded) -> None:
    snapshot_keys = {
        (campaign, file): manifest.key(file)
        for campaign, manifest in loaded.manifests.items()
        if any(c.campaign == campaign for c in loaded.from_snapshot)
        for file in COMPACT_FILES.values()
    }
    own_keys = {
        file: [f"{c.prefix}/{file}" for c in loaded.own if file != COMPACT_FAILURES_FILE or c.has_failures]
        for file in COMPACT_FILES.values()
    }
    local = _local_copies(con, store, [*snapshot_keys.values(), *(k for keys in own_keys.values() for k in keys)])
    for table, file in COMPACT_FILES.items():
        parts = []
        for campaign in loaded.manifests:
            runs = [c.run for c in loaded.from_snapshot if c.campaign == campaign]
            if runs:
                path = _sql(local[snapshot_keys[(campaign, file)]])
                parts.append(f"SELECT * FROM read_parquet({path}) WHERE list_contains({_sql(runs)}, compact_run)")
        if own_keys[file]:
            paths = _sql([local[k] for k in own_keys[file]])
            parts.append(
                "SELECT * EXCLUDE (filename),"
                f" regexp_extract(filename, '{_FROM_PATH}', 1) AS compact_campaign,"
                f" regexp_extract(filename, '{_FROM_PATH}', 2) AS compact_run"
                f" FROM read_parquet({paths}, filename = true, union_by_name = true)"
            )
        union = " UNION ALL BY NAME ".join(parts)
        fixed = FIXED_COLUMNS.get(table)
        if fixed is not None:  # small, and typed even when no compact has the file
            columns = {**fixed, **WHERE_COLUMNS}
            con.execute(f"CREATE OR REPLACE TABLE {table} ({', '.join(f'{n} {t}' for n, t in columns.items())})")
            if parts:
                con.execute(f"INSERT INTO {table} SELECT {', '.join(columns)} FROM ({union})")
        elif len(loaded.own) > SNAPSHOT_LAG:
            # many runs' files (a first or full aggregation): read once into a table, as a view
            # over hundreds of files would be read again by every model (~3 s more at 100 runs)
            con.execute(f"CREATE OR REPLACE TABLE {table} AS {union}")
        else:  # a view: each model reads the columns it needs from a few files, nothing is copied
            con.execute(f"CREATE OR REPLACE VIEW {table} AS {union}")
            con.execute(f"SELECT count(*) FROM {table}").fetchone()  # the files are there (else IOException)


def held_documents(
    con: duckdb.DuckDBPyConnection, store: Store, compacts: dict[tuple[str, str], Compact]
) -> dict[tuple[str, str], set[tuple[str, int, str]]]:
    """What each run's compact read (key, size, version of its result.json documents), for the runs
    the campaign's snapshot holds as they are: checking a 100-run campaign for changes then reads
    one file, not every run's documents.parquet."""
    held: dict[tuple[str, str], set[tuple[str, int, str]]] = {}
    for campaign in sorted({c for c, _ in compacts}):
        manifest = read_manifest(store, campaign)
        runs = [c.run for (cc, _), c in compacts.items() if cc == campaign and manifest and manifest.holds(c)]
        if not runs:
            continue
        try:
            rows = con.execute(
                "SELECT compact_run, source_key, size, version FROM read_parquet(?) WHERE list_contains(?, compact_run)",
                [store.duckdb_path(manifest.key(COMPACT_DOCUMENTS_FILE)), runs],
            ).fetchall()
        except duckdb.Error:  # replaced meanwhile: each run's own documents are read instead
            continue
        for run in runs:
            held[(campaign, run)] = set()
        for run, key, size, version in rows:
            held[(campaign, run)].add((key, int(size), version))
    return held


def due(loaded: Loaded, compacts: Iterable[Compact], campaign: str, full: bool) -> bool:
    """Is the campaign's snapshot to be written again? When none is usable, when more than
    SNAPSHOT_LAG runs were read from their own compacts, or (``full``: every run was listed and
    checked) when it differs at all from the runs as they are."""
    manifest = loaded.manifests.get(campaign)
    current = {c.run: c.version for c in compacts if c.campaign == campaign}
    if manifest is None:
        return True
    own = sum(1 for c in loaded.own if c.campaign == campaign)
    return own > SNAPSHOT_LAG or (full and manifest.runs != current)


def write_snapshot(
    con: duckdb.DuckDBPyConnection, store: Store, campaign: str, compacts: Iterable[Compact]
) -> Manifest:
    """Write the campaign's rows of the compact_* tables as a new generation, then its manifest,
    then remove the generations replaced long enough ago (remove_superseded). Only runs whose
    compact version is known are written."""
    runs = {c.run: c.version for c in compacts if c.campaign == campaign and c.version is not None}
    generation = f"{datetime.now(timezone.utc):{GENERATION_TIME}}-{uuid.uuid4().hex[:8]}"
    manifest = Manifest(campaign, generation, runs)
    parquet = "application/vnd.apache.parquet"
    with tempfile.TemporaryDirectory(prefix="pvbench-snapshot-") as tmp:
        for table, file in COMPACT_FILES.items():
            path = Path(tmp) / file
            con.execute(
                f"COPY (SELECT * FROM {table} WHERE compact_campaign = ? AND compact_run IN (SELECT unnest(?)))"
                f" TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE {ROW_GROUP_SIZE})",
                [campaign, list(runs)],
            )
            store.put_bytes(manifest.key(file), path.read_bytes(), content_type=parquet)
    body = {"format": manifest.format, "generation": generation, "runs": runs}
    store.put_bytes(f"{snapshot_prefix(campaign)}/{SNAPSHOT_MANIFEST}", json.dumps(body, indent=1).encode())
    remove_superseded(store, campaign)
    log.debug("campaign %s: snapshot %s of %d runs written", campaign, generation, len(runs))
    return manifest


def remove_superseded(store: Store, campaign: str, now: datetime | None = None) -> None:
    """Remove the files of every generation that a newer one replaced more than SUPERSEDED_KEPT ago."""
    prefix = f"{snapshot_prefix(campaign)}/"
    files: dict[str, list[str]] = {}
    for key in store.list_keys(prefix):
        rest = key[len(prefix) :]
        if "/" in rest:
            files.setdefault(rest.split("/", 1)[0], []).append(key)
    now = now or datetime.now(timezone.utc)
    generations = sorted(files)
    for older, newer in zip(generations, generations[1:]):
        try:
            replaced = datetime.strptime(newer.split("-", 1)[0], GENERATION_TIME).replace(tzinfo=timezone.utc)
        except ValueError:  # not a generation this pvbench named
            continue
        if now - replaced > SUPERSEDED_KEPT:
            for key in files[older]:
                store.delete(key)
