"""Compact once, read compact: each run's result.json documents become one Parquet table, once.

A run's compact (store layout: compact/campaign=<c>/run=<r>/) holds
    result_rows.parquet   the run's valid documents through the models up to ``result_rows``
                          (1_raw/raw_results → 2_normalized/result_rows), flat, one row per direction;
    occasion_measurements.parquet
                          its values grouped by occasion and metric, with n, mean and sum of squares
                          (2_normalized/result_values → occasion_measurements): what the campaign's
                          summaries merge, so adding a run does not redo them value by value;
    warmup_by_occasion.parquet, run_cells.parquet, run_usage.parquet, run_setup.parquet
                          the per-run models (3_summaries; PER_RUN_TABLES): each row comes from
                          this run's results alone, so they are made once, here, not again over
                          every run of the campaign whenever a run is added;
    cell_series.parquet   each result's seconds, as lists (2_normalized/cell_series, from the
                          documents' series; SERIES_TABLES): the campaign unnests only the latest
                          run of each class; never written out with the campaign's tables;
    documents.parquet     every result.json of the run that was read: key, size, version (ETag or
                          mtime), the key its identity gives it, and why it was left out, if it was;
    failures.parquet      the run's failed cells as the orchestrator reported them (optional).

The JSON documents stay the archive and the single source of truth. A compact is current while
the run's listing (key, size, version of every result.json) equals its documents.parquet; any
difference (a result added by ``argo retry``, a file rewritten, one deleted) rebuilds that run's
compact from its documents, replacing it whole, so nothing is counted twice. Campaign tables
then read the compacts only: aggregating a campaign never re-parses JSON it has read before.
"""

from __future__ import annotations

import contextlib
import json
import logging
import multiprocessing
import multiprocessing.connection
import os
import queue
import shutil
import tempfile
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, NamedTuple

import duckdb
from pydantic import ValidationError

from pvbench.analytics.resources import readable
from pvbench.analytics.tables import FAILURES_COLUMNS, AnalyticsError, insert_rows, json_columns, row_line, sql_literal
from pvbench.results.schema import SCHEMA_VERSION, ResultDocument
from pvbench.store import Store, StoredObject
from pvbench.store.layout import (
    COMPACT_DOCUMENTS_FILE,
    COMPACT_FAILURES_FILE,
    PARQUET_TYPE,
    RESULT_FILE,
    compact_prefix,
    compact_table_file,
    parse_compact_key,
    results_prefix,
    run_of,
)

log = logging.getLogger("pvbench.analytics")

# The models whose tables are a run's compact; they and the models they read run once per run. Beside
# the rows and their occasions, the per-run models (each row from one run's results only) that the
# campaign's models would otherwise compute over every run again whenever one is added.
COMPACT_TABLE = "result_rows"
OCCASIONS_TABLE = "occasion_measurements"
PER_RUN_TABLES = ("warmup_by_occasion", "run_cells", "run_usage", "run_setup")
# Each result's seconds (fio's interval logs), as lists. Compacted like the others,
# but only their campaign summaries are written out (a row per second of 100,000 results is not a
# report table).
SERIES_TABLES = ("cell_series",)
COMPACT_TABLES = (COMPACT_TABLE, OCCASIONS_TABLE, *PER_RUN_TABLES, *SERIES_TABLES)
# The compact's format: bumped when a compact table gains or changes columns, or a new one is added
# (2: the volume lifecycle; 3: multi-client clients, straggler_ratio; 5: client_volumes;
# 6: occasion_measurements; 7: warmup_by_occasion, run_cells, run_usage; 8: run_setup; 9: the
# observations' fields in sort order; 10: guards and steady state in result_rows, excluded_by in
# occasion_measurements, the series tables; 11: the run's labels trigger, changed, old/new image;
# 12: node_selection; 13: storage_class is the class with its volume shape, class_name,
# volume_mode, access_mode; 14: occasion_measurements' observation_values, sole_role, named_roles,
# nodes).
# Written into
# documents.parquet's metadata; a compact of another format is rebuilt from its run's documents,
# like one whose listing changed.
COMPACT_FORMAT = "14"
FORMAT_KEY = "pvbench_compact"

# documents.parquet: one row per result.json read (DuckDB types).
DOCUMENT_COLUMNS: dict[str, str] = {
    "source_key": "VARCHAR",  # where the document is in the store
    "size": "BIGINT",
    "version": "VARCHAR",  # S3 ETag or the local file's mtime (ns): changes with the content
    "cell_key": "VARCHAR",  # the key its identity gives it (NULL when it is invalid)
    "problem": "VARCHAR",  # NULL when valid; invalid | other-schema
    "reason": "VARCHAR",
}


