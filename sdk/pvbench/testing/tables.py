"""Tables compared: Parquet files row for row (the compaction's tests and the A/B benchmark,
pvbench_lab.bench_aggregate_ab, ask whether two ways of making a table made the same one), and
the occasions' columns read from their observations against the observations."""

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


def rows_apart(a: str, b: str, digits: int = 9) -> int | None:
    """Rows of two Parquet files of the same columns that differ beyond ``digits`` significant digits
    in a DOUBLE column, or at all in another: each file's rows sorted (its doubles as FLOAT in the
    sort, so that the last digits do not reorder them), then paired in order. None when their row
    counts differ. A sum's last digits depend on the order DuckDB's threads add in, which differs
    between two runs of the same code on a busy machine."""
    con = duckdb.connect()
    try:
        columns = con.execute(
            "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet(?))", [a]
        ).fetchall()
        counts = con.execute(
            "SELECT (SELECT count(*) FROM read_parquet($a)), (SELECT count(*) FROM read_parquet($b))", {"a": a, "b": b}
        ).fetchone()
        if counts[0] != counts[1]:
            return None
        order = ", ".join(f'"{c}"::FLOAT' if t == "DOUBLE" else f'"{c}"' for c, t in columns)
        tolerance = 10.0**-digits
        apart = " OR ".join(
            f'NOT (x."{c}" IS NOT DISTINCT FROM y."{c}"'
            + (
                f' OR abs(x."{c}" - y."{c}") <= {tolerance} * greatest(abs(x."{c}"), abs(y."{c}"))'
                if t == "DOUBLE"
                else ""
            )
            + ")"
            for c, t in columns
        )
        return con.execute(
            f"""WITH x AS (SELECT *, row_number() OVER (ORDER BY {order}) AS i_ FROM read_parquet($a)),
                     y AS (SELECT *, row_number() OVER (ORDER BY {order}) AS i_ FROM read_parquet($b))
                SELECT count(*) FROM x JOIN y USING (i_) WHERE {apart}""",
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


def occasions_read_apart(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    """The rows of ``con``'s occasion_measurements whose columns read from their observations
    (observation_values, sole_role, named_roles, nodes) say otherwise than the observations do."""
    return con.execute(
        """SELECT run, occasion, storage_class, workload, metric FROM (
               SELECT *, list_transform(observations, o -> o.role) AS value_roles FROM occasion_measurements)
           WHERE observation_values IS DISTINCT FROM list_transform(observations, o -> o.value)
              OR sole_role IS DISTINCT FROM CASE WHEN len(list_distinct(value_roles)) = 1
                  AND list_aggregate(value_roles, 'count') = len(value_roles) THEN value_roles[1] END
              OR named_roles IS DISTINCT FROM list_sort(list_distinct(list_filter(value_roles, r -> r <> '')))
              OR nodes IS DISTINCT FROM list_sort(list_distinct(list_transform(observations, o -> o.node)))"""
    ).fetchall()
