"""`pvbench stats …` (compare, ci-check, anomalies, occasions, limits) and `pvbench compare`.

Heavy imports (scipy, DuckDB) happen inside the commands so `pvbench --help` stays fast.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from pvbench.cli.common import console, fail, stoppable
from pvbench.results.metrics import METRICS

app = typer.Typer(
    help="Statistics over stored results: comparisons, precision, anomalies, occasions.", no_args_is_help=True
)

StoreOpt = Annotated[str, typer.Option(help="Store URL: a directory or s3://bucket/prefix")]
CampaignOpt = Annotated[Optional[str], typer.Option(help="Campaign of both sides (unless a side names its own)")]
LimitsOpt = Annotated[
    Optional[Path],
    typer.Option(
        help="Storage class limits/prices (YAML or CSV; default $PVBENCH_LIMITS, then the store's config/limits.yaml)"
    ),
]

EXIT_REGRESSION = 1


def _pct(x: float) -> str:
    return "–" if x is None or math.isnan(x) else f"{x:+.1%}"


def _num(x: float) -> str:
    if x is None or math.isnan(x):
        return "–"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.3g}"


def _verdict_style(verdict: str) -> str:
    return {"better": "[green]better[/]", "worse": "[bold red]worse[/]"}.get(verdict, verdict)


def write_rows(rows: list[dict], out: Path) -> None:
    """Rows as .parquet (via DuckDB), .csv or .json, by the file's suffix."""
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix == ".json":
        out.write_text(json.dumps(rows, indent=2, default=str) + "\n")
        return
    import duckdb

    from pvbench.analytics.tables import insert_rows
    from pvbench.stats.tables import COLUMNS

    con = duckdb.connect()
    insert_rows(con, "t", dict(COLUMNS), rows)
    fmt = "parquet" if out.suffix == ".parquet" else "csv"
    con.execute(f"copy t to '{out}' (format {fmt})")


