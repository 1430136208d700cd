"""The history of each headline metric of a storage class: its change points and drift, tied to
the events that started runs (report_change_points, report_history, report_history_banner;
`pvbench history`).

A series is one storage class × profile × workload × direction × headline metric, its points the
occasion means of occasion_history in the order they ran (every campaign read together makes one
series). Each series with at least 2 · min_size occasions is judged by
pvbench.stats.changepoints.detect_changes (steps, their size with an interval and their
permutation p; drift); shorter ones are listed, not judged (``judged``, ``judged_note``). A
change point is attributed to the events of the class (runs labelled with a change: a CSI
driver's image, a changed StorageClass, a CI webhook, a candidate run) that started after its
last occasion at the old level and no later than its first at the new one (changepoints.attribute).

The series' points are history_points (analytics/after/history_points.sql: each occasion once,
numbered); report_history is SQL over them and the verdicts judged here (history_series, one row
per series: analytics/after/report_history.sql), so the rows of a year of occasions are never
built one by one in Python.

A change point is ``new_in_latest_run`` when the latest run's occasions completed its new level:
before them the level had fewer than min_size occasions, too few for the change to be found, so
this is the first report that can show it. The overview's banner
(analytics/after/report_history_banner.sql) lists those.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from pvbench.analytics.models import analytics_dir
from pvbench.analytics.runner import Overlapped
from pvbench.analytics.tables import insert_rows
from pvbench.stats.changepoints import ChangePoint, History, Occasion, attribute, detect_changes_many
from pvbench.stats.compare import BETTER, WORSE

SERIES_KEY = ("storage_class", "node_selection", "profile", "workload", "direction", "metric")
# the columns of occasion_history a series reads: each point's, in its order
POINT_COLUMNS = (
    "campaign",
    "run",
    "occasion",
    "occasion_started_at",
    "run_started_at",
    "n",
    "mean",
    "ci95_low",
    "ci95_high",
    "role",
    "trigger",
    "event",
)
HISTORY_SOURCE = "occasion_history"
# history_step's points (history_points.sql over its source), an internal table: report_history.sql reads it
POINTS_TABLE = "history_points"
POINTS_SQL = "after/history_points.sql"
REPORT_HISTORY_SQL = "after/report_history.sql"
BANNER_SQL = "after/report_history_banner.sql"

_SERIES_COLUMNS = [
    *((name, "VARCHAR") for name in SERIES_KEY),
    ("workload_title", "VARCHAR"),
    ("unit", "VARCHAR"),
    ("better", "VARCHAR"),
]
# report_change_points: one row per change point of a judged series
CHANGE_POINT_COLUMNS = [
    *_SERIES_COLUMNS,
    ("change_index", "INTEGER"),  # the first occasion at the new level, 1 = the series' first
    ("campaign", "VARCHAR"),  # that occasion's campaign, run and occasion
    ("run", "VARCHAR"),
    ("occasion", "VARCHAR"),
    ("changed_at", "TIMESTAMP WITH TIME ZONE"),  # when it ran: the change happened in (changed_after, changed_at]
    ("changed_after", "TIMESTAMP WITH TIME ZONE"),  # the last occasion at the old level
    ("run_before", "VARCHAR"),
    ("occasions_before", "INTEGER"),  # in the level before (back to the previous change point)
    ("occasions_after", "INTEGER"),
    ("mean_before", "DOUBLE"),  # geometric means of the two levels, in the metric's unit
    ("mean_after", "DOUBLE"),
    ("change_pct", "DOUBLE"),  # 100 · (mean_after / mean_before − 1)
    ("change_pct_ci95_low", "DOUBLE"),
    ("change_pct_ci95_high", "DOUBLE"),
    ("p_value", "DOUBLE"),  # permutation p of a change between the neighbouring change points
    ("change_label", "VARCHAR"),  # "−18.2% [−21.0%, −15.3%], p 0.001"
    ("kind", "VARCHAR"),  # step, or "step or drift": a straight line fits its levels almost as well
    ("verdict", "VARCHAR"),  # worse or better, knowing which way is better for the metric
    ("events", "VARCHAR"),  # the attributed events, "; "-separated; null: attributed to none
    ("event_runs", "VARCHAR"),
    ("latest_run", "VARCHAR"),  # the series' latest run
    ("new_in_latest_run", "BOOLEAN"),  # the latest run completed its new level (too short before it)
    ("summary", "VARCHAR"),  # one line: "−18.2% … from 2026-11-14, after CSI driver image v1.2 → v1.3"
]
# history_series: one row per series (series_id: history_points'), its verdict; report_history.sql
# puts it on every occasion of the series (an internal table, not written out)
SERIES_VERDICT_COLUMNS = [
    ("series_id", "BIGINT"),
    ("change_indexes", "INTEGER[]"),  # the change points' first occasions at the new level (occasion_index)
    ("change_labels", "VARCHAR[]"),  # their "−18.2% [−21.0%, −15.3%], p 0.001"
    ("n_occasions", "INTEGER"),
    ("judged", "BOOLEAN"),  # enough occasions (2 · min_size) and positive means: change points were looked for
    ("judged_note", "VARCHAR"),
    ("n_change_points", "INTEGER"),
    ("current_level", "DOUBLE"),
    ("previous_level", "DOUBLE"),  # the level before the last change point (null: none)
    ("current_change_pct", "DOUBLE"),  # the last change point's change
    ("drifting", "BOOLEAN"),  # Mann-Kendall p < drift_alpha after the clear steps' levels are removed
    ("drift_pct_per_occasion", "DOUBLE"),  # Theil-Sen slope
    ("drift_pct_ci95_low", "DOUBLE"),
    ("drift_pct_ci95_high", "DOUBLE"),
    ("drift_p_value", "DOUBLE"),
    ("noise_pct", "DOUBLE"),  # the robust day-to-day sd of the log occasion means, as a %
    ("series_summary", "VARCHAR"),
]


@dataclass(frozen=True)
class HistorySettings:
    """detect_changes' settings, as it is calibrated (pvbench_lab.changepoint_calibration)."""

    alpha: float = 0.05
    drift_alpha: float = 0.05
    min_size: int = 3  # the fewest occasions a level needs
    permutations: int = 999
    seed: int = 0

    @property
    def min_occasions(self) -> int:
        return 2 * self.min_size

    def detect(self, occasions: list[Occasion]) -> History:
        """One series' change points and drift, judged with these settings."""
        return self.detect_many([occasions])[0]

    def detect_many(self, series: list[list[Occasion]]) -> list[History]:
        """Each series' change points and drift (the series of one length judged together)."""
        return detect_changes_many(
            series,
            alpha=self.alpha,
            drift_alpha=self.drift_alpha,
            min_size=self.min_size,
            permutations=self.permutations,
            seed=self.seed,
        )


