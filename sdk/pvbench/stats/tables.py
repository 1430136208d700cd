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
import functools
from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations
from typing import Callable

import numpy as np

from pvbench.analytics.models import analytics_dir
from pvbench.analytics.runner import Overlapped
from pvbench.analytics.tables import insert_rows
from pvbench.stats.compare import CompareSettings, OccasionArrays, describe, row_columns, settings_columns
from pvbench.stats.moderated import fit_prior
from pvbench.stats.sides import LABEL_COLUMNS, RUN_COLUMNS, Side, compare_groups, prior_cells

# report_comparisons' columns: which comparison a row is (its family, then the metric's match keys
# and labels), what compare measured (typed from Comparison's fields), the runs behind each side,
# and the settings it was judged with; nothing typed twice.
FAMILY_COLUMNS = ("kind", "campaign", "baseline", "candidate", "storage_class")
MATCH_COLUMNS = ("profile", "workload", "direction", "metric")
COLUMNS = [
    *((name, "varchar") for name in FAMILY_COLUMNS + MATCH_COLUMNS + LABEL_COLUMNS),
    *row_columns(),
    *((name, "integer") for name in RUN_COLUMNS),
    *settings_columns(),
    ("summary", "varchar"),
]


@dataclass(frozen=True, eq=False)
class HeadlineValues:
    """One campaign × storage class × profile × workload × direction × metric with its headline
    values by occasion, one entry per occasion in the order they ran (run, occasion, role): its
    ``runs``, ``occasions``, ``roles`` and ``started`` (epoch of its first value) by entry, and
    ``values`` (sorted within each entry, entry after entry; ``sizes``: how many each). An
    occasion whose results carry more than one role (rare) has an entry per role."""

    campaign: str
    storage_class: str
    key: tuple  # (profile, workload, direction, metric): what is matched across classes
    better: str
    unit: str
    workload_title: str | None
    runs: list[str]
    occasions: list[str]
    roles: list[str | None]
    started: list[float | None]
    sizes: np.ndarray
    values: np.ndarray

    @functools.cached_property
    def keys(self) -> list[tuple[str, str]]:
        """Each entry's (run, occasion)."""
        return list(zip(self.runs, self.occasions))

    @functools.cached_property
    def pooled(self) -> bool:
        """Whether an occasion has several entries (roles), which a side pools into one."""
        return len(set(self.keys)) < len(self.keys)

    def side(self, entries: np.ndarray | None = None) -> OccasionArrays:
        """The entries picked by the boolean array ``entries`` (all: None) as one side's
        occasions, an occasion's roles pooled (its entries are next to each other)."""
        side = OccasionArrays(self.keys, self.values, self.sizes)
        if entries is not None:
            side = side.select(entries)
        if not self.pooled or len(set(side.keys)) == len(side.keys):
            return side
        keys, sizes = [], []  # an occasion's entries as one occasion, as sides.group_values pools them
        for key, size in zip(side.keys, side.sizes.tolist()):
            if keys and keys[-1] == key:
                sizes[-1] += size
            else:
                keys.append(key)
                sizes.append(size)
        return OccasionArrays(keys, side.values, np.array(sizes, dtype=np.int64))


_HEADLINE_VALUES_OF = ("campaign", "storage_class", "profile", "workload", "direction", "metric")


def _cells(con) -> list[HeadlineValues]:
    """The headline values of the campaign, by metric of a class: the occasions' rows as the runs' compacts
    hold them (occasion_measurements), grouped into cells by DuckDB. The cells come to Python as
    ~200 rows, the entries as columns (NumPy arrays, in the cells' order) and the values as one
    float array, each entry's values a slice of it: 100,000 results are ~150,000 values, which as
    Python floats in nested lists took half the comparisons' time."""
    cell = ", ".join(_HEADLINE_VALUES_OF)
    entry = f"{cell}, workload_title, unit, better, run, occasion"
    cursor = con.cursor()  # its own temp table: the connection may be another thread's
    try:
        cursor.execute(
            f"""create temp table comparison_entries as
            with entries as (  -- an entry per role of an occasion: its row when its values share one
                select {entry}, sole_role as role, list_sort(observation_values, 'ASC', 'NULLS LAST') as values,
                       epoch(started_at) as started_at
                from occasion_measurements where is_headline and sole_role is not null
                union all  -- else (rare) its observations by role: Parquet skips the parts with none
                select {entry}, o.role, list(o.value order by o.value) as values, min(epoch(o.started_at)) as started_at
                from (select {entry}, unnest(observations) as o from occasion_measurements
                      where is_headline and sole_role is null)
                group by {entry}, o.role
            )
            select *, row_number() over (order by {cell}, run, occasion, role) as entry from entries"""
        )
        # the cells (better, unit and title of each cell's first entry) and the entries as columns,
        # in entry order: five lists per cell, each an ordered aggregate sorted on its own, took
        # four times as long
        rows = cursor.execute(
            f"""select {cell}, arg_min_null(better, entry), arg_min_null(unit, entry), arg_min_null(workload_title, entry), count(*)
            from comparison_entries
            group by {cell}
            order by min(entry)"""
        ).fetchall()
        columns = cursor.execute(
            "select run, occasion, role, started_at, len(values) from comparison_entries order by entry"
        ).fetchnumpy()
        flat = cursor.execute(
            """select value from (
                   select entry, unnest(values) as value, generate_subscripts(values, 1) as i from comparison_entries
               ) order by entry, i"""
        ).fetchnumpy()["value"]
    finally:
        cursor.close()
    flat = np.ma.filled(flat, np.nan).astype(float, copy=False)  # a masked array if a value is null
    runs, occasions, roles, started, sizes = (column.tolist() for column in columns.values())  # null: None
    sizes = np.asarray(sizes, dtype=np.int64)
    ends = np.cumsum(sizes)
    cells, entry = [], 0
    for r in rows:
        n = r[9]
        first, last = (ends[entry - 1] if entry else 0), (ends[entry + n - 1] if n else 0)
        cells.append(
            HeadlineValues(
                *r[0:2],
                r[2:6],
                *r[6:9],
                runs[entry : entry + n],
                occasions[entry : entry + n],
                roles[entry : entry + n],
                started[entry : entry + n],
                sizes[entry : entry + n],
                flat[first:last],
            )
        )
        entry += n
    return cells


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


