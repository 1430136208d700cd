"""Comparisons of two selections of stored results (``pvbench compare``): read, then judge.

pvbench.stats.sides says what a side selects and judges matched metrics; this module reads the
``measurements`` they select from the store (built by the pipeline's tables).
"""

from __future__ import annotations

from pvbench.pipeline.tables import build_tables
from pvbench.stats.compare import CompareSettings
from pvbench.stats.sides import (
    MEASUREMENT_COLUMNS,
    Side,
    SideComparison,
    SideError,
    compare_groups,
    match_keys,
    select_metrics,
)


def load_measurements(store, side: Side, cache: dict | None = None) -> list[dict]:
    """Rows of ``measurements`` selected by the side (built with DuckDB from the store)."""
    cache = {} if cache is None else cache
    key = (side.campaign, side.run)
    if key not in cache:
        con = build_tables(store, side.campaign, side.run, extras=False, only_run=side.run is not None)
        cursor = con.execute(f"select {', '.join(MEASUREMENT_COLUMNS)}, epoch(started_at) from measurements")
        cache[key] = [dict(zip(MEASUREMENT_COLUMNS + ("started_at",), row)) for row in cursor.fetchall()]
    return [row for row in cache[key] if side.matches(row)]


def compare_sides(
    store, baseline: Side, candidate: Side, metrics: str = "headline", settings: CompareSettings = CompareSettings()
) -> SideComparison:
    keys = match_keys(baseline, candidate)
    cache: dict = {}
    history: list[dict] = []
    if baseline.campaign == candidate.campaign and "storage_class" in keys:
        # one campaign: read it once. The classes' history is what neither side selects and ran
        # before the candidate: it tells how much occasions differ when a side has only one.
        everything = select_metrics(load_measurements(store, Side(baseline.campaign), cache), metrics)
        base_rows = [r for r in everything if baseline.matches(r)]
        cand_rows = [r for r in everything if candidate.matches(r)]
        starts = [r["started_at"] for r in cand_rows if r["started_at"] is not None]
        history = [
            r
            for r in everything
            if not baseline.matches(r)
            and not candidate.matches(r)
            and starts
            and r["started_at"] is not None
            and r["started_at"] < min(starts)
        ]
    else:
        base_rows = select_metrics(load_measurements(store, baseline, cache), metrics)
        cand_rows = select_metrics(load_measurements(store, candidate, cache), metrics)
    if not base_rows:
        raise SideError(f"baseline ({baseline.describe()}) selects no measurements")
    if not cand_rows:
        raise SideError(f"candidate ({candidate.describe()}) selects no measurements")
    return compare_groups(base_rows, cand_rows, keys, settings, baseline, candidate, history_rows=history)
