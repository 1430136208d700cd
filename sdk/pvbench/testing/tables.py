"""Parquet tables compared row for row: the compaction's tests and the A/B benchmark
(pvbench_lab.bench_aggregate_ab) ask whether two ways of making a table made the same one."""

from __future__ import annotations

import duckdb


def differing_rows(a: str, b: str) -> int:
    """Rows of one Parquet file missing from the other, both ways (duplicates counted: EXCEPT ALL;
    the order of rows aside)."""
    con = duckdb.connect()
    try:
        return con.execute(
            "SELECT (SELECT count(*) FROM (FROM read_parquet($a) EXCEPT ALL FROM read_parquet($b)))"
            " + (SELECT count(*) FROM (FROM read_parquet($b) EXCEPT ALL FROM read_parquet($a)))",
            {"a": a, "b": b},
        ).fetchone()[0]
    finally:
        con.close()


def columns_of(path: str) -> list[tuple]:
    """A Parquet file's columns as DuckDB describes them (name, type, …), in order."""
    con = duckdb.connect()
    try:
        return con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [path]).fetchall()
    finally:
        con.close()
