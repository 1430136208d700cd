"""Run the SQL models of analytics/ with DuckDB over a campaign's results: the orchestration.

The runs' compacts are brought up to date (refresh_compacts), read, and the campaign's models run
over them (build_tables, run_models). Elsewhere: the models and their order (analytics.models),
the connection (analytics.connection), what the models read beside the results
(analytics.inputs), the tables written out (analytics.outputs).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import queue
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import duckdb

from pvbench.analytics import snapshot
from pvbench.analytics.compact import (
    COMPACT_TABLE,
    Compact,
    Kept,
    RunListing,
    build_compacts,
    is_current,
    iter_runs,
    list_compacts,
    list_runs,
)
from pvbench.analytics.connection import connect
from pvbench.analytics.inputs import (
    DUPLICATE,
    given_failures,
    install_failures,
    install_inputs,
    install_metrics,
    read_occasions,
    select_documents,
)
from pvbench.analytics.models import Model, analytics_dir, compaction_models, discover_models, model_reads, models_for
from pvbench.analytics.resources import compaction_threads, cpu_limit, duckdb_settings, readable
from pvbench.analytics.tables import FAILURES_TABLE, AnalyticsError
from pvbench.store import LocalStore, Store
from pvbench.store.layout import find_compact, results_prefix, slug

MAX_WARNINGS = 10

log = logging.getLogger("pvbench.analytics")

Step = Callable[[duckdb.DuckDBPyConnection], None]


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
        remade = own if failures is not None else set()  # their failures are given: compacted again
        check = con.cursor()  # where the stream is listed: the reader's thread (build_compacts)
        runs = _StaleRuns(store, check, existing, held, remade, listings)
        given: dict[tuple[str, str], list[dict]] = {}
        unlisted: list[RunListing] = []
        if run is not None and failures is not None:
            given = {where: failures for where in own}
            where = (slug(campaign), slug(run)) if campaign is not None else None
            if where is not None and where not in listings:  # every cell failed: keep the failures, with no results
                given[where] = failures
                unlisted.append(RunListing(*where, ()))
        stream = iter_runs(store, campaign) if run is None else list(listings.values())
        # A full aggregation of a local store reads its later batches in a second process (where
        # there is a second core): reading local files is Python that held the GIL against DuckDB's
        # thread. Not on S3, where the reader mostly waits for overlapped GETs.
        separate = run is None and isinstance(store, LocalStore) and cpu_limit() > 1
        announce = functools.partial(_announce, progress)
        try:
            build_compacts(
                store, runs.compacted(stream, unlisted), compact_models, con, given, announce, separate, kept
            )
        finally:
            check.close()
        todo = runs.todo
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


@dataclass
class _StaleRuns:
    """Which of the listed runs refresh_compacts compacts again, and the listings it keeps: the
    state its stream of runs shares with it (build_compacts advances the stream in its reader's
    thread, and refresh_compacts reads ``listings`` and ``todo`` once it is done)."""

    store: Store
    check: duckdb.DuckDBPyConnection  # the reader's thread's cursor: where a compact is checked
    existing: dict[tuple[str, str], Compact]  # the compacts there are, by (campaign, run)
    held: dict[tuple[str, str], set[tuple[str, int, str]]]  # what the campaign's snapshot holds of them
    remade: set[tuple[str, str]]  # compacted again whatever their compact
    listings: dict[tuple[str, str], RunListing]  # every run listed (the stream's, as it goes)
    todo: list[RunListing] = field(default_factory=list)  # those sent to be compacted

    def stale(self, listing: RunListing) -> bool:
        where = (listing.campaign, listing.run)
        existing = self.existing
        if where not in existing or not existing[where].complete or where in self.remade:
            return True
        if where in self.held:  # the snapshot holds this compact as it is: its documents are there
            return self.held[where] != listing.fingerprint()
        return not is_current(self.check, self.store, existing[where], listing)

    def compacted(self, stream: Iterable[RunListing], always: Sequence[RunListing]) -> Iterator[RunListing]:
        """The stale runs of ``stream`` (each kept in ``listings`` as it is listed), then
        ``always``; each noted in ``todo`` as it goes to be compacted."""
        for listing in stream:
            self.listings[(listing.campaign, listing.run)] = listing
            if self.stale(listing):
                self.todo.append(listing)
                yield listing
        for listing in always:
            self.todo.append(listing)
            yield listing


def _announce(progress: Callable[[str], None] | None, listing: RunListing) -> None:
    if progress and listing.objects:
        progress(f"compacting run {listing.run}: {len(listing.objects)} documents")


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


def build_tables(store: Store, campaign: str | None = None, run: str | None = None, root: Path | None = None, **kw):
    """_build_tables (its arguments: BuildRequest's; its tables), healing what it can: a run's
    compact is made from its documents (the archive), so a compact file that cannot be read (cut
    short by a full disk, damaged by a copy) is not the end of the campaign (it failed every
    aggregation, until removed by hand). DuckDB's error names the file: the run's compact is made
    again from its documents, with a warning, and the tables are built again; once (a second error
    is raised). An unreadable snapshot is read past already (snapshot.load_compacts)."""
    request = BuildRequest(store, campaign, run, root or analytics_dir(), **kw)
    try:
        return _build_tables(request)
    except (duckdb.Error, AnalyticsError) as exc:
        broken = find_compact(str(exc))
        if broken is None:
            raise
        compact = Compact(broken.campaign, broken.run)
        why = str(exc).splitlines()[0]
        warn = request.warn or log.warning
        warn(f"{broken.prefix} cannot be read ({why}): run {compact.run}'s compact is made again from its documents")
        _remake_compact(store, compact, request.root)
    return _build_tables(request)


def _remake_compact(store: Store, compact: Compact, root: Path) -> None:
    store.delete(compact.documents_key)  # written last: a compact without it is made again, whole
    con = connect()
    try:
        refresh_compacts(store, con, compact.campaign, compact.run, root, kept=Kept())
    finally:
        con.close()


@dataclass(frozen=True)
class BuildRequest:
    """What build_tables is asked for: the tables of ``campaign`` in ``store``, made with the models
    under ``root``.

    ``run``: the run that is new or changed — only it is listed and compacted, and the tables
    are the campaign's, every other run read from its compact as it was. ``only_run``: the tables
    of that run alone (``pvbench compare`` selecting one run).
    ``before``: steps that run on the connection before the models (tables and SQL functions the
    models read); ``after``: steps that make tables from the models' (pvbench.pipeline gives both).
    ``failures``: rows of FAILURES_COLUMNS, what failed in ``run`` (report_failures shows them).
    ``warn``: gets one line per document left out; default: the logging module.
    ``progress``: gets a line per run compacted.
    ``keep_snapshot``: write the campaign's snapshot when it is due (pvbench.analytics.snapshot);
    False where nothing written beside the run's compact is kept (the Argo step's artifacts).
    ``tables``: only the models that make these (and what they read) run: a caller that reads one
    table (``pvbench compare`` reads measurements) does not wait for the report's.
    ``keep_flagged``: the guard rules whose flagged results stay in the statistics (by default a
    flag whose rule excludes leaves its result out: inputs.count_occasions).
    """

    store: Store
    campaign: str | None
    run: str | None
    root: Path
    _: dataclasses.KW_ONLY
    before: Sequence[Step] = ()
    after: Sequence[Step] = ()
    failures: list[dict] | None = None
    warn: Callable[[str], None] | None = None
    only_run: bool = False
    progress: Callable[[str], None] | None = None
    keep_snapshot: bool = True
    tables: Sequence[str] | None = None
    keep_flagged: Sequence[str] = ()


def _build_tables(request: BuildRequest) -> duckdb.DuckDBPyConnection:
    """Run every model over the campaign's compacts; returns the connection holding the tables."""
    store, campaign, run, root, failures = request.store, request.campaign, request.run, request.root, request.failures
    only_run = request.only_run
    failed = "".join(f"\n  {f['node']}: {f['phase']}: {f['message']}" for f in failures or [])
    # adding a run: what is read beside it is listed and fetched while it is compacted
    prefetched = snapshot.Prefetch(store, slug(campaign), slug(run)) if run and campaign and not only_run else None
    # the runs compacted here stay on the connection (Kept): the campaign reads them there
    con, kept = connect(), Kept()
    try:
        compacts = refresh_compacts(
            store, con, campaign, run, root, failures if run else None, request.progress, prefetched, kept
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
    warn = request.warn or log.warning
    for row in skipped[:MAX_WARNINGS]:
        what = "counted once" if row["problem"] == DUPLICATE else "skipped"
        warn(f"{what}: {row['source_key']}: {row['reason']}")
    if len(skipped) > MAX_WARNINGS:
        warn(f"… and {len(skipped) - MAX_WARNINGS} more documents left out (table skipped_results)")
    compact_models, campaign_models = compaction_models(discover_models(root))
    if request.tables is not None:
        campaign_models = models_for(campaign_models, request.tables)
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
    read_occasions(con, compact_models, uncounted, request.keep_flagged)
    install_failures(con)
    if failures and run is None:  # failures of no named run: shown, not kept
        con.execute(f"INSERT INTO {FAILURES_TABLE} SELECT * FROM {given_failures(con, failures)}")
    # a snapshot that is due is written beside the models (its own cursor; DuckDB releases the GIL)
    writing = None
    if request.keep_snapshot and not only_run:
        todo = {c: snapshot.due(loaded, compacts, c, run is None) for c in sorted({c.campaign for c in compacts})}
        todo = {campaign: how for campaign, how in todo.items() if how}
        if todo:
            writing = threading.Thread(target=_write_snapshots, args=(con.cursor(), store, todo, compacts, loaded))
            writing.start()
    try:
        run_models(con, campaign_models, request.before, request.after)
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


@dataclass(frozen=True)
class Overlapped:
    """An ``after`` step in two halves, both in a thread on a cursor of its own, beside the models
    that follow (DuckDB releases the GIL, so a step computed in Python and the SQL share the cores):
    ``compute`` reads the table ``needs`` as soon as that model has made it (at once if no model
    makes it: an input), then ``finish`` gets its result and writes the step's tables at once, not
    after every model (no model reads them). Called as a plain step, it does both in turn."""

    needs: str
    compute: Callable[[duckdb.DuckDBPyConnection], object]
    finish: Callable[[duckdb.DuckDBPyConnection, object], None]

    def __call__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.finish(con, self.compute(con))


def _computed(step: Overlapped, cursor: duckdb.DuckDBPyConnection) -> None:
    """``step`` computed and finished on ``cursor``, in a thread beside the models."""
    started_at = time.monotonic()
    try:
        step(cursor)
    finally:
        cursor.close()
        log.debug("beside the models, after %s: %.2f s", step.needs, time.monotonic() - started_at)


def run_models(
    con: duckdb.DuckDBPyConnection, models: Sequence[Model], before: Sequence[Step] = (), after: Sequence[Step] = ()
) -> None:
    """``before`` steps, the models (each makes the table it is named for), ``after`` steps (an
    Overlapped one starts, beside the models, as soon as the table it reads is made).

    Models that do not read each other run at once, each on a cursor of its own
    (models.model_reads says which wait for which), with DuckDB's threads shared between them: on
    2 cores, two models of one thread each. Most models are small statements over the same few
    tables, where a second thread inside one cost more CPU than it saved; two models side by side
    keep both cores busy instead (adding a run at 100,000 results: 2.39 → 2.23 s, docs/performance.md)."""
    for step in before:
        step(con)
    overlapped = [s for s in after if isinstance(s, Overlapped)]
    started: dict[int, Future] = {}
    made_here = {m.name for m in models}
    threads = int(con.execute("SELECT current_setting('threads')").fetchone()[0])
    workers = max(1, min(threads, MODEL_WORKERS))
    if workers > 1:  # each caller's thread works too: the threads in all stay DuckDB's setting
        con.execute("SET threads = ?", [threads - workers + 1])
    try:
        with ThreadPoolExecutor(max(1, len(overlapped))) as beside, ThreadPoolExecutor(workers) as pool:
            for step in overlapped:  # what it reads is there already (an input, not a model of these)
                if step.needs not in made_here:
                    started[id(step)] = beside.submit(_computed, step, _cursor_like(con))
            for model in _in_dependency_order(pool, workers, con, models, (s.needs for s in overlapped)):
                for step in overlapped:
                    if step.needs == model.name:
                        started[id(step)] = beside.submit(_computed, step, _cursor_like(con))
            for step in after:
                if isinstance(step, Overlapped) and id(step) in started:
                    started[id(step)].result()
                else:
                    step(con)
    finally:
        if workers > 1:
            con.execute("SET threads = ?", [threads])


# Models made at once (at most DuckDB's threads).
MODEL_WORKERS = 2


def _in_dependency_order(
    pool: ThreadPoolExecutor,
    workers: int,
    con: duckdb.DuckDBPyConnection,
    models: Sequence[Model],
    needed: Iterable[str] = (),
) -> Iterator[Model]:
    """Make ``models`` on ``pool`` (of ``workers`` threads), each once the models it reads are
    made, and yield each as it is made. Of the models ready, the one with the longest chain of
    work waiting on it goes first (_chain_lengths; ``needed``: the tables Python steps read, which
    start once they are made), then ``models``' order: the end waits for the longest chain
    (variance_prior → summary → the report tables over it), not for the many small
    models. The first model that fails raises AnalyticsError once those running beside it are
    done; none starts after it."""
    reads = model_reads(models)
    chain = _chain_lengths(models, reads, set(needed))
    cursors: queue.SimpleQueue[duckdb.DuckDBPyConnection] = queue.SimpleQueue()
    opened = [_cursor_like(con) for _ in range(workers)]
    for cursor in opened:
        cursors.put(cursor)
    waiting = list(models)
    running: dict[Future, Model] = {}
    made: set[str] = set()
    try:
        while waiting or running:
            ready = sorted((m for m in waiting if reads[m.name] <= made), key=lambda m: -chain[m.name])
            for model in ready[: workers - len(running)]:
                waiting.remove(model)
                running[pool.submit(_make, cursors, model)] = model
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                model = running.pop(future)
                try:
                    future.result()
                except BaseException:
                    wait(running)  # the others end before the connection goes on
                    raise
                made.add(model.name)
                yield model
    finally:
        for cursor in opened:
            cursor.close()


def _chain_lengths(models: Sequence[Model], reads: dict[str, frozenset[str]], needed: set[str]) -> dict[str, int]:
    """Each model's longest chain of work that waits for it, itself included: a model that makes a
    table counts one, one that makes a view none, and a model one more for each view it reads (a
    view is computed where it is read: anomaly_outliers in report_anomalies); a Python step that
    reads it counts two (its computing and its finish)."""
    by_name = {m.name: m for m in models}

    def work(name: str) -> int:
        own = 0 if by_name[name].materialized == "view" else 1
        return own + sum(1 for read in reads[name] if by_name[read].materialized == "view")

    chain: dict[str, int] = {}
    for model in reversed(models):  # models are in dependency order: its readers come after it
        readers = [chain[name] for name, read in reads.items() if model.name in read]
        chain[model.name] = work(model.name) + max(readers + ([2] if model.name in needed else []), default=0)
    return chain


def _cursor_like(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """A cursor of ``con`` with its variables (SET VARIABLE is the connection's own, and the models
    read some: getvariable('keep_flagged'), …)."""
    cursor = con.cursor()
    for name, type_ in con.execute("SELECT name, type FROM duckdb_variables()").fetchall():
        value = con.execute("SELECT getvariable(?)", [name]).fetchone()[0]
        cursor.execute(f'SET VARIABLE "{name}" = CAST(? AS {type_})', [value])
    return cursor


def _make(cursors: queue.SimpleQueue, model: Model) -> None:
    cursor = cursors.get()
    started_at = time.monotonic()
    try:
        cursor.execute(model.statement)
    except duckdb.Error as exc:
        raise AnalyticsError(f"model {model.layer}/{model.name}.sql failed: {exc}") from exc
    finally:
        cursors.put(cursor)
    log.debug("model %s: %.2f s", model.name, time.monotonic() - started_at)
