"""A storage class's history as `pvbench history` shows it: the series of the campaigns' stored
tables (the copy of each campaign's occasion_history under history/, written by `pvbench aggregate`),
read together so that one workload's occasions of every campaign make one series, then judged
as the report judges them (pvbench.stats.history)."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from pvbench.analytics.connection import connect
from pvbench.analytics.resources import readable
from pvbench.analytics.tables import AnalyticsError, sql_literal
from pvbench.stats.history import (
    SERIES_KEY,
    HistorySettings,
    Judged,
    Series,
    class_events,
    judge_all,
    load_series,
)
from pvbench.store import Store
from pvbench.store.layout import histories_glob, history_key, slug


class HistoryError(AnalyticsError):
    """Nothing to show: no stored history, or none for what was asked (one line for the user)."""


@dataclass(frozen=True)
class ClassHistory:
    storage_class: str
    campaigns: list[str]  # the campaigns its series were read from
    judged: list[Judged]


def _matches(label: str, wanted: str) -> bool:
    """A label given verbatim or by its store slug (as `pvbench compare` matches them)."""
    return label == wanted or slug(label) == slug(wanted)


def stored_histories(con: duckdb.DuckDBPyConnection, store: Store, key: str) -> str | None:
    """A query over the stored occasion_history copies at ``key`` (history_key, or histories_glob:
    every campaign's), or None where there are none. Each key column is there: a table an older
    pvbench stored lacks the newer ones (null: one series there)."""
    files = f"read_parquet({sql_literal(readable(con, store, key))}, union_by_name = true, hive_partitioning = false)"
    try:
        have = {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {files}").fetchall()}
    except duckdb.Error as exc:
        if "No files found" in str(exc) or "No such file" in str(exc):
            return None
        raise HistoryError(f"cannot read the history in {store.url}: {str(exc).splitlines()[0]}") from exc
    missing = "".join(f", NULL::VARCHAR AS {name}" for name in SERIES_KEY if name not in have)
    return f"SELECT *{missing} FROM {files}"


def _read(con: duckdb.DuckDBPyConnection, store: Store, campaign: str | None) -> None:
    """View ``stored_history``: the campaign's occasion_history, or every campaign's."""
    if campaign is not None:
        key = history_key(campaign)
        where = f"campaign {campaign!r}"
    else:
        key = histories_glob()
        where = "any campaign"
    stored = stored_histories(con, store, key)
    if stored is None:
        raise HistoryError(
            f"no history of {where} in {store.url}: its tables were not aggregated by this pvbench"
            f" (run `pvbench aggregate --store {store.url}"
            + (f" --campaign {campaign}" if campaign else "")
            + "` first)"
        )
    con.execute(f"CREATE OR REPLACE VIEW stored_history AS {stored}")


def class_history(
    store: Store,
    storage_class: str,
    campaign: str | None = None,
    workload: str | None = None,
    metric: str | None = None,
    settings: HistorySettings = HistorySettings(),
) -> ClassHistory:
    """The class's series (its headline metrics; only ``workload``/``metric`` if given), judged.
    The events are the class's, whichever workload their runs measured."""
    con = connect()
    try:
        _read(con, store, campaign)
        classes = [r[0] for r in con.execute("SELECT DISTINCT storage_class FROM stored_history ORDER BY 1").fetchall()]
        found = [c for c in classes if _matches(c, storage_class)]
        if not found:
            raise HistoryError(
                f"storage class {storage_class!r} has no history in {store.url}"
                + (f" (campaign {campaign})" if campaign else "")
                + f"; classes with one: {', '.join(classes) or 'none'}"
            )
        name = found[0]
        series = load_series(con, "stored_history", "storage_class = ?", [name])
        campaigns = [
            r[0]
            for r in con.execute(
                "SELECT DISTINCT campaign FROM stored_history WHERE storage_class = ? ORDER BY 1", [name]
            ).fetchall()
        ]
    finally:
        con.close()
    events = class_events(series).get(name, [])
    chosen = [s for s in series if _wanted(s, workload, metric)]
    if not chosen:
        have = sorted({f"{s['workload']} ({s['metric']})" for s in series})
        raise HistoryError(
            f"storage class {name!r} has no history of"
            + (f" workload {workload!r}" if workload else "")
            + (" and" if workload and metric else "")
            + (f" metric {metric!r}" if metric else "")
            + f"; it has: {', '.join(have)}"
        )
    return ClassHistory(name, campaigns, judge_all(chosen, settings, {name: events}))


def _wanted(series: Series, workload: str | None, metric: str | None) -> bool:
    return (workload is None or _matches(series["workload"], workload)) and (
        metric is None or series["metric"] == metric
    )
