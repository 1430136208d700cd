"""What the statistics promise, measured: CI coverage, false verdicts, power, the upgrade gate.

Every rate here is measured by running the code that ships — the ``summary`` SQL model for the
summary intervals, ``compare_many`` for comparisons — on synthetic results with a known truth,
and on the thesis's raw runs (examples/thesis-azure-runs.csv). ``pvbench_lab.stats_calibration``
prints the table that docs/statistics.md shows; sdk/tests/test_stats_calibration.py asserts
each bound.

The synthetic model is the one the thesis's runs show: a result is
``mean × (1 + occasion effect + repetition noise)``, with a total CV and a share ICC of the
variance between occasions (ICC 0: repetitions independent; 0.8: most variation is day to day).
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import numpy as np

from pvbench.stats.compare import BETTER, WITHHELD, WORSE, CompareSettings, compare_many, prior_cell
from pvbench.stats.moderated import fit_prior

LATENCY_UNITS = {"ms", "us", "µs", "usec", "msec", "ns"}


@dataclass(frozen=True)
class Design:
    occasions: int
    reps: int
    icc: float = 0.5
    cv: float = 0.06

    def label(self) -> str:
        return f"{self.occasions}×{self.reps}, ICC {self.icc:g}, CV {self.cv:.0%}"


def simulate(rng: np.random.Generator, design: Design, mean: float = 1000.0) -> list[np.ndarray]:
    """One side: ``design.occasions`` occasions of ``design.reps`` values each."""
    between = rng.normal(0, design.cv * math.sqrt(design.icc), design.occasions)
    within = rng.normal(0, design.cv * math.sqrt(1 - design.icc), (design.occasions, design.reps))
    return list(mean * (1 + between[:, None] + within))


def _row(section: str, case: str, measure: str, value: float, bound: str, trials: int) -> dict:
    return {"section": section, "case": case, "measure": measure, "value": value, "bound": bound, "trials": trials}


# ------------------------------------------------------------------ summaries (the SQL model)
def summary_coverage(designs: list[Design], trials: int, seed: int = 1) -> list[dict]:
    """Share of trials whose summary ci95 (analytics/models/3_summaries/summary.sql) holds the true mean."""
    import duckdb
    import pyarrow as pa

    from pvbench.analytics.inputs import install_values, load_seeds
    from pvbench.analytics.models import analytics_dir, compaction_models, discover_models, models_for
    from pvbench.stats.functions import register_functions

    rng = np.random.default_rng(seed)
    cols: dict[str, list] = defaultdict(list)
    for d_index, design in enumerate(designs):
        for trial in range(trials):
            for o, values in enumerate(simulate(rng, design)):
                for value in values:
                    cols["campaign"].append(f"d{d_index}")
                    cols["storage_class"].append(f"t{trial}")
                    cols["run"].append(f"r{o}")
                    cols["occasion"].append("x")
                    cols["value"].append(float(value))
    n = len(cols["value"])
    constant = {
        "profile": "p",
        "workload": "w",
        "workload_title": "w",
        "direction": "read",
        "metric": "iops",
        "unit": "IOPS",
        "better": "higher",
        "is_headline": True,
        "wl_group": None,
        "load": None,
        "bs": None,
        "bs_bytes": None,
        "iodepth": None,
        "numjobs": None,
        "fsync": None,
    }
    table = pa.table(
        {**{k: pa.array(v) for k, v in cols.items()}, **{k: pa.array([v] * n) for k, v in constant.items()}}
    )
    con = duckdb.connect()
    con.register("measurements_in", table)
    install_values(con, "measurements_in")
    load_seeds(con, analytics_dir())
    register_functions(con)
    _, campaign_models = compaction_models(discover_models())
    for model in models_for(campaign_models, ["summary"]):  # variance_prior, then summary
        con.execute(f"create table {model.name} as {model.sql}")
    out = []
    for d_index, design in enumerate(designs):
        covered, basis = con.execute(
            "select avg((ci95_low <= 1000 and 1000 <= ci95_high)::int), any_value(ci_basis) from summary "
            "where campaign = ?",
            [f"d{d_index}"],
        ).fetchone()
        bound = "≥ 93%" if design.occasions >= 2 or design.icc == 0 else "not claimed (1 occasion)"
        out.append(_row("summary CI of the mean", design.label(), f"95% CI coverage ({basis})", covered, bound, trials))
    return out


# ------------------------------------------------------------------ comparisons
def _rates(
    rng,
    base: Design,
    cand: Design,
    change: float,
    trials: int,
    settings: CompareSettings,
    history: Design | None = None,
    metrics: int = 1,
) -> dict[str, float]:
    """Verdict rates over ``trials`` families of ``metrics`` comparisons, candidate = baseline × (1 + change)."""
    counts: dict[str, float] = defaultdict(float)
    for _ in range(trials):
        groups = []
        for m in range(metrics):
            past = simulate(rng, history) if history else []
            groups.append(({"m": m}, "higher", simulate(rng, base), simulate(rng, cand, 1000.0 * (1 + change)), past))
        comps = compare_many(groups, settings)
        verdicts = [c.verdict for c in comps]
        counts["any_verdict"] += any(v in (BETTER, WORSE) for v in verdicts)
        counts["any_worse"] += WORSE in verdicts
        counts["worse_share"] += sum(v == WORSE for v in verdicts) / metrics
        counts["withheld_share"] += sum(v == WITHHELD for v in verdicts) / metrics
        counts["equivalent_share"] += sum(c.equivalent for c in comps) / metrics
        counts["covered_share"] += (
            sum(c.ratio_ci_low <= 1 + change <= c.ratio_ci_high for c in comps if not c.reason) / metrics
        )
    return {k: v / trials for k, v in counts.items()}


def comparison_rows(trials: int, seed: int = 2, settings: CompareSettings = CompareSettings()) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    sec = "comparison, one metric"
    # independent repetitions, n = 5 per side (the percentile bootstrap covered 88.6% here)
    flat = Design(5, 1, icc=0.0, cv=0.06)
    null = _rates(rng, flat, flat, 0.0, trials, settings)
    rows.append(
        _row(sec, "5 vs 5 independent values", "CI coverage of the true ratio", null["covered_share"], "≥ 93%", trials)
    )
    edge = _rates(rng, flat, flat, settings.min_change, trials, settings)
    rows.append(
        _row(
            sec,
            "5 vs 5 independent values, true +5%",
            "declared equivalent (false equivalence)",
            edge["equivalent_share"],
            "≤ 2.5%",
            trials,
        )
    )
    small = _rates(rng, flat, flat, -0.04, trials, settings)
    rows.append(
        _row(sec, "5 vs 5 independent values, true −4%", "called worse", small["worse_share"], "reported", trials)
    )
    for icc in (0.0, 0.5, 0.8):
        d = Design(4, 5, icc=icc)
        null = _rates(rng, d, d, 0.0, trials, settings)
        rows.append(
            _row(sec, f"{d.label()} per side", "CI coverage of the true ratio", null["covered_share"], "≥ 93%", trials)
        )
        rows.append(
            _row(
                sec,
                f"{d.label()} per side, no change",
                "better/worse verdict (false verdict)",
                null["any_verdict"],
                "≤ 5%",
                trials,
            )
        )
        power = _rates(rng, d, d, -0.10, trials, settings)
        rows.append(
            _row(
                sec,
                f"{d.label()} per side, true −10%",
                "called worse (power)",
                power["worse_share"],
                "reported",
                trials,
            )
        )
    d = Design(4, 5, icc=0.5)
    edge = _rates(rng, d, d, settings.min_change, trials, settings)
    rows.append(
        _row(
            sec,
            f"{d.label()} per side, true +5%",
            "declared equivalent (false equivalence)",
            edge["equivalent_share"],
            "≤ 2.5%",
            trials,
        )
    )
    # run against run: one occasion a side
    one = Design(1, 5, icc=0.5)
    alone = _rates(rng, one, one, -0.20, trials, settings)
    rows.append(
        _row(
            "run against run",
            f"{one.label()} per side, no history, true −20%",
            "verdict withheld",
            alone["withheld_share"],
            "100% (day-to-day variation unknown)",
            trials,
        )
    )
    hist = Design(6, 5, icc=0.5)
    null = _rates(rng, one, one, 0.0, trials, settings, history=hist)
    rows.append(
        _row(
            "run against run",
            f"{one.label()} per side + 6 earlier occasions, no change",
            "better/worse verdict (false verdict)",
            null["any_verdict"],
            "≤ 5%",
            trials,
        )
    )
    power = _rates(rng, one, one, -0.20, trials, settings, history=hist)
    rows.append(
        _row(
            "run against run",
            f"{one.label()} per side + 6 earlier occasions, true −20%",
            "called worse (power)",
            power["worse_share"],
            "reported",
            trials,
        )
    )
    return rows


# ------------------------------------------------------------------ the upgrade gate, simulated
@dataclass(frozen=True)
class Campaign:
    """A simulated campaign: ``classes`` storage classes × ``metrics`` metrics, each class on
    ``baseline`` occasions before the change and one after it, ``reps`` repetitions each.

    Every metric has its own total CV (log-uniform in ``cv``) and its own share of it between
    occasions (ICC uniform in ``icc``), so cells differ in their day-to-day variance as real ones
    do. The occasion effects of one class's metrics share a factor (correlation ``shared``): a
    slow evening slows all of them. ``tails``: "normal", or "bad days" (the shared factor drawn
    from Student's t on 3 df, scaled to the same variance: rare days far off for every metric)."""

    baseline: int = 3
    reps: int = 3
    classes: int = 4
    metrics: int = 10
    icc: tuple[float, float] = (0.0, 0.8)
    cv: tuple[float, float] = (0.02, 0.20)
    shared: float = 0.6
    tails: str = "normal"

    def label(self) -> str:
        return (
            f"{self.baseline} baseline occasion(s) + 1, {self.reps} reps, {self.classes} classes × {self.metrics} "
            f"metrics, ICC {self.icc[0]:g}–{self.icc[1]:g}, CV {self.cv[0]:.0%}–{self.cv[1]:.0%}, {self.tails}"
        )


def simulate_campaign(rng: np.random.Generator, c: Campaign, change: float) -> list[list[tuple]]:
    """Per class, per metric: (baseline occasions, candidate occasion), the candidate × (1 + change)."""
    out = []
    k = c.baseline + 1
    for _ in range(c.classes):
        cv = np.exp(rng.uniform(math.log(c.cv[0]), math.log(c.cv[1]), c.metrics))
        icc = rng.uniform(c.icc[0], c.icc[1], c.metrics)
        if c.tails == "bad days":
            common = rng.standard_t(3, k) / math.sqrt(3)  # t3 has variance 3
        else:
            common = rng.normal(0, 1, k)
        own = rng.normal(0, 1, (c.metrics, k))
        effect = (cv * np.sqrt(icc))[:, None] * (math.sqrt(c.shared) * common[None, :] + math.sqrt(1 - c.shared) * own)
        noise = (cv * np.sqrt(1 - icc))[:, None, None] * rng.normal(0, 1, (c.metrics, k, c.reps))
        values = 1000.0 * np.exp(effect[:, :, None] + noise)
        values[:, -1, :] *= 1 + change
        out.append([(list(v[:-1]), [v[-1]]) for v in values])
    return out


def _gate(campaign: list[list[tuple]], settings: CompareSettings) -> list[list]:
    """Each class's family of comparisons (candidate vs baseline), judged as the report and
    `pvbench compare role=baseline role=candidate` judge them: one prior fitted across every
    class's baseline (never a candidate), Holm within the class."""
    prior = fit_prior(
        prior_cell({(c, i): occ for i, occ in enumerate(base)}) for c, cls in enumerate(campaign) for base, _ in cls
    )
    return [
        compare_many([({"m": m}, "higher", base, cand) for m, (base, cand) in enumerate(cls)], settings, prior)
        for cls in campaign
    ]


GATE_BASELINES = (1, 2, 3, 4, 6, 8, 12)


def gate_rows(
    trials: int,
    seed: int = 3,
    settings: CompareSettings = CompareSettings(),
    baselines: tuple[int, ...] = GATE_BASELINES,
    tails: tuple[str, ...] = ("normal", "bad days"),
    cv: tuple[float, float] = Campaign.cv,
) -> list[dict]:
    """The upgrade gate on simulated campaigns: families with a false verdict and the coverage of
    the change's CI when nothing changed; the share of 20% regressions found — for 1 to 12
    baseline occasions, normal and heavy-tailed bad days."""
    rng = np.random.default_rng(seed)
    rows = []
    sec = "upgrade gate (simulated)"
    for tail in tails:
        for baseline in baselines:
            design = Campaign(baseline=baseline, tails=tail, cv=cv)
            false = covered = judged = found = regressions = withheld = 0
            for _ in range(max(1, trials // design.classes)):
                for family in _gate(simulate_campaign(rng, design, 0.0), settings):
                    false += any(c.verdict in (BETTER, WORSE) for c in family)
                    for comp in family:
                        withheld += comp.verdict == WITHHELD
                        if not comp.reason:
                            judged += 1
                            covered += comp.ratio_ci_low <= 1 <= comp.ratio_ci_high
                for family in _gate(simulate_campaign(rng, design, -0.20), settings):
                    found += sum(c.verdict == WORSE for c in family)
                    regressions += len(family)
            families = max(1, trials // design.classes) * design.classes
            label = design.label()
            rows.append(
                _row(sec, label, "families with a false verdict (no change)", false / families, "≤ 5%", families)
            )
            if judged:
                rows.append(
                    _row(sec, label, "CI coverage of the true ratio (no change)", covered / judged, "≥ 93%", judged)
                )
            rows.append(_row(sec, label, "20% regressions found (power)", found / regressions, "reported", regressions))
    return rows


# ------------------------------------------------------------------ the thesis's raw runs
def thesis_cells(path: Path) -> dict[tuple[str, str], dict]:
    """(storage class, metric) → {"better": …, "occasions": {occasion: [values]}} from the thesis CSV."""
    cells: dict[tuple[str, str], dict] = {}
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            cell = cells.setdefault(
                (row["solution"], row["metric"]),
                {
                    "better": "lower" if row["unit"].strip().lower() in LATENCY_UNITS else "higher",
                    "occasions": defaultdict(list),
                },
            )
            cell["occasions"][row["occasion"]].append(float(row["value"]))
    return cells


def _by_class(cells: dict) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for sc, metric in sorted(cells):
        out[sc].append(metric)
    return out


def upgrade_replay(cells: dict, settings: CompareSettings = CompareSettings()) -> dict[str, float]:
    """Each occasion of each class in turn as the candidate against the class's other occasions,
    as measured (every better/worse verdict is false) and made 20% worse (what the gate finds).
    The prior is fitted across every class's cells — the candidate's class on its baseline only —
    and each class is one Holm family, as in the report."""
    classes = _by_class(cells)
    false = families_false = found = n = families = 0
    for sc, metrics in classes.items():
        for candidate in sorted(cells[(sc, metrics[0])]["occasions"]):

            def known(cls, metric):
                return {
                    (cls, o): v for o, v in cells[(cls, metric)]["occasions"].items() if cls != sc or o != candidate
                }

            prior = fit_prior(prior_cell(known(cls, m)) for cls, ms in classes.items() for m in ms)
            for factor in (None, 0.2):
                groups = []
                for m in metrics:
                    cand = cells[(sc, m)]["occasions"][candidate]
                    if factor:
                        cand = [
                            v * (1 - factor if cells[(sc, m)]["better"] == "higher" else 1 / (1 - factor)) for v in cand
                        ]
                    groups.append(({"m": m}, cells[(sc, m)]["better"], list(known(sc, m).values()), [cand]))
                comps = compare_many(groups, settings, prior)
                if factor is None:
                    verdicts = sum(c.verdict in (BETTER, WORSE) for c in comps)
                    false += verdicts
                    families_false += verdicts > 0
                    families += 1
                    n += len(comps)
                else:
                    found += sum(c.verdict == WORSE for c in comps)
    return {
        "false": false / n,
        "families_false": families_false / families,
        "found": found / n,
        "n": n,
        "families": families,
    }


def _draw(rng: np.random.Generator, cells: dict, sc: str, metrics: list[str], k: int, reps: int) -> dict:
    """k of a class's occasions at random and ``reps`` of each one's runs at random, the same
    occasions and runs for every metric of the class (one run measures all of them)."""
    occasions = cells[(sc, metrics[0])]["occasions"]
    chosen = rng.choice(sorted(occasions), size=k, replace=False)
    runs = {o: rng.choice(len(occasions[o]), size=reps, replace=False) for o in chosen}
    return {(sc, m): {(sc, o): [cells[(sc, m)]["occasions"][o][r] for r in runs[o]] for o in chosen} for m in metrics}


def class_replay(
    cells: dict, trials: int, seed: int = 4, settings: CompareSettings = CompareSettings(), k: int = 2, reps: int = 3
) -> dict[str, float]:
    """Class against class with ``k`` occasions × ``reps`` repetitions a side, drawn from the
    thesis's runs, as the report compares classes (a prior over every class's cells, Holm over the
    metrics of a pair):

    * an unchanged class split in two (2 + 2 of its 4 occasions): every verdict is false;
    * two different classes: a difference counts as found when the verdict's direction is the
      one of the classes' means over all 20 runs, by size of that difference (≥ 2×, 1.25–2×)."""
    rng = np.random.default_rng(seed)
    classes = _by_class(cells)
    names = sorted(classes)
    truth = {key: float(np.mean([v for vs in cell["occasions"].values() for v in vs])) for key, cell in cells.items()}
    counts: dict[str, float] = defaultdict(float)
    for _ in range(trials):
        # the null: one class's occasions split in two; every other class drawn as a campaign has it
        split = names[rng.integers(len(names))]
        drawn = {}
        for sc in names:
            drawn.update(_draw(rng, cells, sc, classes[sc], 2 * k if sc == split else k, reps))
        halves = {}
        for m in classes[split]:
            keys = sorted(drawn[(split, m)])  # the same occasions for every metric of the class
            halves[m] = ({o: drawn[(split, m)][o] for o in keys[:k]}, {o: drawn[(split, m)][o] for o in keys[k:]})
        prior = fit_prior(
            [prior_cell(drawn[key]) for key in drawn if key[0] != split]
            + [prior_cell(half) for m in classes[split] for half in halves[m]]
        )
        comps = compare_many(
            [
                ({"m": m}, cells[(split, m)]["better"], list(a.values()), list(b.values()))
                for m, (a, b) in halves.items()
            ],
            settings,
            prior,
        )
        counts["null_families"] += 1
        counts["null_false_families"] += any(c.verdict in (BETTER, WORSE) for c in comps)
        counts["null_metrics"] += len(comps)
        counts["null_false"] += sum(c.verdict in (BETTER, WORSE) for c in comps)
        # different classes: every pair, judged as the report's class comparisons
        prior = fit_prior(prior_cell(v) for key, v in drawn.items() if key[0] != split)
        for a, b in combinations([sc for sc in names if sc != split], 2):
            common = sorted(set(classes[a]) & set(classes[b]))
            comps = compare_many(
                [
                    ({"m": m}, cells[(a, m)]["better"], list(drawn[(a, m)].values()), list(drawn[(b, m)].values()))
                    for m in common
                ],
                settings,
                prior,
            )
            for m, comp in zip(common, comps):
                ratio = truth[(b, m)] / truth[(a, m)]
                size = max(ratio, 1 / ratio)
                band = "2x" if size >= 2 else "1.25x" if size >= 1.25 else None
                if band is None:
                    continue
                improvement = ratio > 1 if cells[(a, m)]["better"] == "higher" else ratio < 1
                counts[f"{band}_n"] += 1
                counts[f"{band}_found"] += comp.verdict == (BETTER if improvement else WORSE)
    return {
        "false_families": counts["null_false_families"] / counts["null_families"],
        "false": counts["null_false"] / counts["null_metrics"],
        "families": counts["null_families"],
        "found_2x": counts["2x_found"] / max(1, counts["2x_n"]),
        "n_2x": counts["2x_n"],
        "found_125x": counts["1.25x_found"] / max(1, counts["1.25x_n"]),
        "n_125x": counts["1.25x_n"],
    }


def thesis_rows(path: Path, settings: CompareSettings = CompareSettings(), trials: int = 200) -> list[dict]:
    """The replays on a thesis-style CSV of real runs (the Azure runs ship in examples/)."""
    cells = thesis_cells(path)
    sec = f"real runs ({path.name})"
    up = upgrade_replay(cells, settings)
    cls = class_replay(cells, trials, settings=settings)
    return [
        _row(
            sec,
            f"upgrade: each occasion vs the other 3, as measured ({up['n']} metrics)",
            "better/worse verdict (false)",
            up["false"],
            "≤ 5%",
            up["n"],
        ),
        _row(
            sec,
            f"upgrade: each occasion vs the other 3, as measured ({up['families']} families)",
            "families with a false verdict",
            up["families_false"],
            "reported",
            up["families"],
        ),
        _row(
            sec,
            f"upgrade: one occasion made 20% worse vs the other 3 ({up['n']} metrics)",
            "called worse",
            up["found"],
            "≥ 40%",
            up["n"],
        ),
        _row(
            sec,
            f"class vs class, {2}×3 a side: an unchanged class split in two",
            "better/worse verdict (false)",
            cls["false"],
            "≤ 5%",
            int(cls["families"]),
        ),
        _row(
            sec,
            f"class vs class, {2}×3 a side: an unchanged class split in two",
            "families with a false verdict",
            cls["false_families"],
            "reported",
            int(cls["families"]),
        ),
        _row(
            sec,
            "class vs class, 2×3 a side: differences ≥ 2×",
            "found, in the right direction",
            cls["found_2x"],
            "≥ 95%",
            int(cls["n_2x"]),
        ),
        _row(
            sec,
            "class vs class, 2×3 a side: differences 1.25–2×",
            "found, in the right direction",
            cls["found_125x"],
            "reported",
            int(cls["n_125x"]),
        ),
    ]


def occasions_for_power(rows: list[dict], levels: tuple[float, ...] = (0.6, 0.8)) -> dict[str, dict[float, int | None]]:
    """From gate_rows: the fewest baseline occasions whose power for a 20% regression reaches each
    level, per design (CV range and tails; None: not within the designs measured)."""
    out: dict[str, dict[float, int | None]] = {}
    for r in rows:
        if r["section"] != "upgrade gate (simulated)" or "power" not in r["measure"]:
            continue
        tail = ", ".join(r["case"].split(", ")[-2:])
        baseline = int(r["case"].split(" ", 1)[0])
        reached = out.setdefault(tail, dict.fromkeys(levels))
        for level in levels:
            if r["value"] >= level and (reached[level] is None or baseline < reached[level]):
                reached[level] = baseline
    return out


def format_table(rows: list[dict]) -> str:
    """A markdown table of calibration rows."""
    lines = ["| section | case | measure | measured | bound | trials |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['section']} | {r['case']} | {r['measure']} | {r['value']:.1%} | {r['bound']} | {r['trials']} |"
        )
    return "\n".join(lines)
