"""CLI commands for local mode, aggregation, comparison and import (main.py composes the apps)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from pvbench.cli.common import console, fail, stoppable
from pvbench.cli.stats import compare_command

local_app = typer.Typer(help="Local mode: the whole pipeline on one machine.", no_args_is_help=True)
import_app = typer.Typer(help="Import results measured elsewhere.", no_args_is_help=True)
app = typer.Typer()  # aggregate, summary, compare: top-level commands


@local_app.command("run")
def local_run(
    config: Annotated[Path, typer.Argument(help="Local-mode YAML config (see examples/demo.yaml)")],
    run: Annotated[
        Optional[str],
        typer.Option(
            help="Run id (default: local-<UTC time, µs>-<random>); refused if the store already holds results "
            "of this run in the occasions to run"
        ),
    ] = None,
    occasion: Annotated[Optional[list[str]], typer.Option(help="Run only these occasions of the config")] = None,
    aggregate: Annotated[bool, typer.Option(help="Aggregate the campaign afterwards")] = True,
    dry_run: Annotated[bool, typer.Option(help="Check and print the plan, run nothing")] = False,
    limits: Annotated[
        Optional[Path], typer.Option(help="Storage class limits/prices YAML for anomaly flags and cost")
    ] = None,
) -> None:
    """Benchmark the configured local directories as storage classes, then aggregate."""
    from pvbench.cells.cell import check_label
    from pvbench.local.config import ConfigError, load_config
    from pvbench.local.runner import default_run_id, existing_results, plan_run, run_local
    from pvbench.profiles import ProfileError
    from pvbench.stopping import stop_on_signals
    from pvbench.store import open_store
    from pvbench.store.base import StoreError
    from pvbench.store.layout import check_distinct, check_distinct_keys

    try:
        cfg = load_config(config)
        run_id = check_label("run", run or default_run_id())
        check_distinct("occasion", cfg.occasions)
        for name in occasion or []:
            if name not in cfg.occasions:
                raise ConfigError(f"occasion {name!r} is not in the config's occasions {cfg.occasions}")
        check_distinct("occasion", occasion or [])
        plans = plan_run(cfg, run_id, occasion)
        check_distinct_keys((p.cell.describe(), p.cell.identity()) for p in plans)
        # The store is checked before the first cell (also with --dry-run): reachable, bucket there, writable.
        open_store(cfg.store).check()
        # The same --run twice would overwrite the first run's results: refused, before anything runs.
        taken = existing_results(cfg, run_id, occasion)
        if taken:
            raise ConfigError(
                f"run {run_id!r} of campaign {cfg.campaign!r} already has {len(taken)} result(s) in "
                f"these occasions (store {cfg.store} or spool {cfg.spool}); running it again would "
                "overwrite them: choose another --run (or leave it out for a new id)"
            )
    except (ConfigError, ProfileError, ValueError, StoreError) as exc:
        fail(str(exc))
    per_cell = plans[0].timing.ramp_s + plans[0].timing.runtime_s
    console.print(
        f"[bold]{cfg.campaign}[/] run [bold]{run_id}[/]: {len(plans)} cells "
        f"({len(cfg.storage_classes)} storage classes × {', '.join(cfg.profiles)} × "
        f"{cfg.repetitions} reps × {len(occasion or cfg.occasions)} occasions), "
        f"≥ {len(plans) * per_cell / 60:.1f} min of fio; store {cfg.store}"
    )
    if dry_run:
        for plan in plans:
            print(f"{plan.cell.order:4d} {plan.cell.describe()} -> {plan.target}")
        return
    with stop_on_signals():  # SIGTERM/SIGINT: fio is stopped, targets cleaned, stored results kept
        report = run_local(cfg, plans, run_id, console)
    console.print(
        f"stored {len(report.stored)}, failed {len(report.failed)}, not uploaded {len(report.spooled)}; "
        f"wall {report.wall_seconds:.0f} s for {report.fio_seconds:.0f} s of fio"
    )
    for failure in report.failed:
        console.print(f"[red]failed[/] {failure.cell.describe()}: {failure.error}")
    if report.spooled:
        console.print(
            f"[yellow]results kept in {cfg.spool}[/]; upload later with "
            f"pvbench store flush --spool {cfg.spool} --store {cfg.store}"
        )
    if report.interrupted is not None:
        fail(
            f"run {run_id} {report.interrupted} after {len(report.stored)} stored result(s), which are kept; "
            "fio was stopped and its files removed",
            code=report.interrupted.exit_code,
        )
    if aggregate and report.stored:
        _aggregate(cfg.store, cfg.campaign, None, None, limits, keep_flagged=tuple(cfg.keep_flagged) or None)
    if not report.ok:
        raise typer.Exit(1)


def _aggregate(
    store_url: str,
    campaign: str | None,
    run: str | None,
    out: Path | None,
    limits: Path | None = None,
    failures: list[dict] | None = None,
    snapshot: bool = True,
    keep_flagged: tuple[str, ...] | None = None,
) -> None:
    import duckdb

    from pvbench.analytics import AnalyticsError
    from pvbench.analytics.compact import full_temporary_folder_hint
    from pvbench.pipeline import aggregate
    from pvbench.stats.limits import LimitsError
    from pvbench.stopping import Interrupted, own_temporary_folder, stop_on_signals
    from pvbench.store import open_store
    from pvbench.store.base import StoreError

    warnings: list[str] = []
    try:
        # SIGTERM (`kill`, `timeout`, a deleted pod) as Ctrl-C: the aggregation unwinds, so its reader
        # process stops, its temporary files go and the campaign's lock is released
        with (
            stop_on_signals(),
            own_temporary_folder("pvbench-aggregate-"),
            console.status("aggregating with DuckDB") as status,
        ):

            def waiting(message: str) -> None:
                console.print(f"[yellow]{message}[/]", soft_wrap=True)  # in a log too, not only the spinner
                status.update(message)

            where, counts = aggregate(
                open_store(store_url),
                campaign,
                run,
                out,
                limits=limits,
                failures=failures,
                warn=warnings.append,
                progress=status.update,
                keep_snapshot=snapshot,
                waiting=waiting,
                keep_flagged=keep_flagged,
            )
    except (AnalyticsError, StoreError, LimitsError) as exc:
        fail(str(exc), code=1 if failures else 2)
    except (OSError, duckdb.Error) as exc:  # the machine's, not the data's: a full disk, a folder not writable
        fail(f"aggregation failed: {exc}{full_temporary_folder_hint(exc)}", code=1 if failures else 2)
    except Interrupted as exc:
        fail(
            f"aggregation {exc}: what it wrote is whole (each run's compact, the snapshot, the set of "
            "tables); aggregate again to finish",
            code=exc.exit_code,
        )
    for line in warnings:
        console.print(f"[yellow]warning:[/] {line}", soft_wrap=True)
    console.print(f"aggregated into {where}: " + ", ".join(f"{t} {n}" for t, n in counts.items()))
    for f in failures or []:
        what = f"{f['storage_class']} · {f['workload']} rep {f['rep']}" if f["storage_class"] else f["node"]
        console.print(f"[red]failed[/] {what}: {f['phase']}: {f['message']}")


@app.command("aggregate")
def aggregate_cmd(
    store: Annotated[str, typer.Option(help="Store URL: a directory or s3://bucket/prefix")],
    campaign: Annotated[Optional[str], typer.Option(help="Campaign to aggregate (default: all)")] = None,
    run: Annotated[
        Optional[str],
        typer.Option(
            help="The run that just finished: only it is listed and compacted, the campaign's other runs are "
            "read from their compacts as they are (without --run every run is checked); a run with no results "
            "and no compact is an error"
        ),
    ] = None,
    out: Annotated[
        Optional[Path], typer.Option(help="Write Parquet here instead of the store's analytics/ prefix")
    ] = None,
    limits: Annotated[
        Optional[Path],
        typer.Option(
            help="Storage class limits/prices YAML (else $PVBENCH_LIMITS, else config/limits.yaml in the store)"
        ),
    ] = None,
    argo_failures: Annotated[
        Optional[str],
        typer.Option(
            help="Argo's {{workflow.failures}} (the exit handler passes it): the report names each failed cell"
        ),
    ] = None,
    argo_status: Annotated[
        Optional[str], typer.Option(help="Argo's {{workflow.status}}, printed with the outcome")
    ] = None,
    snapshot: Annotated[
        bool,
        typer.Option(
            help="Keep the campaign's snapshot up to date (its runs' compacts merged, so the next aggregation reads "
            "a few files, not every run's); --no-snapshot where only the run's compact is kept (the Argo step)"
        ),
    ] = True,
    keep_flagged: Annotated[
        Optional[str],
        typer.Option(
            metavar="RULE[,RULE]",
            help="Keep the results these guards flagged in the statistics (by default a flag whose rule excludes "
            "leaves its result out of summaries, rankings and verdicts; kept ones stay marked). Rules: "
            "pvbench.cells.guards (client_cpu, page_cache, unwritten_reads). Default: $PVBENCH_KEEP_FLAGGED",
        ),
    ] = None,
) -> None:
    """Compact new or changed runs, run analytics/ (DuckDB) over the campaign and write its Parquet tables.

    Each run's result.json documents are read once into compact/…/run=<r>/ (Parquet); the
    campaign's tables (analytics/campaign=<c>/run=all/) are built from those compacts.
    """
    from pvbench.analytics.inputs import check_keep_flagged
    from pvbench.analytics.tables import AnalyticsError
    from pvbench.argo.failures import FailuresError, parse_failures
    from pvbench.cells.guards import split_rules

    if run and not campaign:
        fail("--run needs --campaign")
    try:  # before anything runs: a typo would otherwise be an aggregation that kept nothing
        kept = None if keep_flagged is None else check_keep_flagged(split_rules(keep_flagged))
    except AnalyticsError as exc:
        fail(f"--keep-flagged: {exc}")
    # Only the exit handler says what failed (--argo-failures, even an empty list: then nothing
    # did). Without it nothing is said, and --run's compact, if current, is kept with the failures
    # recorded in it; compacting it again with none would erase them from the report.
    failures: list[dict] | None = None
    if argo_failures is not None:
        try:
            failures = parse_failures(argo_failures)
        except FailuresError as exc:
            fail(str(exc))
    if argo_status:
        console.print(f"run {run or ''} ended {argo_status}; {len(failures or [])} failed step(s)")
    _aggregate(store, campaign, run, out, limits, failures, snapshot, kept)


@app.command("summary")
@stoppable("summary")
def summary_cmd(
    store: Annotated[str, typer.Option(help="Store URL")],
    campaign: Annotated[Optional[str], typer.Option(help="Campaign (default: all)")] = None,
) -> None:
    """Print each workload's headline metric per storage class: mean ± sd, CV, n (the overview table)."""
    from pvbench.analytics import AnalyticsError
    from pvbench.pipeline import build_tables
    from pvbench.store import open_store
    from pvbench.store.base import StoreError

    warnings: list[str] = []
    try:
        con = build_tables(open_store(store), campaign, warn=warnings.append, extras=False, tables=("report_overview",))
    except (AnalyticsError, StoreError) as exc:
        fail(str(exc))
    for line in warnings:
        console.print(f"[yellow]warning:[/] {line}", soft_wrap=True)
    rows = con.execute(
        "select workload_title, direction, storage_class, unit, mean, sd, cv, n, rank from report_overview"
    ).fetchall()
    table = Table("workload", "dir", "storage class", "mean ± sd", "unit", "CV", "n", "rank")
    for title, direction, sc, unit, mean, sd, cv, n, rank in rows:
        table.add_row(
            title, direction, sc, f"{mean:,.1f} ± {sd or 0:,.1f}", unit, f"{(cv or 0):.1%}", str(n), str(rank)
        )
    Console().print(table)


