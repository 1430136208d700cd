"""Run the SQL models of analytics/ with DuckDB and write their tables as Parquet.

The SQL lives in analytics/ (dbt-style: one SELECT per file, named for the table it
makes, layered raw → normalized → summaries → report). This module only orders the
files by the tables they mention, binds where the results are, and writes outputs.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import logging
import os
import re
import sys
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import duckdb

from pvbench.analytics import snapshot
from pvbench.analytics.compact import (
    COMPACT_TABLE,
    COMPACT_TABLES,
    DOCUMENT_COLUMNS,
    PER_RUN_TABLES,
    Compact,
    Kept,
    RunListing,
    build_compacts,
    is_current,
    iter_runs,
    list_compacts,
    list_runs,
)
from pvbench.analytics.resources import compaction_threads, configure, cpu_limit, duckdb_settings, readable
from pvbench.analytics.tables import (
    FAILURES_COLUMNS,
    FAILURES_TABLE,
    SKIPPED_COLUMNS,
    SKIPPED_TABLE,
    AnalyticsError,
    insert_rows,
)
from pvbench.results.metrics import METRIC_COLUMNS, METRIC_TABLE, SOURCES, metric_rows, metrics_from
from pvbench.store import LocalStore, Store
from pvbench.store.layout import COMPACT_ROOT, PARQUET_TYPE, results_prefix, slug
from pvbench.store.locks import folder_lock

# The table of every measured value, one row each (made when a run is compacted).
VALUES_TABLE = "result_values"

# The runner's bookkeeping tables, never written out.
INTERNAL_TABLES = {"compact_documents", "counted_documents", "failures_given"}

MAX_WARNINGS = 10

# skipped_results.problem of a second copy of a cell's result (counted once, at the other key)
DUPLICATE = "duplicate"

log = logging.getLogger("pvbench.analytics")


def analytics_dir() -> Path:
    """analytics/ of the repo, or $PVBENCH_ANALYTICS_DIR (set in the runner image)."""
    env = os.environ.get("PVBENCH_ANALYTICS_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "analytics"


@dataclass(frozen=True)
class Model:
    name: str
    path: Path
    layer: str

    @functools.cached_property  # read once: a changed file is another Model (_ordered_models' key)
    def sql(self) -> str:
        return self.path.read_text()

    @property
    def materialized(self) -> str:
        """``table`` (the default), or ``view`` when the file says ``-- materialized: view`` (dbt's
        config, as a comment): a per-value table read by one model is computed where it is read,
        so the reader's filter reaches into it and its rows are never all stored."""
        return "view" if re.search(r"^--\s*materialized:\s*view\s*$", self.sql, re.M) else "table"

    @property
    def statement(self) -> str:
        """What makes it: CREATE OR REPLACE TABLE (or VIEW) <name> AS <its query>."""
        return f"CREATE OR REPLACE {self.materialized.upper()} {self.name} AS\n{self.sql}"


def discover_models(root: Path | None = None) -> list[Model]:
    """All models, ordered so each runs after the tables it reads (by name reference)."""
    root = root or analytics_dir()
    paths = sorted((root / "models").glob("*/*.sql"))
    stats = ((p, p.stat()) for p in paths)
    return list(_ordered_models(tuple((p, st.st_mtime_ns, st.st_size) for p, st in stats), root))


@functools.lru_cache(maxsize=8)
def _ordered_models(files: tuple[tuple[Path, int, int], ...], root: Path) -> tuple[Model, ...]:
    """discover_models' work, done once per set of files as they are (an aggregation asks three times)."""
    models = [Model(p.stem, p, p.parent.name) for p, *_ in files]
    if not models:
        raise AnalyticsError(f"no SQL models under {root / 'models'}")
    names = {m.name for m in models}
    deps = _reads(models)
    ordered: list[Model] = []
    done: set[str] = set()
    by_name = {m.name: m for m in models}
    while len(ordered) < len(models):
        ready = [m for m in models if m.name not in done and deps[m.name] <= done]
        if not ready:
            raise AnalyticsError(f"circular references between models: {sorted(names - done)}")
        for m in sorted(ready, key=lambda m: (m.layer, m.name)):
            ordered.append(by_name[m.name])
            done.add(m.name)
    return tuple(ordered)