@dataclass(frozen=True)
class RunListing:
    """The result.json objects of one run, as listed now."""

    campaign: str  # slugs, as in the keys
    run: str
    objects: tuple[StoredObject, ...]

    def fingerprint(self) -> set[tuple[str, int, str]]:
        return {(o.key, o.size, o.version) for o in self.objects}


@dataclass(frozen=True)
class Compact:
    """Where one run's compact tables are (store keys)."""

    campaign: str
    run: str
    # every file of the current format is there (a compact made by an older pvbench lacks some)
    complete: bool = field(default=True, compare=False)
    # the version (ETag, mtime) of its documents.parquet as listed, written last by a compaction:
    # it changes whenever the compact is made again (None: not listed since it was made)
    version: str | None = field(default=None, compare=False)
    has_failures: bool = field(default=False, compare=False)

    @property
    def prefix(self) -> str:
        return compact_prefix(self.campaign, self.run)

    def table_key(self, table: str) -> str:
        """The key of one of its COMPACT_TABLES."""
        return f"{self.prefix}/{compact_table_file(table)}"

    @property
    def documents_key(self) -> str:
        return f"{self.prefix}/{COMPACT_DOCUMENTS_FILE}"

    @property
    def failures_key(self) -> str:
        return f"{self.prefix}/{COMPACT_FAILURES_FILE}"


def list_runs(store: Store, campaign: str | None, run: str | None = None) -> dict[tuple[str, str], RunListing]:
    """Every run under the prefix with its result.json objects: one streamed listing."""
    return dict(sorted(((listing.campaign, listing.run), listing) for listing in iter_runs(store, campaign, run)))


def iter_runs(store: Store, campaign: str | None, run: str | None = None) -> Iterator[RunListing]:
    """list_runs' runs in key order, each as soon as the listing has passed it: a full aggregation
    compacts the first runs while the store's later folders are still being listed (the listing
    of a large campaign took seconds that nothing else overlapped). Both stores list in key
    order, so a run's objects come together."""
    where, objects, seen = None, [], set()
    for obj in store.list_objects(results_prefix(campaign, run)):
        if not obj.key.endswith("/" + RESULT_FILE):
            continue
        here = run_of(obj.key)
        if here is None:
            continue
        if here != where:
            if where is not None:
                yield RunListing(*where, tuple(objects))
            if here in seen:  # not in key order after all: a run is one listing, never two
                raise AnalyticsError(f"{store.url}: the listing of run {here[1]} was not contiguous")
            seen.add(here)
            where, objects = here, []
        objects.append(obj)
    if where is not None:
        yield RunListing(*where, tuple(objects))


def list_compacts(store: Store, campaign: str | None, run: str | None = None) -> dict[tuple[str, str], Compact]:
    """The runs that have a compact (its rows and its documents table), or only ``run``'s;
    ``complete`` says whether it has every file this pvbench makes."""
    files: dict[tuple[str, str], dict[str, str]] = {}
    prefix = (
        compact_prefix(campaign, run) + "/" if campaign is not None and run is not None else compact_prefix(campaign)
    )
    for obj in store.list_objects(prefix):
        found = parse_compact_key(obj.key)  # a run's compact's file; anything else there is not one
        if found is not None:
            campaign_slug, run_slug, file = found
            files.setdefault((campaign_slug, run_slug), {})[file] = obj.version
    return {
        where: Compact(
            *where,
            complete=all(compact_table_file(table) in names for table in COMPACT_TABLES),
            version=names[COMPACT_DOCUMENTS_FILE],
            has_failures=COMPACT_FAILURES_FILE in names,
        )
        for where, names in sorted(files.items())
        if {compact_table_file(COMPACT_TABLE), COMPACT_DOCUMENTS_FILE} <= names.keys()
    }


def is_current(con: duckdb.DuckDBPyConnection, store: Store, compact: Compact, listing: RunListing) -> bool:
    """Does the compact's documents table list exactly the run's result.json objects as they are now?"""
    path = readable(con, store, compact.documents_key)
    try:
        rows = con.execute("SELECT source_key, size, version FROM read_parquet(?)", [path]).fetchall()
        meta = dict(con.execute("SELECT decode(key), decode(value) FROM parquet_kv_metadata(?)", [path]).fetchall())
    except duckdb.Error as exc:  # unreadable (half-written by a killed run): rebuild it
        log.warning("compact %s is unreadable (%s); rebuilding it", compact.prefix, exc)
        return False
    if meta.get(FORMAT_KEY) != COMPACT_FORMAT:  # made by another pvbench: its rows lack columns
        log.info(
            "compact %s has format %s, not %s; rebuilding it", compact.prefix, meta.get(FORMAT_KEY), COMPACT_FORMAT
        )
        return False
    return {(k, int(s), v) for k, s, v in rows} == listing.fingerprint()