@dataclass
class Series:
    """One series' points in the order they ran (occasion_history's columns, one list each;
    times as epoch seconds, None where not recorded)."""

    key: tuple  # SERIES_KEY's values
    series_id: int  # history_points' number of the series, in the query that read it
    workload_title: str | None
    unit: str | None
    better: str | None
    points: dict[str, list] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.points["mean"])

    def __getitem__(self, name: str):
        """A field of the key by its name: series["workload"]."""
        return self.key[SERIES_KEY.index(name)]

    @property
    def storage_class(self) -> str:
        return self["storage_class"]

    def label(self) -> str:
        """'Random write IOPS — write (iops)'."""
        on = f" on {self['node_selection']}" if self["node_selection"] else ""
        return f"{self.workload_title or self['workload']} — {self['direction']} ({self['metric']}){on}"

    def runs(self) -> list[tuple[str, str]]:
        return list(zip(self.points["campaign"], self.points["run"]))


@dataclass(frozen=True)
class Event:
    at: float | None  # epoch of the run's first start
    label: str
    campaign: str
    run: str


@dataclass
class Judged:
    """A series with its verdict: History (None when not judged), why not, each change point's
    attributed events and whether the latest run completed its new level."""

    series: Series
    judged: bool
    note: str
    history: History | None
    events: list[tuple[Event, ...]] = field(default_factory=list)  # per change point
    new: list[bool] = field(default_factory=list)  # per change point

    @property
    def change_points(self) -> tuple[ChangePoint, ...]:
        return self.history.change_points if self.history else ()

    def bounds(self) -> list[int]:
        return [0, *(c.index for c in self.change_points), len(self.series)]

    def levels(self) -> list[float | None]:
        """Each segment's geometric mean (None where a mean is ≤ 0)."""
        means = np.asarray(self.series.points["mean"], dtype=float)
        out = []
        for a, b in zip(self.bounds(), self.bounds()[1:]):
            part = means[a:b]
            out.append(float(np.exp(np.log(part).mean())) if part.size and np.all(part > 0) else None)
        return out


