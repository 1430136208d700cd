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
import shutil
import tempfile
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

import duckdb
from pydantic import ValidationError

from pvbench.analytics.resources import readable
from pvbench.analytics.tables import FAILURES_COLUMNS, AnalyticsError, insert_rows, load_rows, row_line
from pvbench.results.schema import SCHEMA_VERSION, ResultDocument
from pvbench.store import Store, StoredObject
from pvbench.store.layout import (
    COMPACT_DOCUMENTS_FILE,
    COMPACT_FAILURES_FILE,
    RESULT_FILE,
    compact_prefix,
    compact_table_file,
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
COMPACT_TABLES = (COMPACT_TABLE, OCCASIONS_TABLE, *PER_RUN_TABLES)
# The compact's format: bumped when a compact table gains or changes columns, or a new one is added
# (2: the volume lifecycle; 3: multi-client clients, straggler_ratio; 5: client_volumes;
# 6: occasion_measurements; 7: warmup_by_occasion, run_cells, run_usage; 8: run_setup; 9: the
# observations' fields in sort order). Written into
# documents.parquet's metadata; a compact of another format is rebuilt from its run's documents,
# like one whose listing changed.
COMPACT_FORMAT = "9"
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
        where = run_of(obj.key)
        # a run's compact is compact/campaign=<c>/run=<r>/<file>; anything else there is not one
        if where is not None and obj.key.split("/")[2].startswith("run=") and obj.key.count("/") == 3:
            files.setdefault(where, {})[obj.key.rsplit("/", 1)[-1]] = obj.version
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


def read_run(store: Store, listing: RunListing) -> ReadRun:
    """Read the run's documents once and validate them (the Python half of a compaction: it can
    run in a thread while DuckDB writes the previous run's compact).

    Valid documents go verbatim (newlines are whitespace in JSON, so each becomes one line) into
    the batch with their source_key and cell_key in front.
    """
    read = ReadRun(listing, tempfile.mkdtemp(prefix="pvbench-compact-"))
    try:
        _read_into(store, read)
    except BaseException:
        read.cleanup()
        raise
    return read


def _read_into(store: Store, read: ReadRun) -> None:
    with read.batch.open("wb", buffering=BATCH_BUFFER) as out, read.rows.open("w", buffering=BATCH_BUFFER) as rows:
        for obj, content in _contents(store, read.listing.objects):
            row = {
                "source_key": obj.key,
                "size": obj.size,
                "version": obj.version,
                "cell_key": None,
                "problem": None,
                "reason": None,
            }
            if isinstance(content, Exception):
                row.update(problem="invalid", reason=f"cannot be read: {content}")
            else:
                doc, problem = validate(content)
                if problem is not None:
                    row.update(problem=problem[0], reason=problem[1])
                else:
                    row["cell_key"] = doc.identity.result_key()
                    head = json.dumps({"source_key": obj.key, "cell_key": row["cell_key"]})[:-1] + ","
                    out.write(head.encode() + content.strip()[1:].replace(b"\n", b" ").replace(b"\r", b" ") + b"\n")
                    read.runs.add(doc.identity.run)
                    read.misplaced += row["cell_key"] != obj.key
            rows.write(row_line(row, DOCUMENT_COLUMNS))


def write_compacts(
    store: Store,
    reads: list[ReadRun],
    compact_models: list,
    con: duckdb.DuckDBPyConnection,
    failures: dict[tuple[str, str], list[dict]] | None = None,
) -> None:
    """The DuckDB half: the runs' batches through the raw and normalized models (with the schema's
    column types) at once, each run's rows written as its compact. Removes the batches.

    Several runs go through the models together only when each holds its own documents only (no
    document elsewhere than its identity's key; build_compacts sees to it): then a row's run label
    says whose compact it belongs to, and the models' fixed cost per statement is paid once for
    them all instead of once per run (most of a 1,000-result run's compaction). ``failures``: the
    failed cells given for a run, by (campaign, run), written beside its compact."""
    runs = ", ".join(read.listing.run for read in reads)
    try:
        con.execute("SET VARIABLE result_files = ?", [[str(read.batch) for read in reads]])
        for model in compact_models:
            try:
                con.execute(model.statement)
            except duckdb.Error as exc:
                raise AnalyticsError(f"model {model.layer}/{model.name}.sql failed on run {runs}: {exc}") from exc
        if len(reads) > 1:
            _split_tables(con, reads)
        for read in reads:
            where = (read.listing.campaign, read.listing.run)
            _write_compact(store, read, con, len(reads) > 1, (failures or {}).get(where))
    finally:
        for read in reads:
            read.cleanup()


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
    with tempfile.TemporaryDirectory(prefix="pvbench-parts-") as tmp:
        for table in COMPACT_TABLES:
            out = Path(tmp) / table
            con.execute(
                f"COPY (SELECT *, list_extract(?, list_position(?, run)) AS pvbench_part FROM {table})"
                f" TO '{out}' (FORMAT parquet, PARTITION_BY (pvbench_part), FILENAME_PATTERN 'rows')",
                [parts, labels],
            )
            for part, read in enumerate(reads, 1):
                files = list((out / f"pvbench_part={part}").glob("*.parquet"))
                if len(files) == 1:
                    files[0].replace(Path(read.folder) / compact_table_file(table))


def _write_compact(
    store: Store, read: ReadRun, con: duckdb.DuckDBPyConnection, shared: bool, failures: list[dict] | None
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
    docs_file = tmp / COMPACT_DOCUMENTS_FILE
    load_rows(con, "documents", DOCUMENT_COLUMNS, str(read.rows))  # a row per document listed: never empty
    con.execute(f"COPY documents TO '{docs_file}' (FORMAT parquet, KV_METADATA {{{FORMAT_KEY}: '{COMPACT_FORMAT}'}})")
    parquet = "application/vnd.apache.parquet"
    # the tables first, documents last: a compact whose documents table is missing is rebuilt
    for table in COMPACT_TABLES:
        file = compact_table_file(table)
        store.put_bytes(compact.table_key(table), (tmp / file).read_bytes(), content_type=parquet)
    if failures is not None:
        failures_file = tmp / COMPACT_FAILURES_FILE
        insert_rows(con, "failures", FAILURES_COLUMNS, [{**f, "run": f.get("run") or listing.run} for f in failures])
        con.execute(f"COPY failures TO '{failures_file}' (FORMAT parquet)")
        store.put_bytes(compact.failures_key, failures_file.read_bytes(), content_type=parquet)
    store.put_bytes(compact.documents_key, docs_file.read_bytes(), content_type=parquet)


# Runs compacted together (one pass of the models): up to this many documents, or runs, at once.
BATCH_DOCUMENTS = 10_000
BATCH_RUNS = 32


def _batches(listings: Iterable[RunListing]) -> Iterator[tuple[list[RunListing], bool]]:
    """Consecutive runs of one campaign, up to BATCH_DOCUMENTS documents or BATCH_RUNS runs each;
    a batch as soon as the run after it is listed (or the listing ends), with whether another
    batch follows (a run was listed after it)."""
    batch: list[RunListing] = []
    size = 0
    for listing in listings:
        if batch and (
            batch[0].campaign != listing.campaign
            or len(batch) >= BATCH_RUNS
            or size + len(listing.objects) > BATCH_DOCUMENTS
        ):
            yield batch, True
            batch, size = [], 0
        batch.append(listing)
        size += len(listing.objects)
    if batch:
        yield batch, False


class _Readers:
    """Where a batch's documents are read and validated: the reader thread itself, or, from a
    full aggregation's second batch on, a second process (see build_compacts).

    The process is spawned, not forked: the parent holds DuckDB's threads and their locks. Like
    any spawned process it imports the parent's main module, so a script that aggregates needs
    the usual ``if __name__ == "__main__":`` guard; without one (or if the process cannot start
    or dies) the process is given up and the batches are read in the thread, as before."""

    def __init__(self, store: Store, separate: bool):
        self.store, self.separate, self.batches, self.pool = store, separate, 0, None

    def read(self, batch: list[RunListing], more: bool) -> list[ReadRun]:
        self.batches += 1
        if self.separate and self.batches == 1 and more:
            self._start()  # it starts (~0.5 s) while this thread reads the first batch
        if self.separate and self.batches > 1:  # the first batch: no process to wait for
            try:
                return self._in_process(batch)
            except BrokenProcessPool as exc:
                log.warning("the reader process failed (%s); reading the documents in this process", exc)
                self.separate = False
                self.close()
        return [read_run(self.store, listing) for listing in batch]

    def _start(self) -> None:
        """The process, started: it imports this module to run _started (a failure to start is
        seen, and handled, when the second batch is given to it)."""
        if self.pool is None:
            self.pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
            self.pool.submit(_started)

    def _in_process(self, batch: list[RunListing]) -> list[ReadRun]:
        self._start()
        futures, reads = [], []
        try:  # a pool that broke meanwhile refuses a submit: the runs submitted before go too
            for listing in batch:
                futures.append(self.pool.submit(read_run, self.store, listing))
            for future in futures:
                reads.append(future.result())
        except BaseException:  # the runs of the batch read already go with it
            for read in reads:
                read.cleanup()
            for future in futures[len(reads) :]:  # the one that failed raises again: suppressed
                with contextlib.suppress(BaseException):
                    future.result().cleanup()
            raise
        return reads

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
            self.pool = None


def _started() -> None:
    """What a reader process runs first: nothing, but to run it the process imports this module
    (pydantic and the schema), which is most of its start."""


def _read_next(batches: Iterator[tuple[list[RunListing], bool]], readers: _Readers) -> list[ReadRun] | None:
    """The next batch's documents, read (None when there is none): the listing behind the batches
    advances here too, in the reader's thread."""
    item = next(batches, None)
    return None if item is None else readers.read(*item)


def build_compacts(
    store: Store,
    listings: Iterable[RunListing],
    compact_models: list,
    con: duckdb.DuckDBPyConnection,
    failures: dict[tuple[str, str], list[dict]] | None = None,
    progress: Callable[[RunListing], None] | None = None,
    separate_reader: bool = False,
) -> None:
    """Compact the runs, a batch of runs at a time (_batches: the models run once per batch, not
    once per run), reading the next batch's documents in a thread while DuckDB writes the compacts
    of this one: reading files (or S3 GETs) and DuckDB both release the GIL, so on two cores a
    compaction costs little more than the read. At most two batches exist at once.

    ``listings`` may be a stream (iter_runs): it is advanced in the reader's thread, so the
    listing of later runs overlaps the compaction of the first ones.

    ``separate_reader``: from the second batch on, the documents are read and validated in a
    second process, the reader thread only waiting for it. Reading a local store is Python
    (system calls, pydantic) that held the GIL against the thread that drives DuckDB and lists
    the store; once DuckDB's half was no longer the slower one, that contention was what kept the
    two halves from overlapping. The first batch is read in the thread, so a campaign of one
    batch never waits for a process to start; when a second batch follows, the process starts
    while the first is read, and is ready when the second is given to it.

    A run goes through the models on its own when it holds a document elsewhere than its
    identity's key (a copy: its rows could fall in another run's groups) or has failures given.
    ``failures``: what failed, by (campaign, run), for the runs that have any."""
    failures = failures or {}
    batches = _batches(listings)
    readers = _Readers(store, separate_reader)
    with ThreadPoolExecutor(1) as reader:
        pending = reader.submit(_read_next, batches, readers)
        try:
            while (reads := pending.result()) is not None:
                pending = reader.submit(_read_next, batches, readers)
                for read in reads:
                    if progress:
                        progress(read.listing)
                alone = [r for r in reads if r.misplaced or (r.listing.campaign, r.listing.run) in failures]
                together = [r for r in reads if all(r is not a for a in alone)]
                try:
                    if together:
                        write_compacts(store, together, compact_models, con)
                    for read in alone:
                        write_compacts(store, [read], compact_models, con, failures)
                finally:  # a pass that failed still removes every batch it was given
                    for read in reads:
                        read.cleanup()
        finally:  # stopped by a failure: the batch read ahead goes too
            with contextlib.suppress(BaseException):
                for read in pending.result() or []:
                    read.cleanup()
            readers.close()