def _contents(store: Store, objects: tuple[StoredObject, ...]) -> Iterator[tuple[StoredObject, bytes | Exception]]:
    """Each object with its bytes (or the error reading them: one unreadable document must not
    lose the run), in listing order; S3 reads overlap (Store.get_many)."""
    for obj, (_, content) in zip(objects, store.get_many(obj.key for obj in objects)):
        yield obj, content


def validate(content: bytes):
    """(document, None), or (None, (problem, reason)) if this is not a document this pvbench counts."""
    if not content.strip():
        return None, ("invalid", "empty file")
    try:
        return ResultDocument.model_validate_json(content), None
    except ValidationError as exc:
        try:
            data = json.loads(content)
        except ValueError as bad:
            return None, ("invalid", f"not valid JSON (truncated or corrupt?): {bad}")
        if not isinstance(data, dict) or "schema_version" not in data:
            return None, ("invalid", "not a pvbench result document (no schema_version)")
        if data["schema_version"] != SCHEMA_VERSION:
            return None, (
                "other-schema",
                f"schema_version {data['schema_version']!r}; this pvbench reads {SCHEMA_VERSION}",
            )
        errors = exc.errors()
        first = errors[0]
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        return None, ("invalid", f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}{more}")


# The batch file's write buffer: one write per MiB instead of one per document (~2 KB, which
# Python's default 8 KiB buffer wrote through one by one: 100,000 system calls a campaign).
BATCH_BUFFER = 1 << 20