# ------------------------------------------------------------------ reading


def points_sql(source: str) -> str:
    """history_points.sql over ``source`` (a table, a view or a parenthesised query of
    occasion_history's columns)."""
    return (
        (analytics_dir() / POINTS_SQL)
        .read_text()
        .replace("{source}", source)
        .replace("{series_key}", ", ".join(SERIES_KEY))
    )


def load_series(
    con, source: str = HISTORY_SOURCE, where: str = "", params: Iterable = (), points: str | None = None
) -> list[Series]:
    """The series of ``source`` (occasion_history's columns; e.g. several campaigns' tables read
    together): history_points' rows, in the order they ran. ``points``: a table of them made
    already (history_step's), read instead of ``source``."""
    cursor = con.cursor()  # its own: the connection may be another thread's
    try:
        rows = cursor.execute(
            f"""select series_id, {", ".join(SERIES_KEY)}, workload_title, unit, better, campaign, run, occasion,
                epoch(occasion_started_at) as occasion_started_at, epoch(run_started_at) as run_started_at,
                n, mean, ci95_low, ci95_high, role, trigger, event
            from {points or f"({points_sql(source)})"}
            {f"where {where}" if where else ""}
            order by series_id, occasion_index""",
            list(params),
        ).fetchnumpy()
    finally:
        cursor.close()
    columns = {name: _plain(values) for name, values in rows.items()}
    total = len(columns["mean"])
    series, start = [], 0
    ids = columns["series_id"]
    for end in range(1, total + 1):
        if end == total or ids[end] != ids[start]:
            series.append(
                Series(
                    key=tuple(columns[k][start] for k in SERIES_KEY),
                    series_id=ids[start],
                    workload_title=columns["workload_title"][start],
                    unit=columns["unit"][start],
                    better=columns["better"][start],
                    points={name: columns[name][start:end] for name in POINT_COLUMNS},
                )
            )
            start = end
    return series


def _plain(values) -> list:
    """A fetched column as a list, nulls (masked, NaN times) as None."""
    if isinstance(values, np.ma.MaskedArray):
        return [None if masked else v for v, masked in zip(values.data.tolist(), np.ma.getmaskarray(values).tolist())]
    return values.tolist()


def class_events(series: Iterable[Series]) -> dict[str, list[Event]]:
    """Each storage class's events: the runs of it whose labels name a change, once each."""
    found: dict[str, dict[tuple[str, str], Event]] = {}
    for s in series:
        p = s.points
        for campaign, run, at, event in zip(p["campaign"], p["run"], p["run_started_at"], p["event"]):
            if event is not None:
                found.setdefault(s.storage_class, {}).setdefault((campaign, run), Event(at, event, campaign, run))
    return {sc: sorted(events.values(), key=lambda e: (e.at is None, e.at or 0.0)) for sc, events in found.items()}


# ------------------------------------------------------------------ judging


def judge(series: Series, events: list[Event], settings: HistorySettings, history: History) -> Judged:
    """A judged series (enough positive occasion means: not _withheld) with its History: each
    change point's events and whether the latest run completed its new level."""
    judged = Judged(series, True, f"judged on {len(series)} occasions", history)
    if history.change_points:
        labelled = [(e.at, e) for e in events if e.at is not None]
        judged.events = [
            tuple(e for _, e in attribute(c, labelled)) if c.time is not None and c.time_before is not None else ()
            for c in history.change_points
        ]
        judged.new = _revealed_by_latest_run(series, history, settings)
    return judged


def _withheld(series: Series, settings: HistorySettings) -> str | None:
    """Why the series is not judged (too few occasions, a mean ≤ 0), or None."""
    means = series.points["mean"]
    n = len(means)
    if n < settings.min_occasions:
        return f"{n} occasion{'s' if n != 1 else ''}: change points need at least {settings.min_occasions}"
    if not all(m is not None and math.isfinite(m) and m > 0 for m in means):
        return "a mean ≤ 0: changes are measured as ratios"
    return None


