"""How often the warm-up and outlier flags fire on data that has neither: measured, per cell.

A cell is campaign × storage class × profile × workload × direction × metric (its values across
runs, occasions and repetitions); a false flag is a ``warm_up`` or ``outlier`` row of
``report_anomalies`` for a cell whose repetitions are exchangeable. The rates are measured by
running THE SHIPPED SQL MODELS (``warmup_by_occasion``, ``anomaly_outliers``,
``report_anomalies`` and the seeds and SQL functions they use) in DuckDB over one synthetic
set of values (``result_values``, grouped into ``occasion_measurements`` as a run's compaction does) that holds every trial as its own cell (storage class ``t00042``, one
workload per design), so thousands of trials take seconds.

Null data has occasion effects, as real data does (the thesis's runs: up to 99% of a cell's
variance between occasions): a value is ``1000 × (1 + cv·(√icc·b + √(1−icc)·e))`` with ``b``
one normal draw per occasion and ``e`` one per repetition; ICC 0 is pure noise. Half the trials
are IOPS (higher is better), half latencies (lower is better), so both directions are exercised.

``flag_rows(trials, seed)`` is what ``pvbench_lab.stats_calibration`` prints and docs/statistics.md
quotes; sdk/tests/test_stats_flags_calibration.py asserts each rate ≤ 5%.
"""

from __future__ import annotations

import math
import re
import tempfile
from pathlib import Path

import numpy as np

from pvbench_lab.calibration import Design

DETECTORS = ("warm_up", "outlier")

# the models whose flags are measured; everything they read that is not provided below runs too
TARGET_MODELS = ("report_anomalies",)
# provided here instead of by their models: the synthetic values, and no declared limits
PROVIDED_TABLES = ("result_values", "occasion_measurements", "over_limit")


# one design type for every calibration: occasions × reps, ICC, CV (pvbench_lab.calibration)
FlagDesign = Design


SHAPES = ((1, 3), (2, 3), (2, 5), (3, 3), (3, 5), (4, 5), (5, 5), (10, 3), (5, 10), (10, 10))


def default_designs() -> list[FlagDesign]:
    """Every shape at ICC 0, 0.5, 0.8 with CV 15% (the issue's case); and CV 5% and 30% at ICC 0.5."""
    designs = [FlagDesign(o, r, icc, 0.15) for o, r in SHAPES for icc in (0.0, 0.5, 0.8)]
    designs += [FlagDesign(o, r, 0.5, cv) for o, r in SHAPES for cv in (0.05, 0.30)]
    return designs


def null_values(rng: np.random.Generator, design: FlagDesign, trials: int, mean: float = 1000.0) -> np.ndarray:
    """trials × occasions × reps values with occasion effects and no warm-up or outlier."""
    between = rng.standard_normal((trials, design.occasions, 1)) * math.sqrt(design.icc)
    within = rng.standard_normal((trials, design.occasions, design.reps)) * math.sqrt(1 - design.icc)
    return mean * (1 + design.cv * (between + within))


def _write_values(path: Path, blocks: list[np.ndarray]) -> None:
    """One CSV line per value: design, trial, occasion, rep, value (DuckDB reads it in a blink)."""
    with path.open("w") as out:
        out.write("d,t,o,k,value\n")
        for d, block in enumerate(blocks):
            trials, occasions, reps = block.shape
            t, o, k = np.meshgrid(np.arange(trials), np.arange(occasions), np.arange(reps), indexing="ij")
            out.write(
                "".join(
                    f"{d},{ti},{oi},{ki + 1},{v:.10g}\n"
                    for ti, oi, ki, v in zip(
                        t.ravel().tolist(), o.ravel().tolist(), k.ravel().tolist(), block.ravel().tolist()
                    )
                )
            )


def _models_to_run():
    """The shipped models that TARGET_MODELS need, in the runner's order, minus PROVIDED_TABLES."""
    from pvbench.analytics.models import discover_models

    models = discover_models()
    names = {m.name for m in models}
    needed: set[str] = set()
    todo = list(TARGET_MODELS)
    by_name = {m.name: m for m in models}
    while todo:
        name = todo.pop()
        if name in needed or name in PROVIDED_TABLES:
            continue
        needed.add(name)
        sql = re.sub(r"--[^\n]*", "", by_name[name].sql)
        todo += [n for n in names - {name} if re.search(rf"\b{re.escape(n)}\b", sql)]
    return [m for m in models if m.name in needed]


