"""Tables made in Python (inputs beside the results, statistics computed outside SQL), filled fast.

DuckDB's executemany converts each parameter on its own (~20 ms a row for a wide table here), so
rows go through one newline-delimited JSON file that DuckDB reads with the declared types instead.
"""

from __future__ import annotations

import json
import math
import tempfile
from typing import Iterable

import duckdb


class AnalyticsError(RuntimeError):
    pass


# An input beside the results: the steps and cells of a run that failed, as the orchestrator
# reported them (Argo's exit handler: pvbench.argo.failures). Always created, empty when none
# were given, so report_failures.sql can read it; DuckDB types.
FAILURES_TABLE = "run_failures_input"
FAILURES_COLUMNS: dict[str, str] = {
    "run": "VARCHAR",  # the run (its slug, as in the store keys) the step belonged to
    "node": "VARCHAR",  # the orchestrator's name of the failed step (Argo's node display name)
    "template": "VARCHAR",
    "phase": "VARCHAR",  # Failed or Error
    "message": "VARCHAR",
    "storage_class": "VARCHAR",  # a cell's identity; NULL for other steps
    "workload": "VARCHAR",
    "rep": "INTEGER",
    "finished_at": "VARCHAR",
}


# The documents left out of an aggregation, and why (runner-made, read by 1_raw/skipped_results.sql):
# unreadable or invalid ones, other schema versions, and second copies of a cell already counted.
SKIPPED_TABLE = "skipped_results_input"
SKIPPED_COLUMNS: dict[str, str] = {
    "source_key": "VARCHAR",  # the store key of the document left out
    "problem": "VARCHAR",  # invalid | other-schema | duplicate
    "reason": "VARCHAR",
    "counted_as": "VARCHAR",  # for a duplicate: the key of the copy that was counted
}


def _plain(value):
    if isinstance(value, float) and not math.isfinite(value):  # NaN/inf → NULL (JSON has neither)
        return None
    if hasattr(value, "item"):  # numpy scalar
        return _plain(value.item())
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def row_line(row: dict, columns: dict[str, str]) -> str:
    """One row as a line of the newline-delimited JSON that load_rows reads."""
    return json.dumps({name: _plain(row.get(name)) for name in columns}, allow_nan=False) + "\n"


def json_columns(columns: dict[str, str]) -> str:
    """``columns`` (name → DuckDB type) as read_json's ``columns =`` argument."""
    return "{" + ", ".join(f"'{name}': '{kind}'" for name, kind in columns.items()) + "}"


def sql_literal(value: str | list[str]) -> str:
    """A string or a list of strings as an SQL literal (a view cannot take parameters)."""
    if isinstance(value, list):
        return "[" + ", ".join(map(sql_literal, value)) + "]"
    return "'" + value.replace("'", "''") + "'"


def load_rows(con: duckdb.DuckDBPyConnection, table: str, columns: dict[str, str], path: str | None) -> None:
    """(Re)create ``table`` with ``columns`` (name → DuckDB type), filled from a file of
    row_line()s (None: no rows)."""
    spec = ", ".join(f'"{name}" {kind}' for name, kind in columns.items())
    con.execute(f"CREATE OR REPLACE TABLE {table} ({spec})")
    if path is not None:
        con.execute(
            f"INSERT INTO {table} SELECT * FROM read_json(?, format = 'newline_delimited',"
            f" columns = {json_columns(columns)})",
            [path],
        )


def insert_rows(con: duckdb.DuckDBPyConnection, table: str, columns: dict[str, str], rows: Iterable[dict]) -> int:
    """(Re)create ``table`` with ``columns`` (name → DuckDB type) and fill it with ``rows``."""
    count = 0
    with tempfile.NamedTemporaryFile("w", suffix=".ndjson", prefix="pvbench-rows-") as handle:
        for row in rows:
            handle.write(row_line(row, columns))
            count += 1
        handle.flush()
        load_rows(con, table, columns, handle.name if count else None)
    return count
