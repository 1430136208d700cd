"""report_comparisons: the verdict table of the report, computed in Python over the headline
values of each cell (campaign × storage class × workload × direction × metric) by occasion.

Three kinds of comparison, each a family of its own for Holm's correction:

* ``storage_class`` — every pair of storage classes of a campaign, workload by workload
  (headline metrics, over all runs and occasions); the candidate is the class later in
  alphabetical order. Beyond ALL_PAIRS_UP_TO classes, each class against one reference class
  (the most measured), so the table grows linearly with the classes;
* ``role`` — per storage class, results labelled role=candidate against role=baseline
  (e.g. before/after an upgrade that Argo Events triggered);
* ``run`` — per storage class, a campaign's latest run against the run before it
  (ordered by when they started): "did the last run get slower?".

Every comparison works on occasion means (pvbench.stats.compare); for ``role`` and ``run`` the
class's other occasions in the campaign (neither side's) are its history, which tells how much
occasions differ when a side ran on one occasion only. Settings (alpha, smallest meaningful
change, confidence) come from the stats_settings seed, so the report and ``pvbench compare``
judge alike.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations
from typing import Callable

from pvbench.analytics.runner import Overlapped, analytics_dir
from pvbench.analytics.tables import insert_rows
from pvbench.stats.compare import CompareSettings, describe
from pvbench.stats.sides import Side, compare_groups

COLUMNS = [
    ("kind", "varchar"),
    ("campaign", "varchar"),
    ("baseline", "varchar"),
    ("candidate", "varchar"),
    ("storage_class", "varchar"),
    ("baseline_storage_class", "varchar"),
    ("candidate_storage_class", "varchar"),
    ("profile", "varchar"),
    ("workload", "varchar"),
    ("workload_title", "varchar"),
    ("direction", "varchar"),
    ("metric", "varchar"),
    ("unit", "varchar"),
    ("better", "varchar"),
    ("n_baseline", "integer"),
    ("n_candidate", "integer"),
    ("occasions_baseline", "integer"),
    ("occasions_candidate", "integer"),
    ("runs_baseline", "integer"),
    ("runs_candidate", "integer"),
    ("history_occasions", "integer"),
    ("mean_baseline", "double"),
    ("mean_candidate", "double"),
    ("sd_baseline", "double"),
    ("sd_candidate", "double"),
    ("median_baseline", "double"),
    ("median_candidate", "double"),
    ("diff", "double"),
    ("diff_ci_low", "double"),
    ("diff_ci_high", "double"),
    ("ratio", "double"),
    ("ratio_ci_low", "double"),
    ("ratio_ci_high", "double"),
    ("change", "double"),
    ("change_ci_low", "double"),
    ("change_ci_high", "double"),
    ("p_value", "double"),
    ("p_holm", "double"),
    ("df", "double"),
    ("method", "varchar"),
    ("reason", "varchar"),
    ("cliffs_delta", "double"),
    ("hl_shift", "double"),
    ("significant", "boolean"),
    ("meaningful", "boolean"),
    ("equivalent", "boolean"),
    ("verdict", "varchar"),
    ("alpha", "double"),
    ("min_change", "double"),
    ("confidence", "double"),
    ("summary", "varchar"),
]


@dataclass(frozen=True)
class Cell:
    """One campaign × storage class × profile × workload × direction × metric with its headline
    values by occasion: ``entries`` are (run, occasion, role, started_at epoch, sorted values), in
    the order they ran (run, occasion, role). An occasion whose results carry more than one role
    (rare) has an entry per role."""

    campaign: str
    storage_class: str
    key: tuple  # (profile, workload, direction, metric): what is matched across classes
    better: str
    unit: str
    workload_title: str | None
    entries: list[tuple]


_CELL = ("campaign", "storage_class", "profile", "workload", "direction", "metric")


def _cells(con) -> list[Cell]:
    """The headline values of the campaign, a Cell each: the occasions' rows as the runs' compacts
    hold them (occasion_measurements), grouped into cells by DuckDB, so 100,000 results come to
    Python as ~1,000 rows of lists instead of a dict per occasion and class, grouped again in
    Python for every comparison (most of the comparisons' cost was that plumbing)."""
    cell = ", ".join(_CELL)
    entry = f"{cell}, workload_title, unit, better, run, occasion"
    in_order = "order by run, occasion, role"
    roles = "len(list_distinct(list_transform(observations, o -> coalesce(o.role, ''))))"
    cursor = con.execute(
        f"""with entries as (
            select {entry}, observations[1].role as role,
                   list_sort(list_transform(observations, o -> o.value)) as values, epoch(started_at) as started_at
            from occasion_measurements
            where is_headline and {roles} = 1
            union all
            select {entry}, o.role, list(o.value order by o.value) as values, min(epoch(o.started_at)) as started_at
            from (select {entry}, unnest(observations) as o from occasion_measurements where is_headline and {roles} > 1)
            group by {entry}, o.role
        )
        select {cell},
               first(better {in_order}), first(unit {in_order}), first(workload_title {in_order}),
               list(run {in_order}), list(occasion {in_order}), list(role {in_order}),
               list(started_at {in_order}), list(values {in_order})
        from entries
        group by {cell}
        order by {cell}"""
    )
    return [
        Cell(r[0], r[1], r[2:6], r[6], r[7], r[8], list(zip(r[9], r[10], r[11], r[12], r[13])))
        for r in cursor.fetchall()
    ]


# Up to this many storage classes in a campaign, every pair is compared; beyond it, every class
# against one reference class, so the table grows with the classes, not with their square
# (20 classes: 19 comparisons per workload instead of 190).
ALL_PAIRS_UP_TO = 6


def class_pairs(measured: dict[str, int]) -> list[tuple[str, str]]:
    """(baseline, candidate) class pairs from each class's number of values: all pairs (candidate =
    later in the alphabet) up to ALL_PAIRS_UP_TO classes, else each class against the reference:
    the most measured class (ties: the first in the alphabet)."""
    classes = sorted(measured)
    if len(classes) <= ALL_PAIRS_UP_TO:
        return list(combinations(classes, 2))
    reference = min(classes, key=lambda c: (-measured[c], c))
    return [(reference, c) for c in classes if c != reference]


def _groups(cells: list[Cell], with_class: bool, keep: Callable[[tuple], bool] | None = None) -> dict[tuple, dict]:
    """The cells' entries that ``keep`` (all by default), as compare_groups matches them: by key
    (with the storage class first when ``with_class``), each with its values by occasion (run ×
    occasion; an occasion's roles pooled, as sides.group_values pools them)."""
    groups: dict[tuple, dict] = {}
    for cell in cells:
        occasions: dict[tuple, list] = {}
        for entry in cell.entries:
            if keep is None or keep(entry):
                occasions.setdefault(entry[:2], []).extend(entry[4])
        if occasions:
            groups[(cell.storage_class, *cell.key) if with_class else cell.key] = {
                "occasions": occasions,
                "better": cell.better,
                "unit": cell.unit,
                "workload_title": cell.workload_title,
                "storage_class": cell.storage_class,
            }
    return groups


def _last_two_runs(cells: list[Cell]) -> tuple[str, str, set[str]] | None:
    """The class's run before last, its last run (by when each first started; runs with no start
    time last, then by name) and its earlier runs, or None with fewer than two runs."""
    started: dict[str, float | None] = {}
    for cell in cells:
        for run, _, _, at, _ in cell.entries:
            if at is not None and (started.get(run) is None or at < started[run]):
                started[run] = at
            else:
                started.setdefault(run, None)
    if len(started) < 2:
        return None
    ordered = sorted(started, key=lambda run: (started[run] is None, started[run] or 0.0, run))
    return ordered[-2], ordered[-1], set(ordered[:-2])


def comparison_families(cells: list[Cell]):
    """Yield (kind, campaign, baseline label, candidate label, storage class or None, baseline
    groups, candidate groups, history groups: the class's occasions on neither side)."""
    by_campaign: dict[str, dict[str, list[Cell]]] = defaultdict(lambda: defaultdict(list))
    for cell in cells:
        by_campaign[cell.campaign][cell.storage_class].append(cell)
    for campaign, by_class in sorted(by_campaign.items()):
        whole = {sc: _groups(class_cells, False) for sc, class_cells in by_class.items()}
        measured = {sc: sum(len(e[4]) for c in class_cells for e in c.entries) for sc, class_cells in by_class.items()}
        for a, b in class_pairs(measured):
            yield "storage_class", campaign, a, b, None, whole[a], whole[b], {}
        for sc, class_cells in sorted(by_class.items()):
            roles = {entry[2] for cell in class_cells for entry in cell.entries}
            if {"baseline", "candidate"} <= roles:
                yield (
                    "role",
                    campaign,
                    "role=baseline",
                    "role=candidate",
                    sc,
                    _groups(class_cells, True, lambda e: e[2] == "baseline"),
                    _groups(class_cells, True, lambda e: e[2] == "candidate"),
                    _groups(class_cells, True, lambda e: e[2] not in ("baseline", "candidate")),
                )
            runs = _last_two_runs(class_cells)
            if runs is not None:
                prev, last, earlier = runs
                yield (
                    "run",
                    campaign,
                    f"run={prev}",
                    f"run={last}",
                    sc,
                    _groups(class_cells, True, lambda e: e[0] == prev),
                    _groups(class_cells, True, lambda e: e[0] == last),
                    _groups(class_cells, True, lambda e: e[0] in earlier),
                )


def report_comparison_rows(cells: list[Cell], settings: CompareSettings) -> list[dict]:
    out = []
    keys = ("profile", "workload", "direction", "metric")
    for kind, campaign, base_label, cand_label, sc, base, cand, history in comparison_families(cells):
        result = compare_groups(
            base,
            cand,
            keys if sc is None else ("storage_class",) + keys,
            settings,
            Side(campaign),
            Side(campaign),
            history_rows=history,
            grouping=_already_grouped,
        )
        for comp in result.comparisons:
            row = comp.as_row()
            row.update(
                kind=kind,
                campaign=campaign,
                baseline=base_label,
                candidate=cand_label,
                storage_class=sc,
                alpha=settings.alpha,
                min_change=settings.min_change,
                confidence=settings.confidence,
                summary=describe(comp),
            )
            out.append(row)
    return out


def _already_grouped(groups, keys: tuple[str, ...]) -> dict[tuple, dict]:
    return groups or {}


# report_comparisons as a step of the campaign's models: computed (in Python) while the models
# run (it reads the runs' occasion rows, there before the first model), written once they have;
# called as a plain step, it does both in turn.
REPORT_COMPARISONS = Overlapped(
    needs="occasion_measurements",
    compute=lambda con: report_comparison_rows(_cells(con), load_settings()),
    finish=lambda con, rows: insert_rows(con, "report_comparisons", dict(COLUMNS), rows),
)


def load_settings() -> CompareSettings:
    """CompareSettings from the stats_settings seed (analytics/seeds/stats_settings.csv; defaults
    where a name is missing): the one loader, for the report's comparisons and `pvbench compare`
    alike. The SQL models read the same seed through the ``settings`` model."""
    path = analytics_dir() / "seeds" / "stats_settings.csv"
    try:
        with path.open(newline="") as handle:
            values = {row["name"]: float(row["value"]) for row in csv.DictReader(handle)}
    except OSError:
        return CompareSettings()
    d = CompareSettings()
    return CompareSettings(
        alpha=values.get("compare_alpha", d.alpha),
        min_change=values.get("compare_min_change", d.min_change),
        confidence=values.get("compare_confidence", d.confidence),
    )