@stoppable("compare")
def compare_command(
    baseline: Annotated[
        str, typer.Argument(help="Baseline: a run id, or key=value,… of campaign, run, storage_class, occasion, role")
    ],
    candidate: Annotated[str, typer.Argument(help="Candidate, in the same form (e.g. the run after the upgrade)")],
    store: StoreOpt,
    campaign: CampaignOpt = None,
    metrics: Annotated[
        str, typer.Option(help="headline (each workload's headline metric), all, or a list like headline,lat_p99_us")
    ] = "headline",
    min_change: Annotated[
        Optional[float],
        typer.Option(help="Smallest meaningful change of the mean, relative (0.05 = 5%); default from stats_settings"),
    ] = None,
    alpha: Annotated[Optional[float], typer.Option(help="Family-wise error rate after Holm (default 0.05)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdict rows as JSON on stdout")] = False,
    out: Annotated[Optional[Path], typer.Option(help="Also write the rows to a .parquet, .csv or .json file")] = None,
    fail_on: Annotated[
        str, typer.Option(help="Exit 1 on: worse (a significant, meaningful regression) or never")
    ] = "worse",
) -> None:
    """Compare two runs, storage classes, roles or campaigns; exit 1 if the candidate is significantly worse.

    Per metric, on the means of each occasion (run × occasion; repetitions inside one occasion are
    not independent): the ratio candidate ÷ baseline with its t confidence interval, its p-value
    (Holm-corrected across the metrics compared), and a verdict that knows which way is better.
    A side on one occasion borrows the day-to-day variation of the other side or of the class's
    other runs in the campaign; with none known the verdict is withheld, saying why. Examples:

      pvbench compare local-a local-b --store DIR --campaign demo

      pvbench compare 'storage_class=Azure Disk Storage' storage_class=Portworx --store DIR --campaign thesis

      pvbench compare role=baseline role=candidate --store s3://bucket/pvbench --campaign upgrade
    """
    from dataclasses import replace

    from pvbench.analytics import AnalyticsError
    from pvbench.pipeline import compare_sides
    from pvbench.stats.compare import BETTER, WITHHELD, WORSE, describe
    from pvbench.stats.sides import Side, SideError
    from pvbench.stats.tables import load_settings
    from pvbench.store import open_store
    from pvbench.store.base import StoreError

    if fail_on not in ("worse", "never"):
        fail(f"--fail-on must be 'worse' or 'never', not {fail_on!r}")
    try:
        settings = load_settings()
        settings = replace(
            settings, **{k: v for k, v in (("min_change", min_change), ("alpha", alpha)) if v is not None}
        )
        base, cand = Side.parse(baseline, campaign), Side.parse(candidate, campaign)
        result = compare_sides(open_store(store), base, cand, metrics, settings)
    except (SideError, ValueError, AnalyticsError, StoreError) as exc:
        fail(str(exc))

    rows = []
    for comp in result.comparisons:
        row = comp.as_row()
        row.update(
            kind="compare",
            campaign=base.campaign if base.campaign == cand.campaign else None,
            baseline=base.describe(),
            candidate=cand.describe(),
            alpha=settings.alpha,
            min_change=settings.min_change,
            summary=describe(comp),
        )
        row.setdefault("storage_class", None)
        rows.append(row)
    if out:
        write_rows(rows, out)
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2, default=str) + "\n")
    else:
        per_class = bool(result.comparisons) and "storage_class" in result.comparisons[0].key
        show_metric = len({c.key["metric"] for c in result.comparisons}) > 1 and metrics != "headline"
        table = Table(title=f"baseline {base.describe()}  →  candidate {cand.describe()}", title_justify="left")
        headers = (["storage class"] if per_class else []) + ["workload", "dir"] + (["metric"] if show_metric else [])
        for col in headers:
            table.add_column(col)
        for col in ("baseline mean±sd (n, occasions)", "candidate", "change [95% CI]", "p Holm"):
            table.add_column(col, justify="right")
        table.add_column("verdict")
        for comp, row in zip(result.comparisons, rows):
            cells = [str(row["storage_class"])] if per_class else []
            cells += [str(row["workload_title"] or row["workload"]), row["direction"]]
            cells += [row["metric"]] if show_metric else []
            cells += [
                f"{_num(comp.mean_baseline)}±{_num(comp.sd_baseline)} {row['unit']} "
                f"({comp.n_baseline}, {comp.occasions_baseline})",
                f"{_num(comp.mean_candidate)}±{_num(comp.sd_candidate)} ({comp.n_candidate}, {comp.occasions_candidate})",
                f"{_pct(comp.change)} [{_pct(comp.ratio_ci_low - 1)}, {_pct(comp.ratio_ci_high - 1)}]",
                "—" if comp.reason else f"{comp.p_holm:.2g}",
                _verdict_style(comp.verdict),
            ]
            table.add_row(*cells)
        Console().print(table)
    worse = [c for c in result.comparisons if c.verdict == WORSE]
    better = [c for c in result.comparisons if c.verdict == BETTER]
    withheld = [c for c in result.comparisons if c.verdict == WITHHELD]
    judged = len(result.comparisons) - len(withheld)
    console.print(
        f"{len(worse)} worse, {len(better)} better, {judged - len(worse) - len(better)} "
        f"no meaningful difference — Holm across {judged} metric(s), "
        f"α = {settings.alpha:g}, smallest meaningful change {settings.min_change:.0%}"
        + (f"; {len(withheld)} withheld" if withheld else "")
    )
    for reason in sorted({c.reason for c in withheld}):
        console.print(f"[yellow]withheld[/]: {reason}")
    for label, keys in (
        ("only in the baseline", result.only_baseline),
        ("only in the candidate", result.only_candidate),
        ("fewer than 2 values", result.too_few),
    ):
        if keys:
            console.print(
                f"[yellow]not compared[/] ({label}): "
                + "; ".join("/".join(map(str, k)) for k in keys[:8])
                + (f" and {len(keys) - 8} more" if len(keys) > 8 else "")
            )
    if not result.comparisons:
        fail("nothing to compare: the two sides share no workload and metric with 2+ values each")
    if worse and fail_on == "worse":
        console.print(
            "[bold red]regression[/]: "
            + "; ".join(
                f"{c.key.get('storage_class', '')} {c.key.get('workload')} {c.key.get('direction')} "
                f"{c.key.get('metric')} {describe(c)}".strip()
                for c in worse
            )
        )
        raise typer.Exit(EXIT_REGRESSION)


# `pvbench compare` (pvbench.cli.commands) is the command; `pvbench stats compare` is the same
# function, mounted again under a name people look for, and hidden so that help lists it once.
app.command("compare", hidden=True)(compare_command)


