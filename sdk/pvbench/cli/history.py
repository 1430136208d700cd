"""`pvbench history`: a storage class's headline metrics over its occasions, their change points
(size, interval, p, the events they follow) and drift, from the campaigns' stored tables."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from pvbench.cli.common import fail, open_store_or_fail

app = typer.Typer()


def _num(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.3g}"


def _time(epoch: float | None) -> str:
    return "–" if epoch is None else datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")


@app.command("history")
def history_cmd(
    store: Annotated[str, typer.Option(help="Store URL: a directory or s3://bucket/prefix")],
    storage_class: Annotated[str, typer.Option("--storage-class", help="The storage class (as named, or its slug)")],
    campaign: Annotated[
        Optional[str], typer.Option(help="Only this campaign's tables (default: every campaign's, as one history)")
    ] = None,
    workload: Annotated[Optional[str], typer.Option(help="Only this workload (e.g. randwrite-iops)")] = None,
    metric: Annotated[Optional[str], typer.Option(help="Only this headline metric (e.g. iops, lat_mean_us)")] = None,
) -> None:
    """Print a storage class's history: each headline metric's occasion means with their 95%
    intervals, the change points found (size with its interval, p, the events between the last
    occasion before and the first after) and whether it drifts.

    Reads the tables `pvbench aggregate` stored for each campaign; a series is one workload of the
    class, across every campaign read. Examples:

      pvbench history --store s3://bucket/pvbench --storage-class gp3

      pvbench history --store DIR --campaign nightly --storage-class fast --workload randwrite-iops
    """
    from pvbench.pipeline.history import HistoryError, class_history
    from pvbench.stats.history import change_label, change_summary, series_summary, verdict

    console = Console()  # the history is the command's output: stdout
    target = open_store_or_fail(store)
    try:
        found = class_history(target, storage_class, campaign, workload, metric)
    except HistoryError as exc:
        fail(str(exc))
    console.print(
        f"[bold]{found.storage_class}[/]: {len(found.judged)} series from campaign(s) {', '.join(found.campaigns)}"
    )
    for j in found.judged:
        s, p = j.series, j.series.points
        console.print()
        console.print(f"[bold]{s.label()}[/] · {s['profile']} · {len(s)} occasions · unit {s.unit}", soft_wrap=True)
        changes = {c.index: c for c in j.change_points}
        levels, bounds = j.levels(), j.bounds()
        table = Table("#", "started", "campaign / run / occasion", "mean", "95% CI", "n", "level", "change", "event")
        segment = 0
        for i in range(len(s)):
            while i >= bounds[segment + 1]:
                segment += 1
            low, high = p["ci95_low"][i], p["ci95_high"][i]
            table.add_row(
                str(i + 1),
                _time(p["occasion_started_at"][i]),
                f"{p['campaign'][i]} / {p['run'][i]} / {p['occasion'][i]}",
                _num(p["mean"][i]),
                "–" if low is None else f"[{_num(low)}, {_num(high)}]",
                str(p["n"][i]),
                f"{segment + 1}: {_num(levels[segment])}",
                change_label(changes[i]) if i in changes else "",
                p["event"][i] or "",
            )
        console.print(table)
        if not j.judged:
            console.print(f"not judged: {j.note}", soft_wrap=True)
            continue
        for i, c in enumerate(j.change_points):
            style = "bold red" if verdict(c, s.better) == "worse" else "green"
            new = " (new with the latest run: it completed the new level)" if j.new[i] else ""
            console.print(f"[{style}]change point[/] {change_summary(j, i)}{new}", soft_wrap=True, highlight=False)
        console.print(series_summary(j), soft_wrap=True, highlight=False)