def _groups(
    cells: list[HeadlineValues], with_class: bool, side_of: Callable[[HeadlineValues], dict[str, np.ndarray | None]]
) -> dict[str, dict[tuple, dict]]:
    """The cells' entries by side: ``side_of`` picks each side's entries of a cell (a boolean
    array; None: all of them). Each side's groups are as compare_groups matches them: by key
    (with the storage class first when ``with_class``), each with its occasions (HeadlineValues.side)."""
    sides: dict[str, dict[tuple, dict]] = {}
    for cell in cells:
        for side, entries in side_of(cell).items():
            if entries is not None and not entries.any():
                continue
            sides.setdefault(side, {})[(cell.storage_class, *cell.key) if with_class else cell.key] = {
                "occasions": cell.side(entries),
                "better": cell.better,
                "unit": cell.unit,
                "workload_title": cell.workload_title,
                "storage_class": cell.storage_class,
            }
    return sides


def _last_two_runs(cells: list[HeadlineValues]) -> tuple[str, str, set[str]] | None:
    """The class's run before last, its last run (by when each first started; runs with no start
    time last, then by name) and its earlier runs, or None with fewer than two runs."""
    started: dict[str, float | None] = {}
    for cell in cells:
        for run, at in zip(cell.runs, cell.started):
            if at is not None and (started.get(run) is None or at < started[run]):
                started[run] = at
            else:
                started.setdefault(run, None)
    if len(started) < 2:
        return None
    ordered = sorted(started, key=lambda run: (started[run] is None, started[run] or 0.0, run))
    return ordered[-2], ordered[-1], set(ordered[:-2])


def _by_label(labels: list, sides: dict) -> dict[str, np.ndarray]:
    """Each side's entries: those whose label ``sides`` maps to it (a label it lacks: none)."""
    names = sorted(set(sides.values()))
    number = {label: names.index(side) for label, side in sides.items()}
    numbers = np.fromiter((number.get(label, -1) for label in labels), dtype=np.int64, count=len(labels))
    return {side: numbers == i for i, side in enumerate(names)}


def comparison_families(cells: list[HeadlineValues]):
    """Yield (kind, campaign, baseline label, candidate label, storage class or None, baseline
    groups, candidate groups, history groups: the class's occasions on neither side)."""
    by_campaign: dict[str, dict[str, list[HeadlineValues]]] = defaultdict(lambda: defaultdict(list))
    for cell in cells:
        by_campaign[cell.campaign][cell.storage_class].append(cell)
    for campaign, by_class in sorted(by_campaign.items()):
        whole = {
            sc: _groups(class_cells, False, lambda cell: {"all": None}).get("all", {})
            for sc, class_cells in by_class.items()
        }
        measured = {sc: sum(len(c.values) for c in class_cells) for sc, class_cells in by_class.items()}
        for a, b in class_pairs(measured):
            yield "storage_class", campaign, a, b, None, whole[a], whole[b], {}
        for sc, class_cells in sorted(by_class.items()):
            roles = {role for cell in class_cells for role in cell.roles}
            if {"baseline", "candidate"} <= roles:
                role_sides = {role: "history" for role in roles} | {"baseline": "baseline", "candidate": "candidate"}
                sides = _groups(class_cells, True, lambda cell: _by_label(cell.roles, role_sides))
                yield (
                    "role",
                    campaign,
                    "role=baseline",
                    "role=candidate",
                    sc,
                    sides.get("baseline", {}),
                    sides.get("candidate", {}),
                    sides.get("history", {}),
                )
            runs = _last_two_runs(class_cells)
            if runs is not None:
                prev, last, earlier = runs
                side = {prev: "baseline", last: "candidate", **dict.fromkeys(earlier, "history")}
                sides = _groups(class_cells, True, lambda cell: _by_label(cell.runs, side))
                yield (
                    "run",
                    campaign,
                    f"run={prev}",
                    f"run={last}",
                    sc,
                    sides.get("baseline", {}),
                    sides.get("candidate", {}),
                    sides.get("history", {}),
                )


def report_comparison_rows(cells: list[HeadlineValues], settings: CompareSettings) -> list[dict]:
    out = []
    keys = MATCH_COLUMNS
    families = list(comparison_families(cells))
    # one prior per campaign and kind of comparison, fitted across every class's cells of that
    # kind (an upgrade's prior never holds a candidate: sides.prior_cells)
    found: dict[tuple[str, str], dict[tuple, list[dict]]] = defaultdict(dict)
    for kind, campaign, _b, _c, sc, base, cand, history in families:
        found[(kind, campaign)].update(prior_cells(base, cand, history, sc is not None))
    priors = {family: fit_prior(found_cells.values()) for family, found_cells in found.items()}
    for kind, campaign, base_label, cand_label, sc, base, cand, history in families:
        result = compare_groups(
            base,
            cand,
            keys if sc is None else ("storage_class",) + keys,
            settings,
            Side(campaign),
            Side(campaign),
            history_rows=history,
            grouping=_already_grouped,
            prior=priors[(kind, campaign)],
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
