"""The SQL models of analytics/models/ (dbt-style: one SELECT per file, named for the table it
makes, layered raw → normalized → summaries → report): found, ordered so each runs after the
tables it reads (by the names it mentions), and chosen for the tables a caller wants."""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from pvbench.analytics.compact import COMPACT_TABLES
from pvbench.analytics.tables import AnalyticsError


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


def model_reads(models: Sequence[Model]) -> dict[str, frozenset[str]]:
    """The models of ``models`` each of them reads (what it waits for when they run at once)."""
    names = {m.name for m in models}
    return {name: reads & names for name, reads in _reads(models).items()}


def _strip_comments(sql: str) -> str:
    return re.sub(r"--[^\n]*", "", sql)


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
