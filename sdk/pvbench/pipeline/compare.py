"""Comparisons of two selections of stored results (``pvbench compare``): read, then judge.

pvbench.stats.sides says what a side selects and judges matched metrics; this module reads what
the sides select from the ``measurements`` of the store's tables (built by the pipeline's tables).

The selection is made in DuckDB, not in Python: a campaign of 100,000 results has ~1.4 million
measurements, and building every table, then fetching every measurement as a Python dict to keep
a few thousand took 10-18 s and 1.2 GiB, against ~4 s and 0.3 GiB now (pvbench_lab.bench_compare).
Python decides which labels (run, storage class, occasion, role) a side selects, with
Side.matches itself, over the distinct labels only; DuckDB keeps those labels' values of the
metrics asked for, each occasion's values as one list, as group_values takes them.
"""

from __future__ import annotations

import duckdb

from pvbench.analytics.tables import insert_rows
from pvbench.pipeline.tables import build_tables
from pvbench.stats.compare import CompareSettings
from pvbench.stats.sides import Side, SideComparison, SideError, compare_groups, match_keys, wanted_metrics

# What a side's rows are told apart by; the values of an occasion are grouped by all but role
# (an occasion's roles pooled, as group_values pools them).
LABELS = {"run": "VARCHAR", "storage_class": "VARCHAR", "occasion": "VARCHAR", "role": "VARCHAR"}
# One row per side, occasion and metric: group_values' keys and what it reads, the values a list.
OCCASION_COLUMNS = ("run", "occasion", "storage_class", "profile", "workload", "direction", "metric")


def result_labels(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """The distinct labels (LABELS) of the results in ``measurements`` (a built campaign on ``con``)."""
    return [
        dict(zip(LABELS, labels))
        for labels in con.execute(f"SELECT DISTINCT {', '.join(LABELS)} FROM measurements").fetchall()
    ]


def occasion_rows(
    con: duckdb.DuckDBPyConnection,
    labels: list[dict],
    sides: dict[str, Side],
    metrics: str,
    history_before: float | None = None,
) -> dict[str, list[dict]]:
    """Each side's rows of ``measurements`` (a built campaign on ``con``, whose result_labels are
    ``labels``), one per occasion and metric with that occasion's ``values``, for the metrics
    ``metrics`` names. With ``history_before`` (epoch seconds), instead the rows of side
    ``history``: the labels no side selects, their values that started before it (the classes'
    earlier occasions)."""
    wanted = wanted_metrics(metrics)
    chosen = []
    for row in labels:
        picked = [name for name, side in sides.items() if side.matches(row)]
        if history_before is not None:
            picked = [] if picked else ["history"]
        chosen.extend({"side": name, **row} for name in picked)
    insert_rows(con, "compare_labels", {"side": "VARCHAR", **LABELS}, chosen)
    where, params = [], []
    if wanted is not None:
        where.append("(list_contains(?, m.metric)" + (" OR m.is_headline)" if "headline" in wanted else ")"))
        params.append(sorted(wanted))
    if history_before is not None:
        where.append("epoch(m.started_at) < ?")
        params.append(history_before)
    on = " AND ".join(f"m.{name} IS NOT DISTINCT FROM l.{name}" for name in LABELS)
    keys = ", ".join(f"m.{name}" for name in OCCASION_COLUMNS)
    cursor = con.execute(
        f"""SELECT l.side, {keys}, any_value(m.workload_title), any_value(m.unit), any_value(m.better),
                   list(m.value ORDER BY m.rep, m.cell_order, m.value), min(epoch(m.started_at))
            FROM measurements m JOIN compare_labels l ON {on}
            {"WHERE " + " AND ".join(where) if where else ""}
            GROUP BY l.side, {keys}
            ORDER BY l.side, {keys}""",
        params,
    )
    out: dict[str, list[dict]] = {name: [] for name in (["history"] if history_before is not None else sides)}
    names = (*OCCASION_COLUMNS, "workload_title", "unit", "better", "values", "started_at")
    for side, *row in cursor.fetchall():
        out[side].append(dict(zip(names, row)))
    return out


def _selected(labels: list[dict], side: Side) -> set[tuple]:
    """The labels (LABELS' values, a tuple) of the results ``side`` selects among ``labels``."""
    return {tuple(row.values()) for row in labels if side.matches(row)}


def _refuse_shared(baseline: Side, candidate: Side, base_labels: list[dict], cand_labels: list[dict]) -> None:
    """Two sides that select some of the same results (``run=r run=r``; a run against one of its
    own occasions) are no comparison: a run judged against itself found "no meaningful
    difference", and a regression gate given the same run twice by mistake passed."""
    shared = _selected(base_labels, baseline) & _selected(cand_labels, candidate)
    if shared:
        example = dict(zip(LABELS, min(shared, key=lambda labels: tuple(str(v) for v in labels))))
        which = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in example.items() if v)
        raise SideError(
            f"baseline ({baseline.describe()}) and candidate ({candidate.describe()}) select the same results "
            f"in {len(shared)} (run, storage class, occasion) group(s), e.g. {which}: a comparison needs two "
            "different sets of results"
        )