def _occasions(series: Series) -> list[Occasion]:
    p = series.points
    return [
        Occasion(
            p["occasion_started_at"][i],
            p["mean"][i],
            (p["ci95_low"][i], p["ci95_high"][i]) if p["ci95_low"][i] is not None else None,
            p["n"][i],
        )
        for i in range(len(series))
    ]


def _revealed_by_latest_run(series: Series, history: History, settings: HistorySettings) -> list[bool]:
    """Per change point: whether the latest run's occasions completed its new level, which before
    them had fewer than min_size occasions, too few for a change to be found there. (Not judging
    the series again without them: that doubled the cost of every series with a change point, in
    every aggregation after it, for the rare change that only a longer level makes significant.)"""
    runs = series.runs()
    latest = sum(1 for run in runs if run == runs[-1])
    before = len(runs) - latest
    return [before - c.index < settings.min_size for c in history.change_points]


def judge_all(
    series: list[Series], settings: HistorySettings = HistorySettings(), events: dict[str, list[Event]] | None = None
) -> list[Judged]:
    """Each series judged (its change points, drift and their events), or withheld with why; the
    series judged together (HistorySettings.detect_many). ``events``: each storage class's
    (class_events of ``series`` if not given)."""
    events = class_events(series) if events is None else events
    withheld = [_withheld(s, settings) for s in series]
    histories = iter(settings.detect_many([_occasions(s) for s, why in zip(series, withheld) if why is None]))
    return [
        Judged(s, False, why, None)
        if why is not None
        else judge(s, events.get(s.storage_class, []), settings, next(histories))
        for s, why in zip(series, withheld)
    ]


# ------------------------------------------------------------------ the tables


def _when(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, tz=timezone.utc)


def _day(epoch: float | None) -> str:
    return "an unrecorded time" if epoch is None else _when(epoch).strftime("%Y-%m-%d")


def signed_pct(x: float, digits: int = 1) -> str:
    """+12.3% / −12.3% (a true minus sign, as the report writes it)."""
    return f"{x:+.{digits}f}%".replace("-", "−")


def change_label(c: ChangePoint) -> str:
    low, high = c.change_pct_ci95
    return f"{signed_pct(c.change_pct)} [{signed_pct(low)}, {signed_pct(high)}], p {c.p_value:.3g}"


def verdict(c: ChangePoint, better: str | None) -> str:
    up = c.change_pct > 0
    return BETTER if up == (better != "lower") else WORSE


def events_text(events: tuple[Event, ...]) -> str | None:
    return "; ".join(e.label for e in events) or None


def change_summary(j: Judged, i: int) -> str:
    """'−18.2% [−21.0%, −15.3%] Random write IOPS — write (iops) from 2026-11-14, after CSI driver
    image v1.2 → v1.3' (or 'no event recorded since 2026-11-13')."""
    c = j.change_points[i]
    events = events_text(j.events[i])
    why = f"after {events}" if events else f"no event recorded since {_day(c.time_before)}"
    kind = "" if c.kind == "step" else f" ({c.kind})"
    return f"{change_label(c)}{kind}: {j.series.label()} from {_day(c.time)}, {why}"


def series_summary(j: Judged) -> str:
    s = j.series
    if not j.judged:
        return f"not judged: {j.note}"
    levels = j.levels()
    parts = []
    count = len(j.change_points)
    if count:
        last = j.change_points[-1]
        parts.append(f"{count} change point{'s' if count > 1 else ''}")
        parts.append(
            f"current level {levels[-1]:,.4g} {s.unit or ''} since {_day(last.time)}, "
            f"{signed_pct(last.change_pct)} against the level before"
        )
    else:
        parts.append("no change point")
    drift = j.history.drift
    if drift is not None:
        parts.append(
            f"drifting {signed_pct(drift.slope_pct_per_occasion, 2)} per occasion (p {drift.p_value:.2g})"
            if drift.drifting
            else f"no drift (p {drift.p_value:.2g})"
        )
    return "; ".join(parts)