def _connect(values_csv: Path):
    import duckdb

    from pvbench.analytics.inputs import install_values, load_seeds
    from pvbench.analytics.models import analytics_dir
    from pvbench.stats.functions import register_functions

    con = duckdb.connect()
    load_seeds(con, analytics_dir())
    register_functions(con)
    con.execute(f"""
        create view simulated_values as
        select
            'calibration' as campaign, 'r1' as run, printf('o%02d', o) as occasion,
            printf('t%05d', t) as storage_class, 'null' as profile, printf('d%03d', d) as workload,
            printf('d%03d', d) as workload_title, k as rep, 'read' as direction,
            case when t % 2 = 0 then 'iops' else 'lat_mean_us' end as metric,
            case when t % 2 = 0 then 'IOPS' else 'µs' end as unit,
            case when t % 2 = 0 then 'higher' else 'lower' end as better,
            true as is_headline, value,
            timestamptz '2024-03-04 09:00:00+00' + to_hours(o) + to_minutes(k) as started_at
        from read_csv('{values_csv}', header = true,
                      columns = {{'d': 'INTEGER', 't': 'INTEGER', 'o': 'INTEGER', 'k': 'INTEGER', 'value': 'DOUBLE'}})""")
    install_values(con, "simulated_values")
    con.execute("""
        create table over_limit (
            campaign varchar, storage_class varchar, profile varchar, workload varchar, workload_title varchar,
            direction varchar, metric varchar, unit varchar, value double, over_limit boolean,
            limit_value double, limit_declared varchar, tolerance double, limit_pattern varchar)""")
    for model in _models_to_run():  # as the campaign makes them (a view where the model says so)
        con.execute(model.statement)
    return con


def false_flag_rates(designs: list[FlagDesign], trials: int, seed: int = 1) -> list[dict]:
    """Per design and detector, the share of null cells that got at least one flag."""
    rng = np.random.default_rng(seed)
    blocks = [null_values(rng, design, trials) for design in designs]
    with tempfile.TemporaryDirectory(prefix="pvbench-flags-") as tmp:
        path = Path(tmp) / "values.csv"
        _write_values(path, blocks)
        con = _connect(path)
        flagged = {
            (workload, kind): n
            for workload, kind, n in con.execute("""
            select workload, kind, count(distinct storage_class)
            from report_anomalies where kind in ('warm_up', 'outlier') group by all""").fetchall()
        }
        con.close()
    rows = []
    for d, design in enumerate(designs):
        for detector in DETECTORS:
            rows.append(
                {
                    "detector": detector,
                    "design": design.label(),
                    "occasions": design.occasions,
                    "reps": design.reps,
                    "icc": design.icc,
                    "cv": design.cv,
                    "false_flag_rate": flagged.get((f"d{d:03d}", detector), 0) / trials,
                    "trials": trials,
                }
            )
    return rows


def flag_rows(trials: int = 2000, seed: int = 1) -> list[dict]:
    """The table for pvbench_lab.stats_calibration and docs/statistics.md: every default design, both detectors."""
    return false_flag_rates(default_designs(), trials, seed)


def format_table(rows: list[dict]) -> str:
    """Markdown, one table per detector: a row per occasions × reps shape, a column per ICC and CV."""
    columns = [(0.0, 0.15), (0.5, 0.15), (0.8, 0.15), (0.5, 0.05), (0.5, 0.30)]
    rate = {(r["detector"], r["occasions"], r["reps"], r["icc"], r["cv"]): r["false_flag_rate"] for r in rows}
    shapes = sorted({(r["occasions"], r["reps"]) for r in rows}, key=lambda s: (s[0] * s[1], s))
    head = " | ".join(f"ICC {icc:g}, CV {cv:.0%}" for icc, cv in columns)
    out = []
    for detector in DETECTORS:
        out += [
            f"{detector} — per-cell false-flag rate ({rows[0]['trials']} null cells per entry)",
            "",
            f"| occasions × reps | {head} |",
            "|---|" + "---|" * len(columns),
        ]
        for o, r in shapes:
            cells = [rate.get((detector, o, r, icc, cv)) for icc, cv in columns]
            out.append(f"| {o} × {r} | " + " | ".join("" if c is None else f"{c:.1%}" for c in cells) + " |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":  # .venv/bin/python -m pvbench_lab.calibration_flags [trials] [seed]
    import sys

    args = [int(a) for a in sys.argv[1:3]]
    print(format_table(flag_rows(*args)))
