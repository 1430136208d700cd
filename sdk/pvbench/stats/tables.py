"""report_comparisons: the verdict table of the report, computed in Python over ``measurements``.

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
from itertools import combinations

from pvbench.analytics.runner import Overlapped, analytics_dir
from pvbench.analytics.tables import insert_rows
from pvbench.stats.compare import CompareSettings, describe
from pvbench.stats.sides import MEASUREMENT_COLUMNS, Side, compare_groups, group_values

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


def _rows(con) -> list[dict]:
    """The headline values, one row per occasion (run × occasion) of each class and metric with
    its sorted ``values``: the occasions' rows as the runs' compacts hold them (occasion_measurements),
    so 100,000 results come to Python as a few thousand rows. An occasion whose results carry
    more than one role (rare) is split by role, from its single values."""
    keys = [c for c in MEASUREMENT_COLUMNS if c not in ("value", "role")]
    cols = ", ".join(keys)
    cursor = con.execute(
        f"""select {cols}, observations[1].role as role,
                   list_sort(list_transform(observations, o -> o.value)) as values, epoch(started_at) as started_at
        from occasion_measurements
        where is_headline and len(list_distinct(list_transform(observations, o -> coalesce(o.role, '')))) = 1
        union all
        select {cols}, o.role, list(o.value order by o.value) as values, min(epoch(o.started_at)) as started_at
        from (select {cols}, unnest(observations) as o from occasion_measurements
              where is_headline and len(list_distinct(list_transform(observations, o -> coalesce(o.role, '')))) > 1)
        group by {cols}, o.role
        order by {cols}, role"""
    )
    names = keys + ["role", "values", "started_at"]
    return [dict(zip(names, r)) for r in cursor.fetchall()]


# Up to this many storage classes in a campaign, every pair is compared; beyond it, every class
# against one reference class, so the table grows with the classes, not with their square
# (20 classes: 19 comparisons per workload instead of 190).
ALL_PAIRS_UP_TO = 6


def class_pairs(by_class: dict[str, list]) -> list[tuple[str, str]]:
    """(baseline, candidate) class pairs: all pairs (candidate = later in the alphabet) up to
    ALL_PAIRS_UP_TO classes, else each class against the reference: the most measured class
    (ties: the first in the alphabet)."""
    classes = sorted(by_class)
    if len(classes) <= ALL_PAIRS_UP_TO:
        return list(combinations(classes, 2))
    measured = {c: sum(len(r.get("values", (None,))) for r in rows) for c, rows in by_class.items()}
    reference = min(classes, key=lambda c: (-measured[c], c))
    return [(reference, c) for c in classes if c != reference]


def comparison_families(rows: list[dict]):
    """Yield (kind, campaign, baseline label, candidate label, storage class or None, base rows, cand rows,
    history rows: the class's results on neither side)."""
    by_campaign: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_campaign[row["campaign"]].append(row)
    for campaign, crows in sorted(by_campaign.items()):
        by_class: dict[str, list[dict]] = defaultdict(list)
        for row in crows:
            by_class[row["storage_class"]].append(row)
        for a, b in class_pairs(by_class):
            yield "storage_class", campaign, a, b, None, by_class[a], by_class[b], []
        for sc, srows in sorted(by_class.items()):
            roles = defaultdict(list)
            for row in srows:
                roles[row["role"]].append(row)
            if roles.get("baseline") and roles.get("candidate"):
                others = [r for role, rs in roles.items() if role not in ("baseline", "candidate") for r in rs]
                yield (
                    "role",
                    campaign,
                    "role=baseline",
                    "role=candidate",
                    sc,
                    roles["baseline"],
                    roles["candidate"],
                    others,
                )
            runs: dict[str, list[dict]] = defaultdict(list)
            for row in srows:
                runs[row["run"]].append(row)
            if len(runs) >= 2:

                def started(run: str) -> tuple:
                    times = [r["started_at"] for r in runs[run] if r["started_at"] is not None]
                    return (min(times) if times else None) is None, min(times) if times else None, run

                ordered = sorted(runs, key=started)
                prev, last = ordered[-2], ordered[-1]
                earlier = [r for run in ordered[:-2] for r in runs[run]]
                yield "run", campaign, f"run={prev}", f"run={last}", sc, runs[prev], runs[last], earlier


def report_comparison_rows(rows: list[dict], settings: CompareSettings) -> list[dict]:
    out = []
    keys = ("profile", "workload", "direction", "metric")
    # A class's rows are one side of many comparisons (the reference class of all of them): grouped
    # once. The cache holds the list it was made from, so its id is not reused while cached.
    grouped: dict[tuple[int, tuple], tuple[list[dict], dict]] = {}

    def grouping(side: list[dict], by: tuple[str, ...]) -> dict:
        cached = grouped.get((id(side), by))
        if cached is None:
            cached = grouped[(id(side), by)] = (side, group_values(side, by))
        return cached[1]

    for kind, campaign, base_label, cand_label, sc, base_rows, cand_rows, history in comparison_families(rows):
        result = compare_groups(
            base_rows,
            cand_rows,
            keys if sc is None else ("storage_class",) + keys,
            settings,
            Side(campaign),
            Side(campaign),
            history_rows=history,
            grouping=grouping,
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


# report_comparisons as a step of the campaign's models: computed (in Python) while the models
# run (it reads the runs' occasion rows, there before the first model), written once they have;
# called as a plain step, it does both in turn.
REPORT_COMPARISONS = Overlapped(
    needs="occasion_measurements",
    compute=lambda con: report_comparison_rows(_rows(con), load_settings()),
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