def _reads(models: Sequence[Model]) -> dict[str, frozenset[str]]:
    """The models each model reads: those whose names it mentions as words (names are identifiers:
    one set of each file's words, not a regex per pair of models, which cost 0.1 s at every start
    and ~20 ms per models_for). Cached by the models' texts: a model file changed in place is the
    same Model, with other reads."""
    return _reads_of(tuple((m.name, m.sql) for m in models))


@functools.lru_cache(maxsize=8)
def _reads_of(texts: tuple[tuple[str, str], ...]) -> dict[str, frozenset[str]]:
    names = {name for name, _ in texts}
    return {name: frozenset((set(re.findall(r"\w+", _strip_comments(sql))) & names) - {name}) for name, sql in texts}


def _strip_comments(sql: str) -> str:
    return re.sub(r"--[^\n]*", "", sql)


class _PandasIsAbsent(importlib.abc.MetaPathFinder):
    """``import pandas`` fails at once, as it would after walking sys.path (see _pandas_is_absent)."""

    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def _pandas_is_absent() -> None:
    """DuckDB's Python layer tries ``import pandas`` twice for every call of a Python function
    from SQL (f_pvalue, t_quantile …) and every Python value it converts. pvbench does not install
    pandas, and Python does not remember a failed import: each try walked sys.path again (~50 µs;
    a third of a 100,000-result aggregation). A finder in front answers "no pandas" at once, with
    the same ModuleNotFoundError (not a None in sys.modules, which other libraries, e.g. pyarrow,
    would take for a module)."""
    if any(isinstance(f, _PandasIsAbsent) for f in sys.meta_path):
        return
    if "pandas" not in sys.modules and importlib.util.find_spec("pandas") is None:
        sys.meta_path.insert(0, _PandasIsAbsent())