@import_app.command("thesis-csv")
def import_thesis_csv(
    path: Annotated[Path, typer.Argument(help="CSV: platform,solution,occasion,occasion_start,run,metric,unit,value")],
    store: Annotated[str, typer.Option(help="Store URL")],
    campaign: Annotated[str, typer.Option(help="Campaign label for the imported results")] = "thesis",
    run: Annotated[Optional[str], typer.Option(help="Run label (default: the platform column)")] = None,
) -> None:
    """Import published per-run results (long CSV) with their labels kept verbatim."""
    from pvbench.cells.publish import publish
    from pvbench.importers.thesis_csv import ImportError_, read_import
    from pvbench.store import open_store
    from pvbench.store.base import StoreError

    try:
        read = read_import(path, campaign, run)
        target = open_store(store)
        target.check()
    except (ImportError_, OSError, ValueError, StoreError) as exc:
        fail(str(exc))
    for note in read.skipped:
        console.print(f"[yellow]skipped[/] {note}", soft_wrap=True)
    errors = []
    for doc in read.documents:
        outcome = publish(doc, None, target, None)
        if not outcome.stored:
            errors.append(outcome.error)
    stored = len(read.documents) - len(errors)
    console.print(
        f"imported {stored} result(s) into {target.url} (campaign {campaign})"
        + (f"; {len(read.skipped)} duplicate row(s) skipped" if read.skipped else "")
    )
    if errors:
        fail(f"{len(errors)} result(s) could not be stored: {errors[0]}", code=3)


# `pvbench compare` at the top level (the CI/Argo Events gate); `pvbench stats compare` is the same
# function, mounted again (hidden) by pvbench.cli.stats.
app.command("compare")(compare_command)
