"""Adaptive repetitions: which cells get another repetition, in which order.

Two planners over one rule (pvbench.stats.adaptive: assess, needs_more, shuffle_round):
plan_stream for local mode (rounds planned as the run goes), next_round for the Argo loop (a
check step over the run's stored tables, whose ``next`` list is the next round's fan-out).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Callable, Iterator

import duckdb

from pvbench.cells.run import TimingOverrides, plan_cell
from pvbench.results.schema import LIFECYCLE_WORKLOAD
from pvbench.results.volume import volume_key
from pvbench.stats.adaptive import AdaptiveSettings, assess, shuffle_round
from pvbench.store.layout import cell_prefix


def next_round(
    con: duckdb.DuckDBPyConnection,
    settings: AdaptiveSettings,
    *,
    pool_occasions: bool = False,
    seed: int | None = None,
    round_: int = 1,
) -> dict:
    """The check of one Argo round over the run's ``measurements``: what is imprecise, and the
    ``next`` cells (their next repetition, order after the run's last cell, store key)."""
    # the volume lifecycle is measured by every cell, not a cell of its own: nothing to repeat
    rows = con.execute(
        """
        select campaign, run, occasion, storage_class, profile, workload, direction, metric, value, rep,
            class_name, volume_mode, access_mode
        from measurements where is_headline and workload <> ?""",
        [LIFECYCLE_WORKLOAD],
    ).fetchall()
    # where the next cells go in the run's order: after every cell the run has so far
    last_order = dict(con.execute("select run, max(coalesce(cell_order, 0)) from measurements group by run").fetchall())
    fields = (
        ("campaign", "storage_class", "profile", "workload")
        if pool_occasions
        else ("campaign", "run", "occasion", "storage_class", "profile", "workload")
    )
    index = {"campaign": 0, "run": 1, "occasion": 2, "storage_class": 3, "profile": 4, "workload": 5}
    max_rep: dict[tuple, int] = {}
    latest: dict[tuple, tuple] = {}
    # storage_class is the class with its volume shape (result_rows): a next cell names both
    shape_of = {r[3]: {"storage_class": r[10], "volume_mode": r[11], "access_mode": r[12]} for r in rows}
    data = []
    for r in rows:
        key = tuple(r[index[f]] for f in fields)
        data.append((key, r[6], r[7], r[8]))
        max_rep[key] = max(max_rep.get(key, 0), r[9])
        latest[key] = (r[1], r[2])
    results = assess(data, settings)
    needing = [p for p in results if p.needs_more]
    cells, next_cells, seen = [], [], set()
    for p in results:
        if not p.needs_more:
            continue
        item = dict(zip(fields, p.cell))
        item.update(
            direction=p.direction,
            metric=p.metric,
            n=p.n,
            mean=p.mean,
            half_width=None if math.isinf(p.half_width) else p.half_width,
        )
        cells.append(item)
        if p.cell in seen:
            continue
        seen.add(p.cell)
        nxt = dict(zip(fields, p.cell))
        if pool_occasions:  # the loop decides where the next rep goes; name the latest run/occasion
            nxt["run"], nxt["occasion"] = latest[p.cell]
        nxt["rep"] = max_rep[p.cell] + 1
        nxt.update(shape_of[nxt["storage_class"]])
        nxt["key"] = cell_prefix(
            nxt["campaign"],
            nxt["run"],
            nxt["occasion"],
            nxt["storage_class"],
            volume_key(nxt["volume_mode"], nxt["access_mode"]),
            nxt["profile"],
            nxt["workload"],
            nxt["rep"],
        )
        next_cells.append(nxt)
    if seed is not None:  # randomized interleaving within the round, like `pvbench expand` and local mode
        shuffle_round(next_cells, seed, round_)
    for nxt in next_cells:
        last_order[nxt["run"]] = last_order.get(nxt["run"], -1) + 1
        nxt["order"] = last_order[nxt["run"]]
        if seed is not None:
            nxt["seed"] = seed
    worst = max((p.half_width for p in results if not math.isinf(p.half_width)), default=None)
    return {
        "precise": not needing,
        "target_half_width": settings.target_half_width,
        "min_repetitions": settings.min_repetitions,
        "max_repetitions": settings.max_repetitions,
        "checked": len(results),
        "need_more": len(needing),
        "capped": sum(
            1 for p in results if p.n >= settings.max_repetitions and p.half_width > settings.target_half_width
        ),
        "worst_half_width": worst,
        "cells": cells,
        "next": next_cells,
    }


def _headline_values(doc) -> Iterator[tuple[str, str, float]]:
    metric = doc.workload.headline_metric or "iops"
    for m in doc.metrics:
        value = getattr(m, metric, None)
        if value is not None:
            yield m.direction, metric, value


def plan_stream(
    config, plans: list, observed: list, on_round: Callable[[list, int], None] | None = None, overrides=None
) -> Iterator:
    """The plans of a local run, then — with ``config.adaptive`` — more rounds until precise.

    ``observed`` is filled by the caller with (plan, ResultDocument) of every successful cell;
    after the planned cells are done, each round adds one repetition of every cell (per occasion)
    whose headline metrics are not yet precise enough, in a seeded random order. Failed cells
    count towards the cap; a cell that never succeeded is not retried.
    """
    yield from plans
    settings: AdaptiveSettings | None = getattr(config, "adaptive", None)
    if settings is None or not plans:
        return
    overrides = overrides or TimingOverrides(config.ramp, config.runtime, config.size)
    planned: dict[tuple, list] = defaultdict(list)
    for plan in plans:
        planned[_cell_key(plan.cell)].append(plan)
    next_order = max(p.cell.order for p in plans) + 1
    rounds = 0
    while True:
        rows = [(_cell_key(plan.cell), d, m, v) for plan, doc in observed for d, m, v in _headline_values(doc)]
        imprecise = {p.cell for p in assess(rows, settings) if p.needs_more}
        # a cell with no successful result at all is not retried (its failure is reported)
        todo = [key for key in planned if key in imprecise and len(planned[key]) < settings.max_repetitions]
        if not todo:
            return
        rounds += 1
        shuffle_round(todo, config.seed, rounds)
        more = []
        for key in todo:
            last = planned[key][-1]
            cell = last.cell.model_copy(update={"rep": max(p.cell.rep for p in planned[key]) + 1, "order": next_order})
            next_order += 1
            plan = plan_cell(cell, last.target, overrides, scratch=last.scratch)
            planned[key].append(plan)
            more.append(plan)
        if on_round:
            on_round(more, rounds)
        yield from more


def _cell_key(cell) -> tuple:
    return (cell.occasion, cell.storage_label(), cell.profile, cell.workload)