def change_point_rows(judged: list[Judged]) -> Iterator[dict]:
    for j in judged:
        s, p = j.series, j.series.points
        for i, c in enumerate(j.change_points):
            low, high = c.change_pct_ci95
            yield {
                **dict(zip(SERIES_KEY, s.key)),
                "workload_title": s.workload_title,
                "unit": s.unit,
                "better": s.better,
                "change_index": c.index + 1,
                "campaign": p["campaign"][c.index],
                "run": p["run"][c.index],
                "occasion": p["occasion"][c.index],
                "changed_at": _when(c.time),
                "changed_after": _when(c.time_before),
                "run_before": p["run"][c.index - 1],
                "occasions_before": c.occasions_before,
                "occasions_after": c.occasions_after,
                "mean_before": c.mean_before,
                "mean_after": c.mean_after,
                "change_pct": c.change_pct,
                "change_pct_ci95_low": low,
                "change_pct_ci95_high": high,
                "p_value": c.p_value,
                "change_label": change_label(c),
                "kind": c.kind,
                "verdict": verdict(c, s.better),
                "events": events_text(j.events[i]),
                "event_runs": ", ".join(e.run for e in j.events[i]) or None,
                "latest_run": p["run"][-1],
                "new_in_latest_run": j.new[i],
                "summary": change_summary(j, i),
            }


def series_rows(judged: list[Judged]) -> Iterator[dict]:
    """history_series: each series' verdict (report_history.sql spreads it over its occasions)."""
    for j in judged:
        levels = j.levels()
        drift = j.history.drift if j.history else None
        yield {
            "series_id": j.series.series_id,
            "change_indexes": [c.index + 1 for c in j.change_points],
            "change_labels": [change_label(c) for c in j.change_points],
            "n_occasions": len(j.series),
            "judged": j.judged,
            "judged_note": j.note,
            "n_change_points": len(j.change_points),
            "current_level": levels[-1],
            "previous_level": levels[-2] if len(levels) > 1 else None,
            "current_change_pct": j.change_points[-1].change_pct if j.change_points else None,
            "drifting": drift.drifting if drift else None,
            "drift_pct_per_occasion": drift.slope_pct_per_occasion if drift else None,
            "drift_pct_ci95_low": drift.slope_pct_ci95[0] if drift else None,
            "drift_pct_ci95_high": drift.slope_pct_ci95[1] if drift else None,
            "drift_p_value": drift.p_value if drift else None,
            "noise_pct": 100 * math.expm1(j.history.noise_sd_log) if j.history else None,
            "series_summary": series_summary(j),
        }


def _after_sql(name: str) -> str:
    return (analytics_dir() / name).read_text()


def history_step(other_campaigns: Callable[[Any], str | None] | None = None) -> Overlapped:
    """The tables as a step of the campaign's models (as report_comparisons): the series read and
    judged in a thread as soon as occasion_history is made, beside the models that follow; written
    once they have (report_history and its banner: SQL over the judged tables, after them).

    ``other_campaigns(cursor)``: makes a relation of occasion_history rows of the store's other
    campaigns (their stored tables: no result is read again) and returns its name, or None; their
    occasions of this campaign's classes join its series."""

    def source(con) -> str:
        other = other_campaigns(con) if other_campaigns else None
        return (
            HISTORY_SOURCE
            if other is None
            else f"(select * from {HISTORY_SOURCE} union all by name select * from {other})"
        )

    def compute(con) -> list[Judged]:
        # the points made once, a table (not a cursor's temporary one: finish reads it on the
        # connection): judged here, and report_history reads the same rows, the same numbering
        con.execute(f"CREATE OR REPLACE TABLE {POINTS_TABLE} AS\n{points_sql(source(con))}")
        return judge_all(load_series(con, points=POINTS_TABLE))

    def finish(con, judged: list[Judged]) -> None:
        insert_rows(con, "report_change_points", dict(CHANGE_POINT_COLUMNS), change_point_rows(judged))
        insert_rows(con, "history_series", dict(SERIES_VERDICT_COLUMNS), series_rows(judged))
        con.execute(f"CREATE OR REPLACE TABLE report_history AS\n{_after_sql(REPORT_HISTORY_SQL)}")
        con.execute(f"CREATE OR REPLACE TABLE report_history_banner AS\n{_after_sql(BANNER_SQL)}")

    return Overlapped(needs=HISTORY_SOURCE, compute=compute, finish=finish)


# the step on this campaign's occasions only (the tables' schemas: pvbench.pipeline.tables)
REPORT_HISTORY = history_step()
# the tables the step writes (pvbench.pipeline.tables.PYTHON_TABLES)
HISTORY_TABLES = ("report_change_points", "report_history", "report_history_banner")
