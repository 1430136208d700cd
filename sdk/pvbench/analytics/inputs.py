"""What the campaign's models read beside the results, installed on the connection: the seeds,
the metric catalog, which compacted documents count (and the ones left out), the runs' failures,
the per-run tables of the compacts, and values made elsewhere (the calibrations')."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Sequence

import duckdb

from pvbench.analytics.compact import COMPACT_TABLE, COMPACT_TABLES, OCCASIONS_TABLE
from pvbench.analytics.models import Model, _reads, compaction_models, discover_models
from pvbench.analytics.tables import (
    FAILURES_COLUMNS,
    FAILURES_TABLE,
    SKIPPED_COLUMNS,
    SKIPPED_TABLE,
    AnalyticsError,
    insert_rows,
    sql_literal,
)
from pvbench.cells.guards import GUARD_LIST, GUARDS, Guard
from pvbench.profiles.catalog import PROFILE_COLUMNS, PROFILE_TABLE, profile_rows
from pvbench.results.metrics import METRIC_COLUMNS, METRIC_TABLE, SOURCES, metric_rows, metrics_from
from pvbench.results.schema import LIFECYCLE_WORKLOAD

# The table of every measured value, one row each (made when a run is compacted).
VALUES_TABLE = "result_values"

# skipped_results.problem of a second copy of a cell's result (counted once, at the other key)
DUPLICATE = "duplicate"


def install_inputs(con: duckdb.DuckDBPyConnection, root: Path, skipped: list[dict]) -> None:
    """What the campaign's models read beside the results: the documents left out, the seeds and
    the metric catalog."""
    install_skipped(con, skipped)
    load_seeds(con, root)
    install_metrics(con)


def load_seeds(con: duckdb.DuckDBPyConnection, root: Path) -> None:
    for csv in sorted((root / "seeds").glob("*.csv")):
        con.execute(f"CREATE OR REPLACE TABLE {csv.stem} AS SELECT * FROM read_csv(?, header = true)", [str(csv)])


def install_metrics(con: duckdb.DuckDBPyConnection) -> None:
    """The metric catalog (pvbench.results.metrics) as table ``metric_catalog``, and for each source
    the names of its metrics as variable ``metrics_<source>`` (result_values.sql unpivots those);
    and the profiles (install_profiles): wherever the models run, both are there."""
    insert_rows(con, METRIC_TABLE, METRIC_COLUMNS, metric_rows())
    for source in SOURCES:
        con.execute(f"SET VARIABLE metrics_{source} = ?", [metrics_from(source)])
    install_profiles(con)
    install_guards(con)


# The guard catalog (pvbench.cells.guards) as SQL sees it: its fields, typed from the dataclass.
GUARD_TABLE = "guard_catalog"
_SQL_TYPES = {str: "VARCHAR", float: "DOUBLE", bool: "BOOLEAN", "str": "VARCHAR", "float": "DOUBLE", "bool": "BOOLEAN"}
GUARD_COLUMNS: dict[str, str] = {f.name: _SQL_TYPES.get(f.type, "VARCHAR") for f in dataclasses.fields(Guard)} | {
    "guard_order": "INTEGER"
}


def install_guards(con: duckdb.DuckDBPyConnection, keep_flagged: Sequence[str] = ()) -> None:
    """The guard catalog (pvbench.cells.guards.GUARD_LIST) as table ``guard_catalog`` (the methodology
    page and the flagged cells' report read it, never a rule typed in SQL), and the rules whose
    flagged results this aggregation keeps in the statistics as variable ``keep_flagged``."""
    rows = [{**dataclasses.asdict(g), "guard_order": i} for i, g in enumerate(GUARD_LIST, 1)]
    insert_rows(con, GUARD_TABLE, GUARD_COLUMNS, rows)
    con.execute("SET VARIABLE keep_flagged = ?::VARCHAR[]", [list(keep_flagged)])


def check_keep_flagged(rules: Sequence[str]) -> tuple[str, ...]:
    """``rules`` (as `--keep-flagged` or a config's ``keep_flagged`` gives them), each a guard of
    the catalog; an unknown one is an AnalyticsError naming the catalog's rules."""
    unknown = [r for r in rules if r not in GUARDS]
    if unknown:
        raise AnalyticsError(
            f"unknown guard rule(s) {', '.join(map(repr, unknown))}: the guards are {', '.join(GUARDS)}"
        )
    return tuple(dict.fromkeys(rules))


def install_profiles(con: duckdb.DuckDBPyConnection) -> None:
    """What the models ask instead of naming a profile or a workload: the profile catalog
    (pvbench.profiles.catalog) as table ``profile_catalog`` (``is_sweep``: the profiles read as
    curves), and the workload the volume lifecycle's values are counted under
    (pvbench.results.schema.LIFECYCLE_WORKLOAD) as variable ``lifecycle_workload``."""
    insert_rows(con, PROFILE_TABLE, PROFILE_COLUMNS, profile_rows())
    con.execute("SET VARIABLE lifecycle_workload = ?", [LIFECYCLE_WORKLOAD])


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


def install_failures(con: duckdb.DuckDBPyConnection) -> None:
    """Table run_failures_input: the failed cells of every selected run (each run's compact keeps its own)."""
    insert_rows(con, FAILURES_TABLE, FAILURES_COLUMNS, [])
    names = ", ".join(FAILURES_COLUMNS)
    con.execute(f"INSERT INTO {FAILURES_TABLE} SELECT {names} FROM compact_failures")


def given_failures(con: duckdb.DuckDBPyConnection, failures: list[dict]) -> str:
    """``failures`` (rows of FAILURES_COLUMNS) as a table of their own; returns its name."""
    insert_rows(con, "failures_given", FAILURES_COLUMNS, failures)
    return "failures_given"


def read_occasions(
    con: duckdb.DuckDBPyConnection, compact_models: list[Model], uncounted: int, keep_flagged: Sequence[str] = ()
) -> None:
    """occasion_measurements and the per-run tables of the campaign (COMPACT_TABLES after
    result_rows): the runs' compacts of them, read as they are; occasion_measurements without the
    flagged values this aggregation leaves out (count_occasions).

    A compact's tables hold every valid document of its run; when the campaign leaves ``uncounted``
    of them out (a second copy of a cell, kept in another run's folder), they are made again from
    the counted result_rows instead (the models that made them at compaction, run here): slower,
    rare, and nothing is counted twice. A table made from the documents themselves (cell_series
    reads raw_results, the batch) cannot be made again: its rows of the counted documents are read."""
    install_guards(con, keep_flagged)
    after_rows: list[Model] = []
    if uncounted:
        reads = _reads(compact_models)
        after_rows = [
            m
            for m in compact_models[[m.name for m in compact_models].index(COMPACT_TABLE) + 1 :]
            if "raw_results" not in reads[m.name]
        ]
    remade = {m.name for m in after_rows}
    for table in COMPACT_TABLES:
        if table == COMPACT_TABLE or table in remade:
            continue
        source = f"compact_{table}"
        where = ""
        if uncounted and "source_key" in {c for c, *_ in con.execute(f"DESCRIBE {source}").fetchall()}:
            where = " WHERE source_key IN (SELECT source_key FROM counted_documents)"
        name = f"all_{table}" if table == OCCASIONS_TABLE else table
        con.execute(
            f"CREATE OR REPLACE VIEW {name} AS SELECT * EXCLUDE (compact_campaign, compact_run) FROM {source}{where}"
        )
    for model in after_rows:
        con.execute(model.statement)
    if OCCASIONS_TABLE in remade:
        con.execute(f"ALTER TABLE {OCCASIONS_TABLE} RENAME TO all_{OCCASIONS_TABLE}")
    count_occasions(con, f"all_{OCCASIONS_TABLE}", keep_flagged)


def count_occasions(con: duckdb.DuckDBPyConnection, source: str, keep_flagged: Sequence[str] = ()) -> None:
    """View occasion_measurements: the occasions' rows of ``source`` (a run's compaction groups them
    by excluded_by: the guards whose flag leaves its results out) that count in this aggregation.

    Which flags are left out is chosen here, when the campaign is aggregated, and the compacts hold
    the values either way, so `--keep-flagged` needs no compaction. A row counts when every rule it
    is excluded by is kept. Most campaigns have no flagged row, or leave every flagged row out:
    then the view is a filter of the rows as they are (one row per occasion, as every reader
    expects). Only when a kept rule's flagged values join an occasion's clean ones are those
    occasions' rows merged again, exactly (n, mean and the sum of squares as summary merges
    occasions; min, max; the observations concatenated and sorted as the compaction sorts them, and
    what the compaction reads from them read again), the others passed through."""
    keep = list(keep_flagged)
    columns = [c for c, *_ in con.execute(f"DESCRIBE {source}").fetchall()]
    kept_flagged = con.execute(
        f"SELECT count(*) FROM {source} WHERE excluded_by <> [] AND list_has_all(?::VARCHAR[], excluded_by)", [keep]
    ).fetchone()[0]
    rules = f"{sql_literal(keep) if keep else '[]'}::VARCHAR[]"  # a view takes no parameters
    if not kept_flagged:
        con.execute(
            f"CREATE OR REPLACE VIEW {OCCASIONS_TABLE} AS SELECT * EXCLUDE (excluded_by) FROM {source}"
            " WHERE excluded_by = []"
        )
        return
    keys = "campaign, run, occasion, storage_class, profile, workload, direction, metric"
    described = [c for c in columns if c not in ("excluded_by",)]
    merged = {
        "n": "sum(n)::bigint",
        "mean": "any_value(merged_mean)",
        "ss": "sum(ss) + sum(n * (mean - merged_mean) ^ 2)",
        "min": "min(min)",
        "max": "max(max)",
        "started_at": "min(started_at)",
        "is_headline": "bool_or(is_headline)",
        "observations": "list_sort(flatten(list(observations)), 'ASC', 'NULLS LAST')",
        # what the compaction reads from observations, from the merged ones (occasion_measurements.sql)
        "observation_values": "list_transform(list_sort(flatten(list(observations)), 'ASC', 'NULLS LAST'), o -> o.value)",
        "sole_role": "case when min(sole_role) = max(sole_role) and count(sole_role) = count(*) then min(sole_role) end",
        "named_roles": "list_sort(list_distinct(flatten(list(named_roles))))",
        "nodes": "list_sort(list_distinct(flatten(list(nodes))))",
    }
    group_keys = set(keys.split(", "))
    select = ", ".join(c if c in group_keys else f"{merged.get(c, f'any_value({c})')} AS {c}" for c in described)
    con.execute(f"""
        CREATE OR REPLACE VIEW {OCCASIONS_TABLE} AS
        WITH counted AS (
            SELECT * FROM {source} WHERE list_has_all({rules}, excluded_by)
        ),
        mixed AS (  -- the occasions with a kept flagged row: merged into one row again
            SELECT DISTINCT {keys} FROM counted WHERE excluded_by <> []
        ),
        merging AS (
            SELECT *, sum(n * mean) OVER occasion / sum(n) OVER occasion AS merged_mean
            FROM counted SEMI JOIN mixed USING ({keys})
            WINDOW occasion AS (PARTITION BY {keys})
        )
        SELECT * EXCLUDE (excluded_by) FROM counted ANTI JOIN mixed USING ({keys})
        UNION ALL BY NAME
        SELECT {select} FROM merging GROUP BY {keys}""")


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
