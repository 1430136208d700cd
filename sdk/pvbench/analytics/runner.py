"""Run the SQL models of analytics/ with DuckDB and write their tables as Parquet.

The SQL lives in analytics/ (dbt-style: one SELECT per file, named for the table it
makes, layered raw → normalized → summaries → report). This module only orders the
files by the tables they mention, binds where the results are, and writes outputs.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

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


def build_tables(store: Store, campaign: str | None = None, run: str | None = None,
                 root: Path | None = None, limits: Path | str | None = None,
                 extras: bool = True, failures: list[dict] | None = None) -> duckdb.DuckDBPyConnection:
    """Run every model over the results under campaign/run; returns the connection holding the tables.

    ``limits``: the user's storage class limits/prices file (else $PVBENCH_LIMITS, else the
    store's config/limits.yaml); pvbench.stats turns it into tables the models read.
    ``extras=False`` skips the Python-made tables (report_comparisons) when only SQL ones are needed.
    ``failures``: rows of FAILURES_COLUMNS, what failed in the run (report_failures shows them).
    """
    from pvbench.stats import hooks

    root = root or analytics_dir()
    prefix = results_prefix(campaign, run)
    if not any(k.endswith(RESULT_FILE) for k in store.list_keys(prefix)):
        failed = "".join(f"\n  {f['node']}: {f['phase']}: {f['message']}" for f in failures or [])
        raise AnalyticsError(f"no results in {store.url}/{prefix}" + (f"; what failed:{failed}" if failed else ""))
    con = connect(store)
    con.execute("SET VARIABLE results_glob = ?", [store.duckdb_path(results_glob(campaign, run))])
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
              failures: list[dict] | None = None) -> tuple[str, dict[str, int]]:
    """Aggregate and write Parquet: to ``out`` if given, else into the store's analytics prefix."""
    con = build_tables(store, campaign, run, limits=limits, failures=failures)
    if out is not None:
        counts = write_parquet(con, out)
        return str(out), counts
    prefix = analytics_prefix(campaign or "all", run)
    counts = write_parquet(con, store, prefix)
    return f"{store.url}/{prefix}", counts
