"""What the statistics promise, measured: CI coverage, false verdicts, power, the upgrade gate.

Every rate here is measured by running the code that ships — the ``summary`` SQL model for the
summary intervals, ``compare_many`` for comparisons — on synthetic results with a known truth,
and on the thesis's raw runs (examples/thesis-azure-runs.csv). ``ci/stats_calibration.py``
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
from pathlib import Path

import numpy as np

from pvbench.stats.compare import BETTER, WITHHELD, WORSE, CompareSettings, compare_many

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

    from pvbench.analytics.runner import analytics_dir, discover_models, install_values, load_seeds

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
    [model] = [m for m in discover_models() if m.name == "summary"]
    con.execute(f"create table summary as {model.sql}")
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
    # the upgrade gate: one candidate run (template default: 3 repetitions) against the baseline history
    base, cand = Design(8, 3, icc=0.5), Design(1, 3, icc=0.5)
    null = _rates(rng, base, cand, 0.0, trials, settings, metrics=10)
    rows.append(
        _row(
            "upgrade gate (10 metrics, Holm)",
            f"baseline {base.label()}; candidate 1×3, unchanged",
            "runs with a false alarm (any metric worse)",
            null["any_worse"],
            "≤ 5%",
            trials,
        )
    )
    power = _rates(rng, base, cand, -0.20, trials, settings, metrics=10)
    rows.append(
        _row(
            "upgrade gate (10 metrics, Holm)",
            f"baseline {base.label()}; candidate 1×3, every metric −20%",
            "metrics found worse",
            power["worse_share"],
            "most (> 50%)",
            trials,
        )
    )
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


def thesis_rows(path: Path, settings: CompareSettings = CompareSettings()) -> list[dict]:
    """Replays on the thesis's Azure runs (4 classes × 10 tests × 4 occasions × 5 repetitions).

    * occasion i against occasion j of the same, unchanged system, one metric at a time: the
      other occasions of the cell are the history (as the report's run-against-run uses them);
    * each occasion in turn as the candidate run against the other three as the baseline, as
      measured (false alarms) and with the candidate made 20% worse (what the gate finds).
    """
    from dataclasses import replace

    cells = thesis_cells(path)
    loose = replace(settings, min_df=2)
    held_loose = 0
    pairs = held = held_worse = pair_withheld = held_withheld = 0
    pair_verdicts = held_verdicts = 0
    for (_sc, _metric), cell in sorted(cells.items()):
        occ = sorted(cell["occasions"])
        better = cell["better"]
        for i, a in enumerate(occ):
            for b in occ[i + 1 :]:
                past = [cell["occasions"][o] for o in occ if o not in (a, b)]
                [comp] = compare_many([({}, better, [cell["occasions"][a]], [cell["occasions"][b]], past)], settings)
                pairs += 1
                pair_verdicts += comp.verdict in (BETTER, WORSE)
                pair_withheld += comp.verdict == WITHHELD
        for c in occ:
            base = [cell["occasions"][o] for o in occ if o != c]
            cand = cell["occasions"][c]
            worse = [v * (0.8 if better == "higher" else 1.25) for v in cand]
            [same, regressed] = [compare_many([({}, better, base, [side])], settings)[0] for side in (cand, worse)]
            held += 1
            held_verdicts += same.verdict in (BETTER, WORSE)
            held_worse += regressed.verdict == WORSE
            held_withheld += same.verdict == WITHHELD
            held_loose += compare_many([({}, better, base, [cand])], loose)[0].verdict in (BETTER, WORSE)
    sec = "thesis runs (Azure)"
    return [
        _row(
            sec,
            f"occasion vs occasion of the same system ({pairs} pairs)",
            "better/worse verdict",
            pair_verdicts / pairs,
            "≤ 5% (was 20% treating repetitions as independent)",
            pairs,
        ),
        _row(
            sec,
            f"occasion vs occasion of the same system ({pairs} pairs)",
            "verdict withheld",
            pair_withheld / pairs,
            "reported",
            pairs,
        ),
        _row(
            sec,
            f"one occasion vs the other three, as measured ({held})",
            "better/worse verdict",
            held_verdicts / held,
            "≤ 5%",
            held,
        ),
        _row(
            sec,
            f"one occasion vs the other three, as measured ({held})",
            "verdict withheld",
            held_withheld / held,
            "reported",
            held,
        ),
        _row(
            sec,
            f"one occasion vs the other three, judged from 2 degrees of freedom ({held})",
            "better/worse verdict (why 3 are needed)",
            held_loose / held,
            "none: above 5%",
            held,
        ),
        _row(
            sec,
            f"one occasion made 20% worse vs the other three ({held})",
            "called worse",
            held_worse / held,
            "reported",
            held,
        ),
    ]


def format_table(rows: list[dict]) -> str:
    """A markdown table of calibration rows."""
    lines = ["| section | case | measure | measured | bound | trials |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['section']} | {r['case']} | {r['measure']} | {r['value']:.1%} | {r['bound']} | {r['trials']} |"
        )
    return "\n".join(lines)