@dataclass
class ReadRun:
    """One run's documents, read and validated: the valid ones in a newline-delimited batch file
    (DuckDB reads it), and a row of DOCUMENT_COLUMNS for every document read in another (made
    where the documents are read, in the reader process too: turning them into JSON was one of
    the largest costs of the thread that drives DuckDB)."""

    listing: RunListing
    folder: str  # a temporary folder: removed by cleanup() once its batch is compacted
    # the run labels of its valid documents (one, unless labels differ but slug alike: refused)
    runs: set[str] = field(default_factory=set)
    # valid documents that are not at the key their identity gives them (a copy kept elsewhere)
    misplaced: int = 0

    @property
    def batch(self) -> Path:
        return Path(self.folder) / "documents.ndjson"

    @property
    def rows(self) -> Path:
        return Path(self.folder) / "document-rows.ndjson"

    def cleanup(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def read_run(store: Store, listing: RunListing, objects: Iterable[StoredObject] | None = None) -> ReadRun:
    """Read the run's documents once and validate them (the Python half of a compaction: it can
    run in a thread while DuckDB writes the previous run's compact).

    Valid documents go verbatim (newlines are whitespace in JSON, so each becomes one line) into
    the batch with their source_key and cell_key in front. ``objects``: the listing's objects, if
    the listing given does not hold them (anything with their key, size and version).
    """
    read = ReadRun(listing, tempfile.mkdtemp(prefix="pvbench-compact-"))
    try:
        _read_into(store, read, listing.objects if objects is None else tuple(objects))
    except OSError as exc:  # writing the batch (an unreadable document is a row, not an error)
        read.cleanup()
        if exc.filename is None:  # the buffered batch failed when flushed: say where it was
            raise OSError(exc.errno, exc.strerror, read.folder) from exc
        raise
    except BaseException:
        read.cleanup()
        raise
    return read


class _Listed(NamedTuple):
    """A listed object as the reader process gets it: what read_run reads of a StoredObject."""

    key: str
    size: int
    version: str


def flat_listing(listing: RunListing) -> tuple[str, str, list[str], list[int], list[str]]:
    """A run's listing as it goes to the reader process: its campaign and run, then its objects'
    keys, sizes and versions as three flat lists (_read_elsewhere's arguments after the store).
    Pickling a run's thousand StoredObjects there and back (dumped and loaded on each side) took
    0.25 s of CPU per 100,000 documents, flat lists 0.05 s (pvbench_lab.bench_fixed_costs); the
    aggregating process's share ran beside the thread that lists and the one that drives DuckDB."""
    objects = listing.objects
    return (
        listing.campaign,
        listing.run,
        [o.key for o in objects],
        [o.size for o in objects],
        [o.version for o in objects],
    )


def listed_objects(keys: list[str], sizes: list[int], versions: list[str]) -> Iterator[_Listed]:
    """The objects of a flat_listing (its last three lists), as read_run reads them."""
    return map(_Listed._make, zip(keys, sizes, versions))


def _read_elsewhere(
    store: Store, campaign: str, run: str, keys: list[str], sizes: list[int], versions: list[str]
) -> ReadRun:
    """read_run in the reader process, its listing handed over flat (flat_listing) and the ReadRun
    handed back without it (the aggregating process, which has it, puts it back: _ReadAhead._result)."""
    return read_run(store, RunListing(campaign, run, ()), listed_objects(keys, sizes, versions))


def full_temporary_folder_hint(exc: Exception) -> str:
    """What to do when the disk that filled up is the temporary folder's ("" otherwise): an
    aggregation batches the documents it compacts there."""
    folder = tempfile.gettempdir()
    if "No space left" not in str(exc) or folder not in str(exc):
        return ""
    room = BATCHES_AHEAD * BATCH_DOCUMENTS * 2 // 1000  # results of ~2 KB
    return (
        f"; the temporary folder {folder} is full: an aggregation keeps up to {BATCHES_AHEAD} batches of "
        f"{BATCH_DOCUMENTS:,} documents there (~{room} MB); free some, or point TMPDIR at a larger folder"
    )


def _read_into(store: Store, read: ReadRun, objects: tuple[StoredObject, ...]) -> None:
    with read.batch.open("wb", buffering=BATCH_BUFFER) as out, read.rows.open("w", buffering=BATCH_BUFFER) as rows:
        for obj, content in _contents(store, objects):
            problem = ("invalid", f"cannot be read: {content}") if isinstance(content, Exception) else None
            if problem is None:
                doc, problem = validate(content)
            if problem is not None:
                row = dict(
                    source_key=obj.key, size=obj.size, version=obj.version, problem=problem[0], reason=problem[1]
                )
                rows.write(row_line(row, DOCUMENT_COLUMNS))
                continue
            cell_key = doc.identity.result_key()
            key = json.dumps(obj.key)
            cell = key if cell_key == obj.key else json.dumps(cell_key)
            # the document with its keys in front (its "{" replaced by theirs), on one line
            body = content.strip()[1:].replace(b"\n", b" ").replace(b"\r", b" ")
            out.write(b'{"source_key":%b,"cell_key":%b,%b\n' % (key.encode(), cell.encode(), body))
            rows.write(_valid_row(key, obj.size, json.dumps(obj.version), cell))
            read.runs.add(doc.identity.run)
            read.misplaced += cell_key != obj.key


def _valid_row(key: str, size: int, version: str, cell: str) -> str:
    """row_line() of a valid document's row (DOCUMENT_COLUMNS), its strings JSON-encoded already:
    formatted directly, as a dict through json.dumps per document was a tenth of the reader's time."""
    return (
        f'{{"source_key":{key},"size":{size:d},"version":{version},"cell_key":{cell},"problem":null,"reason":null}}\n'
    )


def write_compacts(
    store: Store,
    reads: list[ReadRun],
    compact_models: list,
    con: duckdb.DuckDBPyConnection,
    failures: dict[tuple[str, str], list[dict]] | None = None,
    kept: Kept | None = None,
) -> None:
    """The DuckDB half: the runs' batches through the raw and normalized models (with the schema's
    column types) at once, each run's rows written as its compact. Removes the batches.
    ``kept``: the tables made stay on ``con`` (Kept), for the campaign's tables to read.

    Several runs go through the models together only when each holds its own documents only (no
    document elsewhere than its identity's key; build_compacts sees to it): then a row's run label
    says whose compact it belongs to, and the models' fixed cost per statement is paid once for
    them all instead of once per run (most of a 1,000-result run's compaction). ``failures``: the
    failed cells given for a run, by (campaign, run), written beside its compact."""
    try:
        for _, step in compaction_steps(con, reads, compact_models):
            step()
        for read in reads:
            where = (read.listing.campaign, read.listing.run)
            _write_compact(store, read, con, len(reads) > 1, (failures or {}).get(where), kept)
        if kept is not None:
            kept.keep(con, reads)
    finally:
        for read in reads:
            read.cleanup()


def compaction_steps(
    con: duckdb.DuckDBPyConnection, reads: list[ReadRun], compact_models: list
) -> list[tuple[str, Callable[[], None]]]:
    """write_compacts' DuckDB steps for a batch, in order and named (pvbench_lab.bench_fixed_costs times
    them one by one): its files bound, each compaction model, the split of the batch's tables
    into each run's files (several runs only), the documents table. Then each run's compact is
    written from what they made."""
    runs = ", ".join(read.listing.run for read in reads)

    def model_step(model) -> Callable[[], None]:
        def run() -> None:
            try:
                con.execute(model.statement)
            except duckdb.Error as exc:
                raise AnalyticsError(f"model {model.layer}/{model.name}.sql failed on run {runs}: {exc}") from exc

        return run

    steps = [
        ("batch files bound", lambda: con.execute("SET VARIABLE result_files = ?", [[str(r.batch) for r in reads]]))
    ]
    steps += [(f"model {model.name}", model_step(model)) for model in compact_models]
    if len(reads) > 1:
        steps.append(("split into each run's files", lambda: _split_tables(con, reads)))
    steps.append(("documents table", lambda: _documents(con, reads)))
    return steps


def _split_tables(con: duckdb.DuckDBPyConnection, reads: list[ReadRun]) -> None:
    """Each run's rows of each compact table, as the table's file in the run's folder: one
    partitioned COPY per table for the whole batch (the part a row goes to is its run label's
    read), where a COPY per run and table scanned the batch's table once per run (1.45 s of a
    100,000-result aggregation, 600 statements). A run with no row in a table, or a part that
    came out as several files, is left to _write_compact (a COPY of its rows: a typed file)."""
    labels, parts = [], []
    for part, read in enumerate(reads, 1):
        for label in sorted(read.runs):
            labels.append(label)
            parts.append(part)
    for table in COMPACT_TABLES:
        _copy_parts(
            con,
            f"SELECT *, list_extract(?, list_position(?, run)) AS pvbench_part FROM {table}",
            [parts, labels],
            reads,
            compact_table_file(table),
        )


def _copy_parts(
    con: duckdb.DuckDBPyConnection, query: str, params: list, reads: list[ReadRun], file: str, options: str = ""
) -> list[ReadRun]:
    """COPY ``query``'s rows, partitioned by its column pvbench_part (the 1-based index of the read
    they belong to), each part moved to its read's folder as ``file``; returns the reads that got
    none (no rows, or a part that came out as several files)."""
    missing = []
    with tempfile.TemporaryDirectory(prefix="pvbench-parts-") as tmp:
        con.execute(
            f"COPY ({query}) TO '{tmp}' (FORMAT parquet, PARTITION_BY (pvbench_part), FILENAME_PATTERN 'rows'{options})",
            params,
        )
        for part, read in enumerate(reads, 1):
            files = list(Path(tmp, f"pvbench_part={part}").glob("*.parquet"))
            if len(files) == 1:
                files[0].replace(Path(read.folder) / file)
            else:
                missing.append(read)
    return missing


def _documents(con: duckdb.DuckDBPyConnection, reads: list[ReadRun]) -> None:
    """Table ``documents``: the batch's rows of DOCUMENT_COLUMNS (every document read, with the
    (campaign, run) slugs of the compact it goes into), each run's written as its documents.parquet
    in its folder: one statement to load them and one partitioned COPY, where a load and a COPY per
    run were 400 statements of a 100,000-result aggregation. A run with no file from it (none of
    its documents was listed: a run of failures only) gets its own COPY: an empty, typed table."""
    rows = [str(read.rows) for read in reads]
    con.execute(
        "CREATE OR REPLACE TABLE documents AS"
        " SELECT * EXCLUDE (filename), list_extract(?, list_position(?, filename)) AS compact_campaign,"
        " list_extract(?, list_position(?, filename)) AS compact_run"
        f" FROM read_json(?, format = 'newline_delimited', columns = {json_columns(DOCUMENT_COLUMNS)}, filename = true)",
        [[r.listing.campaign for r in reads], rows, [r.listing.run for r in reads], rows, rows],
    )
    metadata = f"KV_METADATA {{{FORMAT_KEY}: '{COMPACT_FORMAT}'}}"
    columns = ", ".join(f'"{name}"' for name in DOCUMENT_COLUMNS)
    query = f"SELECT {columns}, list_position(?, compact_run) AS pvbench_part FROM documents"
    missing = _copy_parts(con, query, [[r.listing.run for r in reads]], reads, COMPACT_DOCUMENTS_FILE, f", {metadata}")
    for read in missing:
        con.execute(
            f"COPY (SELECT {columns} FROM documents WHERE compact_run = ?)"
            f" TO '{Path(read.folder) / COMPACT_DOCUMENTS_FILE}' (FORMAT parquet, {metadata})",
            [read.listing.run],
        )


def _write_compact(
    store: Store,
    read: ReadRun,
    con: duckdb.DuckDBPyConnection,
    shared: bool,
    failures: list[dict] | None,
    kept: Kept | None = None,
) -> None:
    """One run's compact from the compact tables made (``shared``: with other runs' rows, told apart
    by the run label)."""
    listing = read.listing
    compact = Compact(listing.campaign, listing.run)
    tmp = Path(read.folder)
    for table in COMPACT_TABLES:
        if (tmp / compact_table_file(table)).exists():  # split from the batch's (_split_tables)
            continue
        rows = f"(SELECT * FROM {table} WHERE list_contains(?, run))" if shared else table
        con.execute(
            f"COPY {rows} TO '{tmp / compact_table_file(table)}' (FORMAT parquet)",
            [sorted(read.runs)] if shared else [],
        )
    docs_file = tmp / COMPACT_DOCUMENTS_FILE  # written by _documents
    # the tables first, documents last: a compact whose documents table is missing is rebuilt
    store.put_many(
        (compact.table_key(t), (tmp / compact_table_file(t)).read_bytes(), PARQUET_TYPE) for t in COMPACT_TABLES
    )
    if failures is not None:
        failures_file = tmp / COMPACT_FAILURES_FILE
        insert_rows(con, "failures", FAILURES_COLUMNS, [{**f, "run": f.get("run") or listing.run} for f in failures])
        con.execute(f"COPY failures TO '{failures_file}' (FORMAT parquet)")
        store.put_bytes(compact.failures_key, failures_file.read_bytes(), content_type=PARQUET_TYPE)
    store.put_bytes(compact.documents_key, docs_file.read_bytes(), content_type=PARQUET_TYPE)
    if kept is not None and failures is not None:
        kept.add_failures(con, listing)


class Kept:
    """The compact tables of the runs compacted on a connection, kept on it: the campaign's tables
    read them there instead of reading back the files just written (a full aggregation of 100,000
    results read its 600 files back in ~0.7 s, on S3 with a GET each). A batch's tables and its
    documents are renamed (kept_<table>_<n>), not copied; a run's failures are added to
    kept_failures. ``select`` gives the rows as load_compacts reads a compact's files: with
    compact_campaign and compact_run, the slugs of the run they were compacted for. They are the
    rows reading those files back would have put in tables (~36 MB per 10,000 results)."""

    def __init__(self) -> None:
        # each batch's number and its run labels → (campaign, run) slugs of the compact they are in
        self.batches: list[tuple[int, dict[str, tuple[str, str]]]] = []
        self.runs: set[tuple[str, str]] = set()
        self.failures = False  # kept_failures made

    def keep(self, con: duckdb.DuckDBPyConnection, reads: list[ReadRun]) -> None:
        """A batch's COMPACT_TABLES, made from ``reads``: kept under new names."""
        number = len(self.batches) + 1
        for table in (*COMPACT_TABLES, "documents"):
            con.execute(f"ALTER TABLE {table} RENAME TO kept_{table}_{number}")
        self.batches.append(
            (number, {label: (r.listing.campaign, r.listing.run) for r in reads for label in sorted(r.runs)})
        )
        self.runs.update((r.listing.campaign, r.listing.run) for r in reads)

    def add_failures(self, con: duckdb.DuckDBPyConnection, listing: RunListing) -> None:
        """Table ``failures`` (one run's) added to kept_failures."""
        if not self.failures:
            con.execute(
                "CREATE OR REPLACE TABLE kept_failures AS"
                " SELECT *, ''::VARCHAR AS compact_campaign, ''::VARCHAR AS compact_run FROM failures LIMIT 0"
            )
            self.failures = True
        con.execute("INSERT INTO kept_failures SELECT *, ?, ? FROM failures", [listing.campaign, listing.run])
        self.runs.add((listing.campaign, listing.run))

    def select(self, table: str, runs: Iterable[tuple[str, str]]) -> str | None:
        """SQL of the kept rows of compact table ``table`` (a COMPACT_TABLES one, documents or
        failures) of ``runs`` (campaign, run slugs); None when none is kept."""
        wanted = set(runs) & self.runs
        if not wanted:
            return None
        pairs = sql_literal([f"{c}/{r}" for c, r in sorted(wanted)])
        where = f"list_contains({pairs}, compact_campaign || '/' || compact_run)"
        if table == "failures":
            return f"SELECT * FROM kept_failures WHERE {where}" if self.failures else None
        if table == "documents":  # each batch's, with the slugs of each row's compact
            return (
                " UNION ALL BY NAME ".join(
                    f"SELECT * FROM kept_documents_{number} WHERE {where}" for number, _ in self.batches
                )
                or None
            )
        branches = []
        for number, labels in self.batches:
            mine = {label: where for label, where in labels.items() if where in wanted}
            if not mine:
                continue
            names = sql_literal(list(mine))
            branches.append(
                f"SELECT *, list_extract({sql_literal([c for c, _ in mine.values()])}, list_position({names}, run))"
                f" AS compact_campaign, list_extract({sql_literal([r for _, r in mine.values()])},"
                f" list_position({names}, run)) AS compact_run"
                f" FROM kept_{table}_{number}"
                # every row of the batch (a full aggregation's): no filter for every model to apply
                + ("" if len(mine) == len(labels) else f" WHERE list_contains({names}, run)")
            )
        if not branches and self.batches:  # the runs have no rows (no valid document): none, typed
            branches.append(
                "SELECT *, NULL::VARCHAR AS compact_campaign, NULL::VARCHAR AS compact_run"
                f" FROM kept_{table}_{self.batches[0][0]} WHERE false"
            )
        return " UNION ALL BY NAME ".join(branches) or None


# Runs compacted together (one pass of the models): up to this many documents, or runs, at once.
BATCH_DOCUMENTS = 10_000
BATCH_RUNS = 32
# The first batch is smaller: it is read before DuckDB has anything to do, and nothing else
# overlaps that wait (a batch's models cost ~0.1 s whatever its size, ~40 µs a document beyond).
FIRST_BATCH_DOCUMENTS = 2_000
# Batches that exist at once (read into temporary files): the one being compacted, the next, and
# the one being listed and read. More would only hold more files.
BATCHES_AHEAD = 3


def _starts_batch(batch: list[RunListing], size: int, listing: RunListing, first: bool = False) -> bool:
    """Does ``listing`` begin a new batch after ``batch`` (of ``size`` documents)? A batch is
    consecutive runs of one campaign, up to BATCH_DOCUMENTS documents (FIRST_BATCH_DOCUMENTS for
    the ``first``) or BATCH_RUNS runs."""
    return bool(batch) and (
        batch[0].campaign != listing.campaign
        or len(batch) >= BATCH_RUNS
        or size + len(listing.objects) > (FIRST_BATCH_DOCUMENTS if first else BATCH_DOCUMENTS)
    )


def _settled(read: Callable[[], ReadRun]) -> Future:
    """A future holding what ``read`` returns, or what it raised (read here and now)."""
    future: Future = Future()
    try:
        future.set_result(read())
    except BaseException as exc:
        future.set_exception(exc)
    return future


# a listed run with where its read is going on
Reading = tuple[RunListing, Future]
_END = object()


class _ReadAhead:
    """The runs of ``listings`` read, a batch at a time (``batches()``), ahead of the compaction.

    A thread advances the listing (a stream: iter_runs) and has each run read as soon as it is
    listed, not once its batch is complete: a batch's reads overlap the listing of its later runs,
    and both overlap DuckDB compacting the batch before. A run is read

    - in that thread: every run of an S3 store (its reads mostly wait for GETs that already
      overlap), and of a local store until its reader process is ready;
    - with ``separate`` (a full aggregation of a local store, where there are two cores), in a
      second process once it is ready. Reading local files is Python (system calls, pydantic)
      that held the GIL against the thread that drives DuckDB and the one that lists. The process
      starts as soon as a second batch is certain (the listing passed the first, small batch),
      and takes over from the thread once it has started (~0.5 s): nothing waits for it, and a
      campaign of one batch never starts it.

    The process is spawned, not forked: the parent holds DuckDB's threads and their locks. Like any
    spawned process it imports the parent's main module, so a script that aggregates needs the
    usual ``if __name__ == "__main__":`` guard; without one (or if the process cannot start or
    dies) it is given up, with one warning, and its runs are read in this process.

    At most BATCHES_AHEAD batches exist at once: ``done(reads)`` (compacted) frees a place.
    ``close()`` stops the listing and removes every batch read that was not handed out."""

    def __init__(self, store: Store, listings: Iterable[RunListing], separate: bool):
        self.store, self.listings, self.separate = store, listings, separate
        self.pool: ProcessPoolExecutor | None = None
        self.started: Future | None = None  # the process's first task (_started): done once it is up
        self.given_up = False
        self.lock = threading.Lock()
        self.queue: queue.Queue = queue.Queue()  # lists of Reading (a batch), then _END or the error
        self.places = threading.Semaphore(BATCHES_AHEAD)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._list, name="pvbench-read-ahead", daemon=True)
        self.thread.start()

    def _list(self) -> None:
        """The thread: list, have each run read, hand each batch over once the next run (or the
        end of the listing) closes it."""
        batch: list[Reading] = []
        try:
            size, first = 0, True
            for listing in self.listings:
                if _starts_batch([r for r, _ in batch], size, listing, first):
                    self._hand_over(batch)
                    batch, size, first = [], 0, False
                    if self.separate:
                        self._start()
                if not batch and not self._place():
                    break  # stopped
                batch.append((listing, self._read(listing)))
                size += len(listing.objects)
        except BaseException as exc:  # the listing failed: raised where the batches are taken
            self._hand_over(batch)
            self.queue.put(exc)
            return
        self._hand_over(batch)
        self.queue.put(_END)

    def _hand_over(self, batch: list[Reading]) -> None:
        if batch:
            self.queue.put(batch)

    def _place(self) -> bool:
        """Wait for a place for one more batch (False: stopped meanwhile)."""
        while not self.places.acquire(timeout=0.1):
            if self.stopped.is_set():
                return False
        return not self.stopped.is_set()

    def _start(self) -> None:
        if self.pool is None and not self.given_up:
            try:
                self.pool = ProcessPoolExecutor(
                    1, mp_context=multiprocessing.get_context("spawn"), initializer=_end_with_parent
                )
                self.started = self.pool.submit(_started)
            except Exception as exc:
                self._give_up(exc)

    def _read(self, listing: RunListing) -> Future:
        if self.started is not None and self.started.done() and not self._broken():
            try:
                return self.pool.submit(_read_elsewhere, self.store, *flat_listing(listing))
            except BrokenProcessPool as exc:  # broken meanwhile: read here instead
                self._give_up(exc)
        return _settled(lambda: read_run(self.store, listing))

    def _broken(self) -> bool:
        """Has the process failed already (its start, or a run)? Then it is given up."""
        if self.given_up:
            return True
        if self.started is not None and self.started.done() and self.started.exception() is not None:
            self._give_up(self.started.exception())
        return self.given_up

    def _give_up(self, exc: BaseException) -> None:
        with self.lock:
            if self.given_up:
                return
            self.given_up = True
        log.warning("the reader process failed (%s); reading the documents in this process", exc)

    def batches(self) -> Iterator[list[ReadRun]]:
        """Each batch's runs, read, in listing order."""
        while (item := self.queue.get()) is not _END:
            if isinstance(item, BaseException):
                raise item
            reads: list[ReadRun] = []
            try:
                for listing, future in item:
                    reads.append(self._result(listing, future))
            except BaseException:
                for read in reads:
                    read.cleanup()
                self._discard(item[len(reads) :])
                raise
            yield reads

    def _result(self, listing: RunListing, future: Future) -> ReadRun:
        try:
            read = future.result()
        except BrokenProcessPool as exc:  # the process died before it read this run: read it here
            self._give_up(exc)
            return read_run(self.store, listing)
        read.listing = listing  # handed back without it by the reader process (_read_elsewhere)
        return read

    def done(self, reads: list[ReadRun]) -> None:
        """The batch is compacted: its files go, and a place for one more batch is free."""
        for read in reads:
            read.cleanup()
        self.places.release()

    def close(self) -> None:
        """Stop the listing; remove what was read and not handed out; stop the process."""
        self.stopped.set()
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
        self.thread.join()
        while True:
            try:
                item = self.queue.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, list):
                self._discard(item)
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None

    @staticmethod
    def _discard(batch: list[Reading]) -> None:
        for _, future in batch:
            with contextlib.suppress(BaseException):
                future.result().cleanup()