def connect() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with this process's limits. It reads a store's keys as
    ``resources.readable`` gives them (S3 set up there, at the first s3:// path)."""
    _pandas_is_absent()
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    configure(con)
    return con


def load_seeds(con: duckdb.DuckDBPyConnection, root: Path) -> None:
    for csv in sorted((root / "seeds").glob("*.csv")):
        con.execute(f"CREATE OR REPLACE TABLE {csv.stem} AS SELECT * FROM read_csv(?, header = true)", [str(csv)])


def install_metrics(con: duckdb.DuckDBPyConnection) -> None:
    """The metric catalog (pvbench.results.metrics) as table ``metric_catalog``, and for each source
    the names of its metrics as variable ``metrics_<source>`` (result_values.sql unpivots those)."""
    insert_rows(con, METRIC_TABLE, METRIC_COLUMNS, metric_rows())
    for source in SOURCES:
        con.execute(f"SET VARIABLE metrics_{source} = ?", [metrics_from(source)])


def select_documents(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """Which of the compacted documents count; returns the left-out ones as SKIPPED_COLUMNS rows.

    Reads ``compact_documents`` (every result.json of the selected runs, as compacted) and, when
    a document is elsewhere than its identity's key, makes ``counted_documents`` (source_key,
    cell_key: the ones counted). A document that is unreadable, invalid or of another schema
    version is left out with its reason instead of failing the campaign. Each cell identity is
    counted once: a copy of a result under a second key (the same campaign/run/occasion/storage
    class/profile/workload/rep inside) is left out, the copy at the key the layout gives that
    identity being the one counted.
    """
    skipped = [
        {"source_key": key, "problem": problem, "reason": reason, "counted_as": None}
        for key, problem, reason in con.execute(
            "SELECT source_key, problem, reason FROM compact_documents WHERE problem IS NOT NULL"
        ).fetchall()
    ]
    # Two keys can hold one identity only if a document is somewhere else than its identity's key;
    # when none is (the rule), every valid document counts, without ranking 100,000 keys.
    misplaced = con.execute(
        "SELECT count(*) FROM compact_documents WHERE problem IS NULL AND source_key <> cell_key"
    ).fetchone()[0]
    duplicates = []
    if misplaced:  # (counted_documents is read only where a copy is left out: none is when none is misplaced)
        con.execute("""
            CREATE OR REPLACE TABLE counted_documents AS
            SELECT source_key, cell_key FROM compact_documents WHERE problem IS NULL
            QUALIFY row_number() OVER (PARTITION BY cell_key ORDER BY source_key = cell_key DESC, source_key) = 1""")
        duplicates = con.execute("""
            SELECT d.source_key, c.source_key FROM compact_documents d JOIN counted_documents c USING (cell_key)
            WHERE d.problem IS NULL AND d.source_key <> c.source_key""").fetchall()
    for key, keep in duplicates:
        skipped.append(
            {
                "source_key": key,
                "problem": DUPLICATE,
                "counted_as": keep,
                "reason": f"the same cell as {keep} (its identity says so), counted once",
            }
        )
    return sorted(skipped, key=lambda r: r["source_key"])


def install_skipped(con: duckdb.DuckDBPyConnection, skipped: list[dict]) -> None:
    insert_rows(con, SKIPPED_TABLE, SKIPPED_COLUMNS, skipped)


def models_for(models: Sequence[Model], tables: Iterable[str]) -> list[Model]:
    """The models that make ``tables``, with every model they read, in ``models``' order."""
    reads = _reads(models)
    needed, todo = set(), list(tables)
    while todo:
        name = todo.pop()
        if name in needed or name not in reads:
            continue
        needed.add(name)
        todo.extend(reads[name])
    return [m for m in models if m.name in needed]


def compaction_models(models: list[Model]) -> tuple[list[Model], list[Model]]:
    """(the models a run's compact is made with: COMPACT_TABLES and what they read, the rest)."""
    compact = models_for(models, COMPACT_TABLES)
    return compact, [m for m in models if m not in compact]


def refresh_compacts(
    store: Store,
    con: duckdb.DuckDBPyConnection,
    campaign: str | None,
    run: str | None = None,
    root: Path | None = None,
    failures: list[dict] | None = None,
    progress: Callable[[str], None] | None = None,
    prefetched: snapshot.Prefetch | None = None,
    kept: Kept | None = None,
) -> list[Compact]:
    """Bring the compacts up to date and return those to read.

    Without ``run``: every run of the campaign (or of the store) is listed and any run whose
    compact is missing or differs from its listing is compacted again. With ``run``: only that run
    is listed and compacted (the one that just finished); the campaign's other runs are read as
    they were compacted, which is what makes adding a run cheap. ``failures`` belong to ``run``.
    ``con``: where to compact; the campaign's models run on it next, with every thread again.
    ``prefetched``: the campaign's compacts are listed there, beside the run's documents.
    ``kept``: the compact tables made stay on ``con`` (compact.Kept), for the campaign's tables.
    """
    root = root or analytics_dir()
    compact_models, _ = compaction_models(discover_models(root))
    # Without run, the campaign's runs are a stream (iter_runs), listed as they are compacted;
    # ``listings`` gets each as it is listed, and has them all once build_compacts is done.
    listings = list_runs(store, campaign, run) if run is not None else {}
    existing = prefetched.compacts() if prefetched is not None else list_compacts(store, campaign)
    own = set(listings)  # the run that finished (its failures are given)
    if run is not None and failures is None and not listings:
        _check_run_exists(store, existing, campaign, run)
    if run is not None:
        # Compacts an older pvbench made (without occasion_measurements) are compacted again from
        # their documents, though another run is the one that finished: read as they are, they
        # would leave their runs out of the campaign's tables. Once, at the first run after an
        # upgrade; a run whose documents are gone is left out, as a full aggregation leaves it.
        for where, compact in list(existing.items()):
            if not compact.complete:
                listings.update(list_runs(store, *where))
                if where not in listings:
                    log.warning("compact %s is of an older format and its run has no results: left out", compact.prefix)
                    del existing[where]
    try:
        prepare_compaction(con, many_runs=run is None)
        held = snapshot.held_documents(con, store, existing) if run is None else {}

        check = con.cursor()  # where the stream is listed: the reader's thread (build_compacts)

        def stale(listing: RunListing) -> bool:
            where = (listing.campaign, listing.run)
            if where not in existing or not existing[where].complete or (failures is not None and where in own):
                return True
            if where in held:  # the snapshot holds this compact as it is: its documents are there
                return held[where] != listing.fingerprint()
            return not is_current(check, store, existing[where], listing)

        todo: list[RunListing] = []

        def compacted(stream: Iterable[RunListing], always: Sequence[RunListing]) -> Iterator[RunListing]:
            """The stale runs of ``stream`` (each kept in ``listings`` as it is listed), then
            ``always``; each noted in ``todo`` as it goes to be compacted."""
            for listing in stream:
                listings[(listing.campaign, listing.run)] = listing
                if stale(listing):
                    todo.append(listing)
                    yield listing
            for listing in always:
                todo.append(listing)
                yield listing

        given: dict[tuple[str, str], list[dict]] = {}
        unlisted: list[RunListing] = []
        if run is not None and failures is not None:
            given = {where: failures for where in own}
            where = (slug(campaign), slug(run)) if campaign is not None else None
            if where is not None and where not in listings:  # every cell failed: keep the failures, with no results
                given[where] = failures
                unlisted.append(RunListing(*where, ()))

        def announce(listing: RunListing) -> None:
            if progress and listing.objects:
                progress(f"compacting run {listing.run}: {len(listing.objects)} documents")

        stream = iter_runs(store, campaign) if run is None else list(listings.values())
        # A full aggregation of a local store reads its later batches in a second process (where
        # there is a second core): reading local files is Python that held the GIL against DuckDB's
        # thread. Not on S3, where the reader mostly waits for overlapped GETs.
        separate = run is None and isinstance(store, LocalStore) and cpu_limit() > 1
        try:
            build_compacts(store, compacted(stream, unlisted), compact_models, con, given, announce, separate, kept)
        finally:
            check.close()
        if todo:  # listed again: the versions of the compacts just made (the campaign's snapshot records them)
            one = todo[0] if len(todo) == 1 else None  # the usual addition: its own folder, not the campaign's
            relisted = list_compacts(store, one.campaign if one else campaign, one.run if one else None)
            for listing in todo:
                where = (listing.campaign, listing.run)
                existing[where] = relisted.get(where, Compact(*where))
        if run is not None:
            return list(existing.values())
        # Without --run every run was listed: a compact whose run has no result.json left stays
        # out (its results were removed), unless it never had any (a run whose every cell failed
        # keeps its failures).
        return [
            c
            for where, c in existing.items()
            if where in listings
            or not con.execute(
                "SELECT count(*) FROM read_parquet(?)", [readable(con, store, c.documents_key)]
            ).fetchone()[0]
        ]
    finally:  # the connection goes on to the campaign's models: every thread again
        con.execute("SET threads = ?", [duckdb_settings()["threads"]])


def _check_run_exists(store: Store, existing: dict[tuple[str, str], Compact], campaign: str | None, run: str) -> None:
    """A named run with no results, no compact and no failures given is a mistake (a typo in
    ``--run``, the wrong campaign): said before anything is built, with the campaign's runs. It
    used to aggregate the campaign without it and exit 0, as if the run had been added. (The Argo
    exit handler always gives its failures, even none: a run that stored nothing still ends.)"""
    where = (slug(campaign), slug(run)) if campaign is not None else None
    if where in existing:  # compacted before, its documents since removed: read as it was
        return
    runs = sorted(r for c, r in existing if where is None or c == where[0])
    shown = ", ".join(runs[:5]) + (" …" if len(runs) > 5 else "")
    # the wrong --campaign: the campaigns whose compacts have that run (every campaign's compacts are
    # listed, a few keys a run, on this path only; the given campaign has none, see above)
    elsewhere = sorted({c for c, r in list_compacts(store, None) if r == slug(run)})
    raise AnalyticsError(
        f"run {run!r} has no results in {store.url}/{results_prefix(campaign, run)} and no compact; "
        + (
            f"campaign {campaign!r} has {len(runs)} compacted run(s): {shown}"
            if runs
            else f"campaign {campaign!r} has no compacted run yet (aggregate it without --run to compact them all)"
        )
        + (f"; a run {slug(run)!r} is in campaign(s) {', '.join(map(repr, elsewhere))}" if elsewhere else "")
    )


def prepare_compaction(con: duckdb.DuckDBPyConnection, many_runs: bool) -> None:
    """``con`` as runs are compacted on it (refresh_compacts; pvbench_lab.bench_fixed_costs times a batch
    so). ``many_runs``: a batch is compacted while the next is read (compaction_threads), not one
    run's batch. The caller sets the threads back for the campaign's models."""
    # A compact's rows are sets: every model that makes them groups, sorts or ranks explicitly, and
    # whatever reads them does too. Not keeping the batch's row order spares DuckDB its ordered
    # materializations.
    con.execute("SET preserve_insertion_order = false")
    if many_runs:
        con.execute("SET threads = ?", [compaction_threads()])
    install_metrics(con)  # result_values reads the metric catalog


def install_failures(con: duckdb.DuckDBPyConnection) -> None:
    """Table run_failures_input: the failed cells of every selected run (each run's compact keeps its own)."""
    insert_rows(con, FAILURES_TABLE, FAILURES_COLUMNS, [])
    names = ", ".join(FAILURES_COLUMNS)
    con.execute(f"INSERT INTO {FAILURES_TABLE} SELECT {names} FROM compact_failures")


Step = Callable[[duckdb.DuckDBPyConnection], None]


# A run's compact file as an error names it: a local store's path, an s3:// URL or the local copy
# of one (copies keep their keys' folders)
_BROKEN_COMPACT = re.compile(rf"(?:^|[/'\"\s])({COMPACT_ROOT}/campaign=([^/\s'\"]+)/run=([^/\s'\"]+))/")


def build_tables(store: Store, campaign: str | None = None, run: str | None = None, root: Path | None = None, **kw):
    """_build_tables (its arguments, its tables), healing what it can: a run's compact is made from
    its documents (the archive), so a compact file that cannot be read (cut short by a full disk,
    damaged by a copy) is not the end of the campaign (it failed every aggregation, until removed
    by hand). DuckDB's error names the file: the run's compact is made again from its documents,
    with a warning, and the tables are built again; once (a second error is raised). An
    unreadable snapshot is read past already (snapshot.load_compacts)."""
    try:
        return _build_tables(store, campaign, run, root, **kw)
    except (duckdb.Error, AnalyticsError) as exc:
        broken = _BROKEN_COMPACT.search(str(exc))
        if broken is None:
            raise
        compact = Compact(broken.group(2), broken.group(3))
        why = str(exc).splitlines()[0]
        warn = kw.get("warn") or log.warning
        warn(f"{broken.group(1)} cannot be read ({why}): run {compact.run}'s compact is made again from its documents")
        _remake_compact(store, compact, root)
    return _build_tables(store, campaign, run, root, **kw)


def _remake_compact(store: Store, compact: Compact, root: Path | None) -> None:
    store.delete(compact.documents_key)  # written last: a compact without it is made again, whole
    con = connect()
    try:
        refresh_compacts(store, con, compact.campaign, compact.run, root, kept=Kept())
    finally:
        con.close()


def _build_tables(
    store: Store,
    campaign: str | None = None,
    run: str | None = None,
    root: Path | None = None,
    *,
    before: Sequence[Step] = (),
    after: Sequence[Step] = (),
    failures: list[dict] | None = None,
    warn: Callable[[str], None] | None = None,
    only_run: bool = False,
    progress: Callable[[str], None] | None = None,
    keep_snapshot: bool = True,
    tables: Sequence[str] | None = None,
) -> duckdb.DuckDBPyConnection:
    """Run every model over the campaign's compacts; returns the connection holding the tables.

    ``run``: the run that is new or changed — only it is listed and compacted, and the tables
    are the campaign's, every other run read from its compact as it was. ``only_run``: the tables
    of that run alone (``pvbench compare`` selecting one run).
    ``before``: steps that run on the connection before the models (tables and SQL functions the
    models read); ``after``: steps that make tables from the models' (pvbench.pipeline gives both).
    ``failures``: rows of FAILURES_COLUMNS, what failed in ``run`` (report_failures shows them).
    ``warn``: gets one line per document left out; default: the logging module.
    ``keep_snapshot``: write the campaign's snapshot when it is due (pvbench.analytics.snapshot);
    False where nothing written beside the run's compact is kept (the Argo step's artifacts).
    ``tables``: only the models that make these (and what they read) run: a caller that reads one
    table (``pvbench compare`` reads measurements) does not wait for the report's.
    """
    root = root or analytics_dir()
    failed = "".join(f"\n  {f['node']}: {f['phase']}: {f['message']}" for f in failures or [])
    # adding a run: what is read beside it is listed and fetched while it is compacted
    prefetched = snapshot.Prefetch(store, slug(campaign), slug(run)) if run and campaign and not only_run else None
    # the runs compacted here stay on the connection (Kept): the campaign reads them there
    con, kept = connect(), Kept()
    try:
        compacts = refresh_compacts(
            store, con, campaign, run, root, failures if run else None, progress, prefetched, kept
        )
        if only_run and run is not None:
            compacts = [c for c in compacts if c.run == slug(run)]
        prefix = results_prefix(campaign, run if only_run else None)
        if not compacts:
            raise AnalyticsError(f"no results in {store.url}/{prefix}" + (f"; what failed:{failed}" if failed else ""))
        loaded = snapshot.load_compacts(con, store, compacts, prefetched, kept)
    except BaseException:
        con.close()
        raise
    finally:
        if prefetched is not None:
            prefetched.close()
    skipped = select_documents(con)
    warn = warn or log.warning
    for row in skipped[:MAX_WARNINGS]:
        what = "counted once" if row["problem"] == DUPLICATE else "skipped"
        warn(f"{what}: {row['source_key']}: {row['reason']}")
    if len(skipped) > MAX_WARNINGS:
        warn(f"… and {len(skipped) - MAX_WARNINGS} more documents left out (table skipped_results)")
    compact_models, campaign_models = compaction_models(discover_models(root))
    if tables is not None:
        campaign_models = models_for(campaign_models, tables)
    # the valid documents left out are the copies select_documents counted once (not a second
    # query of 100,000 keys against the counted ones: 0.04 s of every addition)
    uncounted = sum(1 for row in skipped if row["problem"] == DUPLICATE)
    # The compacts' rows, less where they came from; a view (each model reads only its columns),
    # or, when a copy of a document is left out, a table of the counted rows only.
    if uncounted:
        con.execute(
            f"""CREATE OR REPLACE TABLE {COMPACT_TABLE} AS SELECT * EXCLUDE (compact_campaign, compact_run)
            FROM compact_{COMPACT_TABLE} WHERE source_key IN (SELECT source_key FROM counted_documents)"""
        )
    else:
        con.execute(
            f"CREATE OR REPLACE VIEW {COMPACT_TABLE} AS SELECT * EXCLUDE (compact_campaign, compact_run)"
            f" FROM compact_{COMPACT_TABLE}"
        )
    if not con.execute(f"SELECT count(*) FROM {COMPACT_TABLE}").fetchone()[0]:
        if not con.execute("SELECT count(*) FROM compact_documents").fetchone()[0]:
            raise AnalyticsError(f"no results in {store.url}/{prefix}" + (f"; what failed:{failed}" if failed else ""))
        raise AnalyticsError(
            f"no valid results in {store.url}/{prefix}: {len(skipped)} document(s) left out"
            + (f"; what failed:{failed}" if failed else "")
        )
    install_inputs(con, root, skipped)
    read_occasions(con, compact_models, uncounted)
    install_failures(con)
    if failures and run is None:  # failures of no named run: shown, not kept
        con.execute(f"INSERT INTO {FAILURES_TABLE} SELECT * FROM {_failures_rows(con, failures)}")
    # a snapshot that is due is written beside the models (its own cursor; DuckDB releases the GIL)
    writing = None
    if keep_snapshot and not only_run:
        todo = {c: snapshot.due(loaded, compacts, c, run is None) for c in sorted({c.campaign for c in compacts})}
        todo = {campaign: how for campaign, how in todo.items() if how}
        if todo:
            writing = threading.Thread(target=_write_snapshots, args=(con.cursor(), store, todo, compacts, loaded))
            writing.start()
    try:
        run_models(con, campaign_models, before, after)
    finally:
        if writing is not None:
            writing.join()
    return con


def _write_snapshots(
    cursor: duckdb.DuckDBPyConnection,
    store: Store,
    todo: dict[str, str],
    compacts: list[Compact],
    loaded: snapshot.Loaded,
) -> None:
    """Write each campaign's snapshot as ``todo`` says (snapshot.due). The snapshot only saves
    reading: one that cannot be written is said, and the campaign's tables are made all the same."""
    try:
        for campaign, how in todo.items():
            snapshot.write_snapshot(cursor, store, campaign, compacts, how, loaded.manifests.get(campaign))
    except Exception as exc:
        log.warning("campaign snapshot not written (%s); the next aggregation reads the runs' compacts", exc)
    finally:
        cursor.close()


def read_occasions(con: duckdb.DuckDBPyConnection, compact_models: list[Model], uncounted: int) -> None:
    """occasion_measurements and the per-run tables of the campaign (COMPACT_TABLES after
    result_rows): the runs' compacts of them, read as they are.

    A compact's tables hold every valid document of its run; when the campaign leaves ``uncounted``
    of them out (a second copy of a cell, kept in another run's folder), they are made again from
    the counted result_rows instead (the models that made them at compaction, run here): slower,
    rare, and nothing is counted twice."""
    if uncounted:
        after_rows = compact_models[[m.name for m in compact_models].index(COMPACT_TABLE) + 1 :]
        for model in after_rows:
            con.execute(model.statement)
        return
    for table in COMPACT_TABLES:
        if table != COMPACT_TABLE:
            con.execute(
                f"CREATE OR REPLACE VIEW {table} AS SELECT * EXCLUDE (compact_campaign, compact_run) FROM compact_{table}"
            )


def install_values(con: duckdb.DuckDBPyConnection, source: str, root: Path | None = None) -> None:
    """Values made elsewhere (the calibrations' simulations: table or view ``source``, with some of
    result_values' columns) as result_values, the missing columns null, then grouped into
    occasion_measurements as a run's compaction groups them: the campaign's models read them so.
    result_values' columns and types are its model's, made over no documents."""
    compact_models, _ = compaction_models(discover_models(root))
    install_metrics(con)
    with tempfile.TemporaryDirectory(prefix="pvbench-values-") as tmp:
        nothing = Path(tmp) / "no-results.ndjson"
        nothing.write_text("")
        con.execute("SET VARIABLE result_files = ?", [[str(nothing)]])
        for model in compact_models:  # tables, whatever the model says: values go into result_values
            con.execute(f"CREATE OR REPLACE TABLE {model.name} AS\n{model.sql}")
    con.execute(f"INSERT INTO {VALUES_TABLE} BY NAME SELECT * FROM {source}")
    # what is made from result_values (occasion_measurements, the per-run tables), made again
    after_values = compact_models[[m.name for m in compact_models].index(VALUES_TABLE) + 1 :]
    for model in after_values:
        con.execute(model.statement)


def install_inputs(con: duckdb.DuckDBPyConnection, root: Path, skipped: list[dict]) -> None:
    """What the campaign's models read beside the results: the documents left out, the seeds and
    the metric catalog."""
    install_skipped(con, skipped)
    load_seeds(con, root)
    install_metrics(con)


@dataclass(frozen=True)
class Overlapped:
    """An ``after`` step in two halves: ``compute`` reads the table ``needs`` in a thread (its own
    cursor) as soon as that model has made it (at once if no model makes it: an input), beside the
    models that follow (DuckDB releases the GIL, so a step computed in Python and the SQL share the
    cores); ``finish`` gets its result on the connection after the models. Called as a plain step,
    it does both in turn."""

    needs: str
    compute: Callable[[duckdb.DuckDBPyConnection], object]
    finish: Callable[[duckdb.DuckDBPyConnection, object], None]

    def __call__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.finish(con, self.compute(con))


def _computed(step: Overlapped, cursor: duckdb.DuckDBPyConnection) -> object:
    try:
        return step.compute(cursor)
    finally:
        cursor.close()


def run_models(
    con: duckdb.DuckDBPyConnection, models: Sequence[Model], before: Sequence[Step] = (), after: Sequence[Step] = ()
) -> None:
    """``before`` steps, the models in order (each makes the table it is named for), ``after`` steps
    (an Overlapped one starts as soon as the table it reads is made)."""
    for step in before:
        step(con)
    overlapped = [s for s in after if isinstance(s, Overlapped)]
    started: dict[int, Future] = {}
    made_here = {m.name for m in models}
    with ThreadPoolExecutor(max(1, len(overlapped))) as pool:
        for step in overlapped:  # what it reads is there already (an input, not a model of these)
            if step.needs not in made_here:
                started[id(step)] = pool.submit(_computed, step, con.cursor())
        for model in models:
            started_at = time.monotonic()
            try:
                con.execute(model.statement)
            except duckdb.Error as exc:
                raise AnalyticsError(f"model {model.layer}/{model.name}.sql failed: {exc}") from exc
            log.debug("model %s: %.2f s", model.name, time.monotonic() - started_at)
            for step in overlapped:
                if step.needs == model.name:
                    started[id(step)] = pool.submit(_computed, step, con.cursor())
        for step in after:
            if isinstance(step, Overlapped) and id(step) in started:
                step.finish(con, started[id(step)].result())
            else:
                step(con)


def empty_tables(
    root: Path | None = None, *, before: Sequence[Step] = (), after: Sequence[Step] = ()
) -> duckdb.DuckDBPyConnection:
    """Every model run over no results at all: each table exists, with the columns and types its
    model gives it, and no rows. A table's schema is read from here (the report's data contract),
    never typed by hand. ``before``/``after``: as for build_tables."""
    root = root or analytics_dir()
    compact_models, campaign_models = compaction_models(discover_models(root))
    con = connect()
    install_metrics(con)
    with tempfile.TemporaryDirectory(prefix="pvbench-empty-") as tmp:
        nothing = Path(tmp) / "no-results.ndjson"
        nothing.write_text("")
        con.execute("SET VARIABLE result_files = ?", [[str(nothing)]])
        run_models(con, compact_models)
    insert_rows(con, "compact_documents", DOCUMENT_COLUMNS, [])  # no documents read
    install_inputs(con, root, select_documents(con))
    insert_rows(con, FAILURES_TABLE, FAILURES_COLUMNS, [])
    run_models(con, campaign_models, before, after)
    return con


def table_columns(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    """``table``'s columns, name → DuckDB type."""
    return {name: kind for name, kind, *_ in con.execute(f"DESCRIBE {table}").fetchall()}


# Tables with a row per result or per measured value are not written out: the rows are the runs'
# compacts already, and writing them again on every aggregation would cost more than computing
# every summary (4 s of 12 at 100,000 results). Every other campaign table is written.
PER_RESULT_TABLES = {"result_rows", "measurements", "anomaly_outliers"}


def output_tables(root: Path | None = None, extra_tables: Sequence[str] = ()) -> list[str]:
    """The tables written out: the per-run ones the compacts hold (PER_RUN_TABLES), the campaign's
    models but the per-result ones, then ``extra_tables`` (made by ``after`` steps)."""
    _, campaign_models = compaction_models(discover_models(root))
    campaign = [m.name for m in campaign_models if m.name not in INTERNAL_TABLES | PER_RESULT_TABLES]
    return list(PER_RUN_TABLES) + campaign + list(extra_tables)


def write_parquet(
    con: duckdb.DuckDBPyConnection,
    out: Store | Path,
    prefix: str = "",
    root: Path | None = None,
    extra_tables: Sequence[str] = (),
) -> dict[str, int]:
    """Write every output table as <prefix>/<table>.parquet; returns row counts.

    The tables are one set: into a directory they are written beside it first (a hidden folder in
    it) and moved in once all are, so a full disk or a bad directory leaves the tables that were
    there as they were, never half of them replaced (AnalyticsError, with why)."""
    counts: dict[str, int] = {}
    if isinstance(out, Path):
        try:
            out.mkdir(parents=True, exist_ok=True)
            scratch = tempfile.TemporaryDirectory(prefix=".pvbench-tables-", dir=out)
        except OSError as exc:
            raise AnalyticsError(f"cannot write the campaign's tables to {out}: {exc.strerror or exc}") from exc
    else:
        scratch = tempfile.TemporaryDirectory(prefix="pvbench-parquet-")
    with scratch as tmp:
        local_dir = Path(tmp)
        files = [local_dir / f"{table}.parquet" for table in output_tables(root, extra_tables)]

        def copy(path: Path) -> int:
            cursor = con.cursor()
            try:  # COPY returns the rows it wrote: no second query to count them
                return cursor.execute(f"COPY {path.stem} TO '{path}' (FORMAT parquet)").fetchone()[0]
            finally:
                cursor.close()

        # a table each per core at once: most are small, and one COPY of a small table keeps one
        # core busy (the ~30 tables of a 100,000-result campaign: 0.25 s one after the other,
        # 0.17 s two at once on 2 cores)
        try:
            with ThreadPoolExecutor(max(1, int(duckdb_settings()["threads"]))) as pool:
                counts.update(zip((p.stem for p in files), pool.map(copy, files)))
        except (duckdb.Error, OSError) as exc:  # e.g. "Could not write file …: No space left on device"
            raise AnalyticsError(f"cannot write the campaign's tables to {out}: {exc}") from exc
        if isinstance(out, Path):
            with folder_lock(out, shared=False):  # not while a report build copies the set
                for p in files:
                    os.replace(p, out / p.name)
        else:
            out.put_many((f"{prefix}/{p.name}" if prefix else p.name, p.read_bytes(), PARQUET_TYPE) for p in files)
    return counts


def _failures_rows(con: duckdb.DuckDBPyConnection, failures: list[dict]) -> str:
    insert_rows(con, "failures_given", FAILURES_COLUMNS, failures)
    return "failures_given"
