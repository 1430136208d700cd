"""What is compared with what: two "sides" selected from stored results, matched metric by metric.

A side is a selector over the ``measurements`` table: a campaign, optionally narrowed to one
run, storage class, occasion or role label. ``"local-20240101-1200"`` alone means a run;
``"campaign=thesis,storage_class=Portworx"`` spells the fields out. Labels match verbatim or
by their store slug, so ``portworx`` finds ``Portworx``.

Metrics are matched on profile × workload × direction × metric, and on the storage class too
unless both sides name a (different) storage class — then the classes themselves are compared.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Callable

from pvbench.stats.compare import CompareSettings, Comparison, OccasionArrays, compare_many, prior_cell
from pvbench.stats.moderated import Prior, fit_prior
from pvbench.store.layout import slug

SIDE_FIELDS = ("campaign", "run", "storage_class", "occasion", "role")
ALIASES = {"class": "storage_class", "sc": "storage_class", "storageclass": "storage_class"}
MEASUREMENT_COLUMNS = (
    "campaign",
    "run",
    "occasion",
    "storage_class",
    "profile",
    "workload",
    "workload_title",
    "direction",
    "metric",
    "unit",
    "better",
    "is_headline",
    "role",
    "value",
)


# The labels of each comparison of two sides (besides the match keys), and the runs behind each side
LABEL_COLUMNS = ("unit", "workload_title", "baseline_storage_class", "candidate_storage_class")
RUN_COLUMNS = ("runs_baseline", "runs_candidate")


class SideError(ValueError):
    pass


@dataclass(frozen=True)
class Side:
    campaign: str | None = None
    run: str | None = None
    storage_class: str | None = None
    occasion: str | None = None
    role: str | None = None

    @classmethod
    def parse(cls, text: str, default_campaign: str | None = None) -> "Side":
        text = text.strip()
        if not text:
            raise SideError("an empty selector selects nothing; give a run id or key=value pairs")
        values: dict[str, str] = {}
        if "=" not in text:
            values["run"] = text
        else:
            for part in text.split(","):
                if "=" not in part:
                    raise SideError(f"{part!r} in {text!r} is not key=value (keys: {', '.join(SIDE_FIELDS)})")
                key, value = (s.strip() for s in part.split("=", 1))
                key = ALIASES.get(key.lower(), key.lower())
                if key not in SIDE_FIELDS:
                    raise SideError(f"unknown selector key {key!r} in {text!r}; known: {', '.join(SIDE_FIELDS)}")
                values[key] = value
        values.setdefault("campaign", default_campaign)  # type: ignore[arg-type]
        if not values.get("campaign"):
            raise SideError(f"selector {text!r} names no campaign; add campaign=… or pass --campaign")
        return cls(**values)

    def describe(self) -> str:
        return ", ".join(f"{k}={getattr(self, k)}" for k in SIDE_FIELDS if getattr(self, k))

    def matches(self, row: dict) -> bool:
        for name in ("storage_class", "occasion", "role", "run"):
            want = getattr(self, name)
            if want is not None and not _same_label(row[name], want):
                return False
        return True


def _same_label(value: str | None, want: str) -> bool:
    """``value`` verbatim or by its store slug. A result without the label (no role: '') is never
    selected by one, and a label with no slug (nothing but punctuation) only verbatim."""
    if value == want:
        return True
    if not value:
        return False
    try:
        return slug(value) == slug(want)
    except ValueError:
        return False


def wanted_metrics(metrics: str) -> set[str] | None:
    """The metrics ``metrics`` names: ``headline`` (each workload's headline metric), ``all``
    (None: every metric), or a list: ``headline,lat_p99_us``."""
    wanted = {m.strip() for m in metrics.split(",") if m.strip()}
    if not wanted:
        raise SideError("no metrics selected")
    return None if "all" in wanted else wanted


def match_keys(baseline: Side, candidate: Side) -> tuple[str, ...]:
    if (baseline.storage_class is None) != (candidate.storage_class is None):
        raise SideError(
            "name a storage class on both sides (to compare two classes) or on neither "
            "(to compare each class with itself)"
        )
    keys = ("profile", "workload", "direction", "metric")
    if baseline.storage_class is None:
        keys = ("storage_class",) + keys
    return keys


@dataclass
class SideComparison:
    baseline: Side
    candidate: Side
    comparisons: list[Comparison]
    only_baseline: list[tuple] = field(default_factory=list)
    only_candidate: list[tuple] = field(default_factory=list)
    too_few: list[tuple] = field(default_factory=list)

    @property
    def regressions(self) -> list[Comparison]:
        return [c for c in self.comparisons if c.verdict == "worse"]


def group_values(rows: list[dict], keys: tuple[str, ...]) -> dict[tuple, dict]:
    """Rows grouped by the match keys, and inside each group by occasion (run × occasion). A row
    holds one ``value``, or the ``values`` of an occasion already grouped (the report's rows)."""
    groups: dict[tuple, dict] = {}
    key_of = itemgetter(*keys) if len(keys) > 1 else (lambda row: (row[keys[0]],))  # a tuple, always
    for row in rows:
        key = key_of(row)
        g = groups.get(key)
        if g is None:  # better, unit and title are the metric's, the same on every row of a group
            g = groups[key] = {
                "occasions": defaultdict(list),
                "better": row["better"],
                "unit": row["unit"],
                "workload_title": row["workload_title"],
                "storage_class": row["storage_class"],
            }
        values = g["occasions"][(row["run"], row["occasion"])]
        if "values" in row:  # DOUBLEs from DuckDB: floats already
            values.extend(row["values"])
        else:
            values.append(float(row["value"]))
    return groups


def compare_groups(
    base_rows: list[dict],
    cand_rows: list[dict],
    keys: tuple[str, ...],
    settings: CompareSettings,
    baseline: Side,
    candidate: Side,
    min_n: int = 2,
    history_rows: list[dict] | None = None,
    grouping: Callable[[list[dict], tuple[str, ...]], dict[tuple, dict]] = group_values,
    prior: Prior | None = None,
) -> SideComparison:
    """Compare metric by metric. ``history_rows``: other results of the same classes (neither
    side's occasions), which tell how much occasions differ when a side has only one.
    ``grouping``: group_values, or one that takes sides grouped already, as group_values groups
    them (the report's comparisons: pvbench.stats.tables groups each cell's occasions once).
    ``prior``: the day-to-day variance of cells like these (pvbench.stats.moderated); None fits
    it on these sides' cells (prior_cells)."""
    base, cand = grouping(base_rows, keys), grouping(cand_rows, keys)
    history = grouping(history_rows or [], keys) if "storage_class" in keys else {}
    if prior is None:
        prior = fit_prior(prior_cells(base, cand, history, "storage_class" in keys).values())
    todo, runs, too_few = [], [], []
    for key in sorted(set(base) & set(cand), key=lambda k: tuple(str(x) for x in k)):
        b, c = base[key], cand[key]
        if _n_values(b["occasions"]) < min_n or _n_values(c["occasions"]) < min_n:
            too_few.append(key)
            continue
        label = dict(zip(keys, key))
        label.update(
            unit=b["unit"],
            workload_title=b["workload_title"],
            baseline_storage_class=b["storage_class"],
            candidate_storage_class=c["storage_class"],
        )
        sides = set(b["occasions"]) | set(c["occasions"])
        past = _side(_others(history[key]["occasions"], sides)) if key in history else []
        todo.append((label, b["better"], _side(b["occasions"]), _side(c["occasions"]), past))
        runs.append(dict(zip(RUN_COLUMNS, (len({run for run, _ in g["occasions"]}) for g in (b, c)))))
    comps = compare_many(todo, settings, prior) if todo else []
    for comp, counts in zip(comps, runs):
        comp.extra.update(counts)
    return SideComparison(
        baseline,
        candidate,
        comps,
        only_baseline=sorted(set(base) - set(cand), key=str),
        only_candidate=sorted(set(cand) - set(base), key=str),
        too_few=too_few,
    )


def prior_cells(base: dict, cand: dict, history: dict, same_class: bool) -> dict[tuple, list[dict]]:
    """The cells a prior for these sides is fitted on, by (storage class, key): when each class is
    compared with itself (an upgrade, a run against the one before), each class's baseline and
    history occasions (never the candidate's: only what was known before it); when two classes
    are compared, each side's occasions, a cell of its class."""
    cells: dict[tuple, list[dict]] = {}
    if same_class:
        for key, b in base.items():
            past = history.get(key)
            if past is not None:
                sides = set(b["occasions"]) | (set(cand[key]["occasions"]) if key in cand else set())
                past = _others(past["occasions"], sides)
            cells[key] = prior_cell(b["occasions"], *([past] if past is not None else []))
    else:
        for groups in (base, cand):
            for key, g in groups.items():
                cells.setdefault((g["storage_class"], *key), prior_cell(g["occasions"]))
    return cells


# A group's occasions: the mapping (run, occasion) → values of group_values, or the report's
# OccasionArrays (pvbench.stats.tables), which compare_samples reads without splitting them.
def _n_values(occasions) -> int:
    return len(occasions.values) if isinstance(occasions, OccasionArrays) else sum(map(len, occasions.values()))


def _side(occasions):
    return occasions if isinstance(occasions, OccasionArrays) else list(occasions.values())


def _others(occasions, keys: set):
    """The occasions whose (run, occasion) is not in ``keys``, keyed as they are."""
    if isinstance(occasions, OccasionArrays):
        return occasions.without(keys)
    return {occasion: values for occasion, values in occasions.items() if occasion not in keys}