@app.command("ci-check")
@stoppable("ci-check")
def ci_check(
    store: StoreOpt,
    campaign: Annotated[str, typer.Option(help="Campaign to check")],
    run: Annotated[Optional[str], typer.Option(help="Only this run")] = None,
    target: Annotated[float, typer.Option(help="Target 95% CI half-width, relative to the mean")] = 0.05,
    min_reps: Annotated[int, typer.Option(help="Every cell needs at least this many values")] = 5,
    max_reps: Annotated[int, typer.Option(help="Cap: a cell with this many values is done regardless")] = 20,
    pool_occasions: Annotated[
        bool, typer.Option(help="Judge each cell over all runs and occasions together (default: per run × occasion)")
    ] = False,
    exit_zero: Annotated[bool, typer.Option(help="Exit 0 even when cells need more repetitions")] = False,
    seed: Annotated[
        Optional[int],
        typer.Option(help="Shuffle the next cells with this seed (and --round), as local mode's rounds do"),
    ] = None,
    round_: Annotated[
        int,
        typer.Option(
            "--round", min=1, help="Which adaptive round this check opens (varies the shuffle from round to round)"
        ),
    ] = 1,
    outputs: Annotated[
        Optional[Path],
        typer.Option(
            help="Also write next.json, next-clients.json and next-shared-clients.json (the next list, split as "
            "`pvbench expand --outputs` splits it) and more (true/false: another round is needed) into this "
            "directory, for Argo output parameters"
        ),
    ] = None,
    client_volumes: Annotated[
        str, typer.Option(help="Multi-client cells' volumes (own or shared): which --outputs list they go to")
    ] = "own",
    cells_per_pod: Annotated[
        int, typer.Option(help="One-pod cells to a pod in --outputs (as `pvbench expand --cells-per-pod`)")
    ] = 1,
) -> None:
    """Is every cell's mean precise enough? Prints JSON; exit 0 if so, 1 if some cells need more reps.

    The JSON's "next" list has one item per cell to repeat (campaign, run, occasion, storage_class,
    profile, workload, rep, order, key); --outputs writes them as `pvbench expand` items, for an Argo loop:
    rep is the cell's next repetition, order continues after the run's last cell, key is the
    store key of that repetition. A cell with max-reps values is done (the cap), so repeating
    the `next` cells until it is empty ends after at most max-reps rounds.
    """
    from pvbench.analytics import AnalyticsError
    from pvbench.cells.cell import FAN_OUT_ITEM_KEYS
    from pvbench.cells.matrix import NEXT_ROUND, argo_fan_outs
    from pvbench.pipeline import build_tables
    from pvbench.pipeline.adaptive import next_round
    from pvbench.stats.adaptive import AdaptiveSettings
    from pvbench.store import open_store
    from pvbench.store.base import StoreError

    if max_reps < min_reps:  # the cap wins: "never more than" over "at least" (a run must not fail on it)
        console.print(f"note: --max-reps {max_reps} caps --min-reps {min_reps}")
        min_reps = max_reps
    from pydantic import ValidationError

    try:
        settings = AdaptiveSettings(target_half_width=target, min_repetitions=min_reps, max_repetitions=max_reps)
        # the run's measurements are all next_round reads: the report's tables are not made (each
        # round of an adaptive run on Argo runs this in a pod)
        con = build_tables(open_store(store), campaign, run, extras=False, only_run=True, tables=("measurements",))
    except ValidationError as exc:  # one line: "max_repetitions: Input should be less than or equal to 100"
        fail("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()))
    except (ValueError, AnalyticsError, StoreError) as exc:
        fail(str(exc))
    report = next_round(con, settings, pool_occasions=pool_occasions, seed=seed, round_=round_)
    next_cells = report["next"]
    sys.stdout.write(json.dumps(report, indent=2) + "\n")
    if outputs is not None:
        outputs.mkdir(parents=True, exist_ok=True)
        # the fan-out items only (what tells cells apart): Argo names each node after its item;
        # split as `pvbench expand` splits them (cells of one pod, cells of N client pods)
        fan_outs = argo_fan_outs(
            [(nxt["profile"], nxt["workload"], {k: nxt[k] for k in FAN_OUT_ITEM_KEYS}) for nxt in next_cells],
            client_volumes,
            cells_per_pod,
        )
        for fan_out, name in NEXT_ROUND.items():
            (outputs / f"{name}.json").write_text(json.dumps(fan_outs[fan_out]) + "\n")
        (outputs / "more").write_text("true" if next_cells else "false")
    if report["need_more"] and not exit_zero:
        raise typer.Exit(1)


def _table_rows(
    store: str, campaign: Optional[str], table: str, sql: str, limits: Optional[Path] = None
) -> list[tuple]:
    """``sql``'s rows over the campaign's ``table`` (only the models that make it run)."""
    from pvbench.analytics import AnalyticsError
    from pvbench.pipeline import build_tables
    from pvbench.stats.limits import LimitsError
    from pvbench.store import open_store
    from pvbench.store.base import StoreError

    try:
        con = build_tables(open_store(store), campaign, limits=limits, extras=False, tables=(table,))
    except (AnalyticsError, StoreError, LimitsError) as exc:
        fail(str(exc))
    return con.execute(sql).fetchall()


@app.command("anomalies")
@stoppable("anomalies")
def anomalies(
    store: StoreOpt,
    campaign: Annotated[Optional[str], typer.Option(help="Campaign (default: all)")] = None,
    limits: LimitsOpt = None,
    kind: Annotated[Optional[str], typer.Option(help="Only over_limit, warm_up or outlier")] = None,
) -> None:
    """Results above declared limits, warm-up effects and robust outliers (report_anomalies)."""
    where = f"where kind = '{kind}'" if kind in ("over_limit", "warm_up", "outlier") else ""
    if kind and not where:
        fail(f"--kind must be over_limit, warm_up or outlier, not {kind!r}")
    rows = _table_rows(
        store,
        campaign,
        "report_anomalies",
        f"""
        select kind, storage_class, coalesce(workload_title, workload), direction, message
        from report_anomalies {where}""",
        limits,
    )
    table = Table("kind", "storage class", "workload", "dir", "finding")
    for row in rows:
        table.add_row(*[str(x) for x in row])
    Console().print(table)
    console.print(f"{len(rows)} finding(s)")


@app.command("occasions")
@stoppable("occasions")
def occasions(
    store: StoreOpt,
    campaign: Annotated[Optional[str], typer.Option(help="Campaign (default: all)")] = None,
) -> None:
    """How much of each cell's spread is between occasions vs within one (report_occasions)."""
    rows = _table_rows(
        store,
        campaign,
        "report_occasions",
        """
        select storage_class, coalesce(workload_title, workload), direction, unit, n_occasions, n,
               mean, sd_between, sd_within, share_between, p_value, finding
        from report_occasions""",
    )
    table = Table(
        "storage class",
        "workload",
        "dir",
        "unit",
        "occasions",
        "n",
        "mean",
        "sd between",
        "sd within",
        "occasion share",
        "p (F)",
        "finding",
    )
    for sc, wl, d, unit, k, n, mean, sb, sw, share, p, finding in rows:
        table.add_row(
            sc,
            wl,
            d,
            unit,
            str(k),
            str(n),
            _num(mean),
            _num(sb),
            _num(sw),
            "–" if share is None else f"{share:.0%}",
            "–" if p is None else f"{p:.3g}",
            finding,
        )
    Console().print(table)


@app.command("limits")
def limits_command(
    path: Annotated[Path, typer.Argument(help="Limits file (YAML or CSV) to check")],
    store: Annotated[
        Optional[str],
        typer.Option(help="Also upload it to this store's config/limits.yaml (found there by every aggregate)"),
    ] = None,
) -> None:
    """Check a storage class limits/prices file and show what it declares; optionally put it in the store."""
    from pvbench.stats.limits import LIMITS_STORE_KEY, LimitsError, read_declarations
    from pvbench.store import open_store
    from pvbench.store.base import StoreError

    try:
        text = path.read_text()
        decl = read_declarations(text, str(path))
    except (OSError, LimitsError) as exc:
        fail(str(exc))
    table = Table("storage class (glob)", "limit", "declared", "in pvbench units", "flag above")
    for lim in decl.limits:
        unit = METRICS[lim.metric].unit
        table.add_row(
            lim.pattern,
            f"{lim.direction} {lim.metric}",
            lim.declared,
            f"{lim.value:,.1f} {unit}",
            f"{lim.value * (1 + lim.tolerance):,.1f} {unit}",
        )
    Console().print(table)
    for price in decl.prices:
        console.print(f"price: {price.scope} {price.pattern or ''} {price.price_per_hour:g} {price.currency}/h")
    if store:
        if path.suffix.lower() == ".csv":
            fail("upload the YAML form (the store holds config/limits.yaml)")
        try:
            open_store(store).put_bytes(LIMITS_STORE_KEY, text.encode(), content_type="application/yaml")
        except StoreError as exc:
            fail(str(exc))
        console.print(f"stored as {store}/{LIMITS_STORE_KEY}")
