"""The campaign's tables as they are written: which ones (output_tables), with which columns
(table_columns; empty_tables: every model run over no results, the report's data contract), and
written as one set of Parquet files (write_parquet)."""

from __future__ import annotations

import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Sequence

import duckdb

from pvbench.analytics.compact import DOCUMENT_COLUMNS, PER_RUN_TABLES
from pvbench.analytics.connection import connect
from pvbench.analytics.inputs import install_inputs, install_metrics, select_documents
from pvbench.analytics.models import analytics_dir, compaction_models, discover_models
from pvbench.analytics.resources import duckdb_settings
from pvbench.analytics.runner import Step, run_models
from pvbench.analytics.tables import FAILURES_COLUMNS, FAILURES_TABLE, AnalyticsError, insert_rows
from pvbench.store import Store
from pvbench.store.layout import PARQUET_TYPE
from pvbench.store.locks import folder_lock

# The runner's bookkeeping tables, never written out.
INTERNAL_TABLES = {"compact_documents", "counted_documents", "failures_given"}


# Tables with a row per result or per measured value are not written out: the rows are the runs'
# compacts already, and writing them again on every aggregation would cost more than computing
# every summary (4 s of 12 at 100,000 results). Every other campaign table is written.
# (cell_seconds, latest_run_seconds: a row per second; the report draws report_seconds_latest.)
PER_RESULT_TABLES = {"result_rows", "measurements", "anomaly_outliers", "cell_seconds", "latest_run_seconds"}


def output_tables(root: Path | None = None, extra_tables: Sequence[str] = ()) -> list[str]:
    """The tables written out: the per-run ones the compacts hold (PER_RUN_TABLES), the campaign's
    models but the per-result ones, then ``extra_tables`` (made by ``after`` steps)."""
    _, campaign_models = compaction_models(discover_models(root))
    campaign = [m.name for m in campaign_models if m.name not in INTERNAL_TABLES | PER_RESULT_TABLES]
    return list(PER_RUN_TABLES) + campaign + list(extra_tables)


def table_columns(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    """``table``'s columns, name → DuckDB type."""
    return {name: kind for name, kind, *_ in con.execute(f"DESCRIBE {table}").fetchall()}


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


def write_parquet(
    con: duckdb.DuckDBPyConnection,
    out: Store | Path,
    prefix: str = "",
    root: Path | None = None,
    extra_tables: Sequence[str] = (),
    copies: dict[str, str] | None = None,
) -> dict[str, int]:
    """Write every output table as <prefix>/<table>.parquet; returns row counts. ``copies``
    (table → key, into a store): the same file under another key too.

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
            extra = [(key, local_dir / f"{table}.parquet") for table, key in (copies or {}).items()]
            out.put_many(
                [(f"{prefix}/{p.name}" if prefix else p.name, p.read_bytes(), PARQUET_TYPE) for p in files]
                + [(key, p.read_bytes(), PARQUET_TYPE) for key, p in extra]
            )
    return counts
