"""Run the SQL models of analytics/ with DuckDB and write their tables as Parquet.

The SQL lives in analytics/ (dbt-style: one SELECT per file, named for the table it
makes, layered raw → normalized → summaries → report). This module only orders the
files by the tables they mention, binds where the results are, and writes outputs.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import duckdb

from pvbench.store import LocalStore, S3Store, Store
from pvbench.store.layout import RESULT_FILE, analytics_prefix, results_glob, results_prefix

# Tables not written out: the raw layer is the JSON itself.
INTERNAL_TABLES = {"raw_results"}

# An input beside the results: the steps and cells of a run that failed, as the orchestrator
# reported them (Argo's exit handler: pvbench.argo.failures). Always created, empty when none
# were given, so report_failures.sql can read it; DuckDB types.
FAILURES_TABLE = "run_failures_input"
FAILURES_COLUMNS: dict[str, str] = {
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
MAX_WARNINGS = 10

log = logging.getLogger("pvbench.analytics")


class AnalyticsError(RuntimeError):
    pass


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

    @property
    def sql(self) -> str:
        return self.path.read_text()


def discover_models(root: Path | None = None) -> list[Model]:
    """All models, ordered so each runs after the tables it reads (by name reference)."""
    root = root or analytics_dir()
    models = [Model(p.stem, p, p.parent.name) for p in sorted((root / "models").glob("*/*.sql"))]
    if not models:
        raise AnalyticsError(f"no SQL models under {root / 'models'}")
    names = {m.name for m in models}
    deps = {
        m.name: {n for n in names - {m.name} if re.search(rf"\b{re.escape(n)}\b", _strip_comments(m.sql))}
        for m in models
    }
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
    return ordered


def _strip_comments(sql: str) -> str:
    return re.sub(r"--[^\n]*", "", sql)


def httpfs_extension_path() -> Path:
    import duckdb_extension_httpfs

    base = Path(duckdb_extension_httpfs.__file__).parent
    found = sorted(base.glob(f"extensions/v{duckdb.__version__}/httpfs.duckdb_extension"))
    if not found:
        raise AnalyticsError(f"no httpfs extension for DuckDB {duckdb.__version__} in {base}")
    return found[0]


def connect(store: Store) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB that can read the store (S3 through the pinned httpfs, loaded offline)."""
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    if isinstance(store, S3Store):
        con.execute(f"LOAD '{httpfs_extension_path()}'")
        s = store.settings
        con.execute(
            "CREATE SECRET pvbench_s3 (TYPE s3, KEY_ID ?, SECRET ?, ENDPOINT ?, URL_STYLE 'path', USE_SSL ?, REGION ?)",
            [s.access_key, s.secret_key, s.endpoint, s.secure, s.region or "us-east-1"],
        )
    return con


def load_seeds(con: duckdb.DuckDBPyConnection, root: Path) -> None:
    for csv in sorted((root / "seeds").glob("*.csv")):
        con.execute(f"CREATE OR REPLACE TABLE {csv.stem} AS SELECT * FROM read_csv(?, header = true)", [str(csv)])


def install_failures(con: duckdb.DuckDBPyConnection, failures: list[dict] | None) -> None:
    columns = ", ".join(f"{name} {kind}" for name, kind in FAILURES_COLUMNS.items())
    con.execute(f"CREATE OR REPLACE TABLE {FAILURES_TABLE} ({columns})")
    if failures:
        marks = ", ".join("?" for _ in FAILURES_COLUMNS)
        con.executemany(f"INSERT INTO {FAILURES_TABLE} VALUES ({marks})",
                        [[row.get(name) for name in FAILURES_COLUMNS] for row in failures])


def _read(text: str):
    """(document, None), or (None, (problem, reason)) if this text is not a document this pvbench counts."""
    from pydantic import ValidationError

    from pvbench.results.schema import SCHEMA_VERSION, ResultDocument

    if not text.strip():
        return None, ("invalid", "empty file")
    try:
        data = json.loads(text)
    except ValueError as exc:
        return None, ("invalid", f"not valid JSON (truncated or corrupt?): {exc}")
    if not isinstance(data, dict) or "schema_version" not in data:
        return None, ("invalid", "not a pvbench result document (no schema_version)")
    if data["schema_version"] != SCHEMA_VERSION:
        return None, ("other-schema", f"schema_version {data['schema_version']!r}; this pvbench reads {SCHEMA_VERSION}")
    try:
        return ResultDocument.model_validate(data), None
    except ValidationError as exc:
        errors = exc.errors()
        first = errors[0]
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        return None, ("invalid", f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}{more}")


def select_documents(con: duckdb.DuckDBPyConnection, store: Store, campaign: str | None,
                     run: str | None) -> tuple[list[str], list[dict]]:
    """Which result.json documents to count: (store keys, [SKIPPED_COLUMNS rows]).

    Each document is read as text and validated against the result schema; one that is
    unreadable, invalid or of another schema version is left out with its reason instead of
    failing the whole campaign. Each cell identity is counted once: a copy of a result under a
    second key (the same campaign/run/occasion/storage class/profile/workload/rep inside) is
    left out, the copy at the key the layout gives that identity being the one counted.
    """
    from pvbench.cells.publish import key_of

    base = store.duckdb_path("")
    base = base if base.endswith("/") else base + "/"
    try:
        rows = con.execute("select filename, content from read_text(?) order by filename",
                           [store.duckdb_path(results_glob(campaign, run))]).fetchall()
    except duckdb.Error as exc:
        raise AnalyticsError(f"cannot read the results in {store.url}: {exc}") from exc
    skipped: list[dict] = []
    by_cell: dict[str, list[str]] = {}
    for filename, content in rows:
        key = filename.removeprefix(base)
        doc, problem = _read(content)
        if problem is not None:
            skipped.append({"source_key": key, "problem": problem[0], "reason": problem[1], "counted_as": None})
            continue
        by_cell.setdefault(key_of(doc).result_key(), []).append(key)
    counted = []
    for cell, keys in by_cell.items():
        keep = cell if cell in keys else keys[0]
        counted.append(keep)
        for key in keys:
            if key != keep:
                skipped.append({"source_key": key, "problem": "duplicate", "counted_as": keep,
                                "reason": f"the same cell as {keep} (its identity says so), counted once"})
    return sorted(counted), sorted(skipped, key=lambda r: r["source_key"])