def compare_sides(
    store, baseline: Side, candidate: Side, metrics: str = "headline", settings: CompareSettings = CompareSettings()
) -> SideComparison:
    keys = match_keys(baseline, candidate)
    wanted_metrics(metrics)  # a bad --metrics is said before anything is read
    history: list[dict] = []
    built: dict[tuple, duckdb.DuckDBPyConnection] = {}
    labelled: dict[tuple, list[dict]] = {}

    def tables(side: Side) -> duckdb.DuckDBPyConnection:
        """The campaign's measurements (or, for a side of one run, that run's), built once."""
        key = (side.campaign, side.run)
        if key not in built:
            only_run = side.run is not None
            built[key] = build_tables(
                store, side.campaign, side.run, extras=False, only_run=only_run, tables=("measurements",)
            )
        return built[key]

    def labels(side: Side) -> list[dict]:
        """result_labels of tables(side), read once: the check for shared results and each
        side's selection read them."""
        key = (side.campaign, side.run)
        if key not in labelled:
            labelled[key] = result_labels(tables(side))
        return labelled[key]

    try:
        if baseline.campaign == candidate.campaign and "storage_class" in keys:
            # one campaign: read it once. The classes' history is what neither side selects and ran
            # before the candidate: it tells how much occasions differ when a side has only one.
            campaign = Side(baseline.campaign)
            con, found, sides = tables(campaign), labels(campaign), {"baseline": baseline, "candidate": candidate}
            _refuse_shared(baseline, candidate, found, found)
            rows = occasion_rows(con, found, sides, metrics)
            base_rows, cand_rows = rows["baseline"], rows["candidate"]
            starts = [r["started_at"] for r in cand_rows if r["started_at"] is not None]
            if starts:
                history = occasion_rows(con, found, sides, metrics, history_before=min(starts))["history"]
        else:
            if baseline.campaign == candidate.campaign:
                _refuse_shared(baseline, candidate, labels(baseline), labels(candidate))
            base_rows = occasion_rows(tables(baseline), labels(baseline), {"baseline": baseline}, metrics)["baseline"]
            cand_rows = occasion_rows(tables(candidate), labels(candidate), {"candidate": candidate}, metrics)[
                "candidate"
            ]
    finally:
        for con in built.values():
            con.close()
    if not base_rows:
        raise SideError(f"baseline ({baseline.describe()}) selects no measurements")
    if not cand_rows:
        raise SideError(f"candidate ({candidate.describe()}) selects no measurements")
    return compare_groups(base_rows, cand_rows, keys, settings, baseline, candidate, history_rows=history)
