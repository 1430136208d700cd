"""The campaign's tables: the SQL models with the statistics wired in, and where they are written."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Callable

import duckdb

from pvbench.analytics import outputs, runner
from pvbench.analytics.inputs import check_keep_flagged
from pvbench.analytics.tables import AnalyticsError
from pvbench.cells.guards import KEEP_FLAGGED_ENV, split_rules
from pvbench.pipeline.history import stored_histories
from pvbench.stats.functions import register_functions
from pvbench.stats.history import HISTORY_SOURCE, HISTORY_TABLES, REPORT_HISTORY, history_step
from pvbench.stats.limits import Declarations, LimitsError, find_declarations, install
from pvbench.stats.tables import REPORT_COMPARISONS
from pvbench.stopping import deferred_signals
from pvbench.store import Store
from pvbench.store.layout import analytics_prefix, histories_glob, history_key
from pvbench.store.locks import campaign_lock, ensure_held

# Tables computed in Python over the models' tables (written as Parquet like the SQL ones): the
# comparisons over occasion_measurements, the history's change points over occasion_history.
PYTHON_TABLES = ("report_comparisons", *HISTORY_TABLES)
# the steps that make them
PYTHON_STEPS = (REPORT_COMPARISONS, REPORT_HISTORY)


def _declarations(store: Store, limits: Path | str | None):
    """The step that installs the SQL functions and the user's declarations (storage_class_limits,
    cost_model: always created, empty without a limits file) before the models run."""

    def step(con: duckdb.DuckDBPyConnection) -> None:
        register_functions(con)
        try:
            install(con, find_declarations(store, limits))
        except LimitsError as exc:  # every caller of build_tables reports AnalyticsError cleanly
            raise AnalyticsError(str(exc)) from exc

    return step


def _other_campaigns(store: Store):
    """The history step's other campaigns: the occasion_history tables the store's other campaigns'
    aggregations stored (history_key: their results are not read again; an Argo step is given
    them as an input artifact), rows of this aggregation's classes and of campaigns it did not
    just aggregate. None where the store has none."""

    def relation(con: duckdb.DuckDBPyConnection) -> str | None:
        stored = stored_histories(con, store, histories_glob())
        if stored is None:
            return None
        con.execute(
            f"""CREATE OR REPLACE VIEW stored_occasion_history AS
            SELECT * FROM ({stored})
            WHERE campaign NOT IN (SELECT DISTINCT campaign FROM {HISTORY_SOURCE})
              AND storage_class IN (SELECT DISTINCT storage_class FROM {HISTORY_SOURCE})"""
        )
        return "stored_occasion_history"

    return relation


def table_schemas(root: Path | None = None) -> dict[str, dict[str, str]]:
    """Every table a campaign's aggregation writes, with its columns (name → DuckDB type) as the
    models and the Python-made tables give them: the models run over no results at all
    (outputs.empty_tables), wired as for a campaign with nothing declared. The report's contract."""

    def nothing_declared(con: duckdb.DuckDBPyConnection) -> None:
        register_functions(con)
        install(con, Declarations(limits=[], prices=[]))

    con = outputs.empty_tables(root, before=[nothing_declared], after=PYTHON_STEPS)
    try:
        return {table: outputs.table_columns(con, table) for table in outputs.output_tables(root, PYTHON_TABLES)}
    finally:
        con.close()


def _import_scipy() -> None:
    import scipy.special  # noqa: F401


def build_tables(
    store: Store,
    campaign: str | None = None,
    run: str | None = None,
    root: Path | None = None,
    limits: Path | str | None = None,
    extras: bool = True,
    failures: list[dict] | None = None,
    warn: Callable[[str], None] | None = None,
    only_run: bool = False,
    progress: Callable[[str], None] | None = None,
    keep_snapshot: bool = True,
    tables: tuple[str, ...] | None = None,
    keep_flagged: tuple[str, ...] | None = None,
) -> duckdb.DuckDBPyConnection:
    """Every table of the campaign (or, with ``only_run``, of that run; with ``tables``, those and
    what they read): see analytics.runner.build_tables.

    ``limits``: the user's storage class limits/prices file (else $PVBENCH_LIMITS, else the
    store's config/limits.yaml). ``extras=False`` skips the Python-made tables (report_comparisons, the history's)
    when only SQL ones are needed. ``keep_flagged``: guard rules whose flagged results stay in
    the statistics (else $PVBENCH_KEEP_FLAGGED, comma-separated, else none; each checked against
    the guard catalog first): every command that computes statistics (aggregate, compare, summary,
    stats ci-check) keeps the same ones.
    """
    if keep_flagged is None:
        keep_flagged = tuple(split_rules(os.environ.get(KEEP_FLAGGED_ENV)))
    keep_flagged = check_keep_flagged(keep_flagged)
    # SciPy (the SQL functions' and the comparisons' distributions) takes ~0.5 s to import: done in
    # a thread while DuckDB reads the compacts (which releases the GIL), not when a model first
    # calls f_pvalue.
    threading.Thread(target=_import_scipy, daemon=True).start()
    # a campaign's history takes in the other campaigns' (one run's report, or every campaign's
    # aggregation together, reads no other)
    history = history_step(_other_campaigns(store)) if campaign is not None and not only_run else REPORT_HISTORY
    return runner.build_tables(
        store,
        campaign,
        run,
        root,
        before=[_declarations(store, limits)],
        after=(REPORT_COMPARISONS, history) if extras else (),
        failures=failures,
        warn=warn,
        only_run=only_run,
        progress=progress,
        keep_snapshot=keep_snapshot,
        tables=tables,
        keep_flagged=keep_flagged,
    )


def aggregate(
    store: Store,
    campaign: str | None,
    run: str | None = None,
    out: Path | None = None,
    limits: Path | str | None = None,
    failures: list[dict] | None = None,
    warn: Callable[[str], None] | None = None,
    progress: Callable[[str], None] | None = None,
    keep_snapshot: bool = True,
    waiting: Callable[[str], None] | None = None,
    keep_flagged: tuple[str, ...] | None = None,
) -> tuple[str, dict[str, int]]:
    """Bring the compacts up to date, build the campaign's tables and write them as Parquet: to
    ``out`` if given, else into the store's analytics prefix of the campaign (run=all).

    ``run``: the run that just finished (only it is listed and compacted; see build_tables).
    One aggregation of a campaign of a store at a time (store.locks.campaign_lock): another one
    running is waited for (``waiting`` is told), so the tables written last hold both runs.
    """
    with campaign_lock(store, campaign, waiting=waiting):
        con = build_tables(
            store,
            campaign,
            run,
            limits=limits,
            failures=failures,
            warn=warn,
            progress=progress,
            keep_snapshot=keep_snapshot,
            keep_flagged=keep_flagged,
        )
        ensure_held(store, campaign)  # on S3: still this aggregation's turn (store.locks.StoreLease)
        # the tables are one set: a stop signal (pvbench aggregate's SIGTERM/SIGINT) while they are
        # written waits for the last one, so a report never reads half of them from this aggregation
        with deferred_signals(raise_after=False):
            if out is not None:
                return str(out), outputs.write_parquet(con, out, extra_tables=PYTHON_TABLES)
            prefix = analytics_prefix(campaign or "all")
            # the campaign's history, where the other campaigns' aggregations read it
            copies = {HISTORY_SOURCE: history_key(campaign)} if campaign is not None else None
            return f"{store.url}/{prefix}", outputs.write_parquet(
                con, store, prefix, extra_tables=PYTHON_TABLES, copies=copies
            )