def install_skipped(con: duckdb.DuckDBPyConnection, skipped: list[dict]) -> None:
    columns = ", ".join(f"{name} {kind}" for name, kind in SKIPPED_COLUMNS.items())
    con.execute(f"CREATE OR REPLACE TABLE {SKIPPED_TABLE} ({columns})")
    if skipped:
        marks = ", ".join("?" for _ in SKIPPED_COLUMNS)
        con.executemany(f"INSERT INTO {SKIPPED_TABLE} VALUES ({marks})",
                        [[row.get(name) for name in SKIPPED_COLUMNS] for row in skipped])


def build_tables(store: Store, campaign: str | None = None, run: str | None = None,
                 root: Path | None = None, limits: Path | str | None = None,
                 extras: bool = True, failures: list[dict] | None = None,
                 warn: Callable[[str], None] | None = None) -> duckdb.DuckDBPyConnection:
    """Run every model over the results under campaign/run; returns the connection holding the tables.

    ``limits``: the user's storage class limits/prices file (else $PVBENCH_LIMITS, else the
    store's config/limits.yaml); pvbench.stats turns it into tables the models read.
    ``extras=False`` skips the Python-made tables (report_comparisons) when only SQL ones are needed.
    ``failures``: rows of FAILURES_COLUMNS, what failed in the run (report_failures shows them).
    ``warn``: gets one line per document left out (select_documents); default: the logging module.
    """
    from pvbench.stats import hooks

    root = root or analytics_dir()
    prefix = results_prefix(campaign, run)
    failed = "".join(f"\n  {f['node']}: {f['phase']}: {f['message']}" for f in failures or [])
    if not any(k.endswith(RESULT_FILE) for k in store.list_keys(prefix)):
        raise AnalyticsError(f"no results in {store.url}/{prefix}" + (f"; what failed:{failed}" if failed else ""))
    con = connect(store)
    counted, skipped = select_documents(con, store, campaign, run)
    warn = warn or log.warning
    for row in skipped[:MAX_WARNINGS]:
        what = "counted once" if row["problem"] == "duplicate" else "skipped"
        warn(f"{what}: {row['source_key']}: {row['reason']}")
    if len(skipped) > MAX_WARNINGS:
        warn(f"… and {len(skipped) - MAX_WARNINGS} more documents left out (table skipped_results)")
    if not counted:
        raise AnalyticsError(f"no valid results in {store.url}/{prefix}: {len(skipped)} document(s) left out"
                             + (f"; what failed:{failed}" if failed else ""))
    con.execute("SET VARIABLE result_files = ?", [[store.duckdb_path(k) for k in counted]])
    install_skipped(con, skipped)
    load_seeds(con, root)
    install_failures(con, failures)
    hooks.before_models(con, store, limits)
    for model in discover_models(root):
        try:
            con.execute(f"CREATE OR REPLACE TABLE {model.name} AS\n{model.sql}")
        except duckdb.Error as exc:
            raise AnalyticsError(f"model {model.layer}/{model.name}.sql failed: {exc}") from exc
    if extras:
        hooks.after_models(con)
    return con


def output_tables(root: Path | None = None) -> list[str]:
    from pvbench.stats.hooks import PYTHON_TABLES

    return [m.name for m in discover_models(root) if m.name not in INTERNAL_TABLES] + list(PYTHON_TABLES)


def write_parquet(con: duckdb.DuckDBPyConnection, out: Store | Path, prefix: str = "",
                  root: Path | None = None) -> dict[str, int]:
    """Write every output table as <prefix>/<table>.parquet; returns row counts."""
    counts: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="pvbench-parquet-") as tmp:
        local_dir = Path(out) if isinstance(out, Path) else Path(tmp)
        local_dir.mkdir(parents=True, exist_ok=True)
        for table in output_tables(root):
            path = local_dir / f"{table}.parquet"
            con.execute(f"COPY {table} TO '{path}' (FORMAT parquet)")
            counts[table] = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            if not isinstance(out, Path):
                key = f"{prefix}/{table}.parquet" if prefix else f"{table}.parquet"
                out.put_bytes(key, path.read_bytes(), content_type="application/vnd.apache.parquet")
    return counts


def aggregate(store: Store, campaign: str | None, run: str | None = None,
              out: Path | None = None, limits: Path | str | None = None,
              failures: list[dict] | None = None,
              warn: Callable[[str], None] | None = None) -> tuple[str, dict[str, int]]:
    """Aggregate and write Parquet: to ``out`` if given, else into the store's analytics prefix."""
    con = build_tables(store, campaign, run, limits=limits, failures=failures, warn=warn)
    if out is not None:
        counts = write_parquet(con, out)
        return str(out), counts
    prefix = analytics_prefix(campaign or "all", run)
    counts = write_parquet(con, store, prefix)
    return f"{store.url}/{prefix}", counts