def _started() -> None:
    """What a reader process runs first: nothing, but to run it the process imports this module
    (pydantic and the schema), which is most of its start."""


def _end_with_parent() -> None:
    """The reader process's initializer: it ends as soon as the aggregation that started it is
    gone. An aggregation stopped with SIGKILL (the OOM killer, ``kill -9``) cannot shut its pool
    down, and a pool's worker waits for its next task on a queue whose writing end it holds
    itself: it never saw the end, and stayed for good (with the resource tracker), holding the
    caller's stdout and stderr open, so a ``pvbench aggregate … | tee`` never returned either.
    The spawned process's parent sentinel (multiprocessing.parent_process) becomes readable when
    the parent exits, however it exits; nothing the reader holds is worth more than stopping."""
    parent = multiprocessing.parent_process()
    if parent is None or parent.sentinel is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(1)

    threading.Thread(target=watch, name="pvbench-parent-watch", daemon=True).start()


def build_compacts(
    store: Store,
    listings: Iterable[RunListing],
    compact_models: list,
    con: duckdb.DuckDBPyConnection,
    failures: dict[tuple[str, str], list[dict]] | None = None,
    progress: Callable[[RunListing], None] | None = None,
    separate_reader: bool = False,
    kept: Kept | None = None,
) -> None:
    """Compact the runs, a batch of runs at a time (the models run once per batch, not once per
    run), the runs listed and read ahead (_ReadAhead) while DuckDB compacts the batch before:
    reading files (or S3 GETs) and DuckDB both release the GIL, so on two cores a compaction costs
    little more than the read.

    ``listings`` may be a stream (iter_runs): it is advanced in the read-ahead's thread, so the
    listing of later runs overlaps the compaction of the first ones. ``separate_reader``: once a
    second batch is certain, the documents are read and validated in a second process (_ReadAhead
    says why and when).

    A run goes through the models on its own when it holds a document elsewhere than its
    identity's key (a copy: its rows could fall in another run's groups) or has failures given.
    ``failures``: what failed, by (campaign, run), for the runs that have any. ``kept``: the
    compact tables stay on ``con`` (Kept)."""
    failures = failures or {}
    ahead = _ReadAhead(store, listings, separate_reader)
    try:
        for reads in ahead.batches():
            try:
                for read in reads:
                    if progress:
                        progress(read.listing)
                alone = [r for r in reads if r.misplaced or (r.listing.campaign, r.listing.run) in failures]
                together = [r for r in reads if all(r is not a for a in alone)]
                if together:
                    write_compacts(store, together, compact_models, con, kept=kept)
                for read in alone:
                    write_compacts(store, [read], compact_models, con, failures, kept)
            finally:  # a pass that failed still removes every batch it was given
                ahead.done(reads)
    finally:  # stopped by a failure: what was read ahead goes too
        ahead.close()
