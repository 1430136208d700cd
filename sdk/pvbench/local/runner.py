"""Run a local-mode matrix: every cell through the same run_cell() and publish() as a pod.

Everything is checked before the first fio starts (names, profiles, sizes, free space,
writable targets, the store, a run id that is not taken). A failing cell is recorded and the
run goes on: one bad cell never costs the others their results. SIGTERM/SIGINT stop the
running fio, clean the targets and end the run; what was stored stays stored.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from pvbench.cells.cell import Cell
from pvbench.cells.matrix import expand
from pvbench.cells.publish import pending, publish
from pvbench.cells.run import CellPlan, TimingOverrides, plan_cell, run_cell
from pvbench.cells.volume import check_shared_directory
from pvbench.fio.runner import FioError
from pvbench.fio.target import check_target_path, remove_fio_files
from pvbench.local.config import LocalConfig
from pvbench.pipeline.adaptive import plan_stream
from pvbench.profiles import ProfileError
from pvbench.results.volume import BLOCK, READ_WRITE_MANY
from pvbench.stopping import Interrupted, check_interrupted, deferred_signals
from pvbench.store import open_store
from pvbench.store.layout import RESULT_FILE, results_prefix, slug


@dataclass
class CellFailure:
    cell: Cell
    error: str


@dataclass
class LocalRunReport:
    run: str
    stored: list[str] = field(default_factory=list)
    spooled: list[tuple[str, str]] = field(default_factory=list)
    failed: list[CellFailure] = field(default_factory=list)
    fio_seconds: float = 0.0
    wall_seconds: float = 0.0
    interrupted: Interrupted | None = None
    """Set when SIGTERM/SIGINT ended the run early (fio stopped, targets cleaned)."""

    @property
    def ok(self) -> bool:
        return not self.failed and not self.spooled and self.interrupted is None


def default_run_id() -> str:
    """local-<UTC time to the microsecond>-<4 random hex digits>: two runs never get the same id,
    even when started in the same second (or on two machines at the same instant)."""
    return f"local-{datetime.now(timezone.utc):%Y%m%d-%H%M%S-%f}-{secrets.token_hex(2)}"


def existing_results(config: LocalConfig, run: str, occasions: list[str] | None = None) -> list[str]:
    """Results of this campaign's run id (in the occasions about to run) already in the store or
    waiting in the spool: running again under the same id would overwrite them."""
    wanted = {f"occasion={slug(o)}" for o in occasions or config.occasions}
    prefix = results_prefix(config.campaign, run)
    keys = [k for k in open_store(config.store).list_keys(prefix) if k.endswith("/" + RESULT_FILE)]
    if config.spool.is_dir():
        keys += [k for k in pending(config.spool) if k.startswith(prefix + "/")]
    return [k for k in keys if k[len(prefix) + 1 :].split("/", 1)[0] in wanted]


def plan_run(config: LocalConfig, run: str, occasions: list[str] | None = None) -> list[CellPlan]:
    """All cells of the run, planned and checked; raises before anything runs if any is wrong."""
    overrides = TimingOverrides(config.ramp, config.runtime, config.size)
    plans = []
    for index, occasion in enumerate(occasions or config.occasions):
        cells = expand(
            campaign=config.campaign,
            run=run,
            occasion=occasion,
            storage_classes=list(config.storage_classes),
            profiles=config.profiles,
            repetitions=config.repetitions,
            seed=config.seed + index,
            tests=config.tests or None,
            shapes=config.shapes(),
        )
        for name, target in config.storage_classes.items():
            volume = config.volume(name)
            if volume.volume_mode == BLOCK:  # a device: checked as one by plan_cell, never created
                continue
            check_target_path(target)  # a path fio reads as itself, not a file: before creating it
            try:
                target.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ProfileError(
                    f"storage class {name}: target {target} cannot be created: {exc.strerror or exc}"
                ) from None
            if volume.access_mode == READ_WRITE_MANY:
                check_shared_directory(name, target)
        plans += [
            plan_cell(
                cell,
                config.storage_classes[cell.storage_class],
                overrides,
                scratch=config.volume(cell.storage_class).scratch,
            )
            for cell in cells
        ]
    return plans


def _last(doc) -> str:
    parts = []
    for m in doc.metrics:
        parts.append(f"{m.direction[0]} {m.iops:,.0f} IOPS {m.bw_mib_s:,.0f} MiB/s")
    return " · ".join(parts)


def run_local(config: LocalConfig, plans: list[CellPlan], run: str, console: Console | None = None) -> LocalRunReport:
    console = console or Console(stderr=True)
    store = open_store(config.store)
    report = LocalRunReport(run=run)
    started = time.monotonic()
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[last]}"),
    )
    try:
        with Progress(*columns, console=console, transient=False) as progress:
            task = progress.add_task("cells", total=len(plans), last="")
            observed: list = []  # (plan, result) of every cell that ran; adaptive rounds read it

            def more_rounds(more: list, round_no: int) -> None:
                progress.update(task, total=progress.tasks[0].total + len(more))
                progress.console.print(
                    f"adaptive round {round_no}: {len(more)} cell(s) not yet within "
                    f"±{100 * config.adaptive.target_half_width:g}% (95% CI of the mean)"
                )

            current = None
            try:
                for plan in plan_stream(config, plans, observed, more_rounds):
                    current = plan
                    progress.update(task, description=plan.cell.describe())
                    t0 = time.monotonic()
                    try:
                        doc, raw = run_cell(plan)
                    except FioError as exc:
                        report.failed.append(CellFailure(plan.cell, str(exc)))
                        progress.console.print(f"[red]failed[/] {plan.cell.describe()}: {exc}")
                        progress.update(task, advance=1, last="[red]failed")
                        continue
                    finally:
                        report.fio_seconds += plan.timing.ramp_s + plan.timing.runtime_s
                    observed.append((plan, doc))
                    with deferred_signals(raise_after=False):  # a measured result is always written whole
                        outcome = publish(doc, raw, store, config.spool)
                    current = None
                    if outcome.stored:
                        report.stored.append(outcome.key)
                    else:
                        report.spooled.append((str(outcome.spooled_at), outcome.error or ""))
                        progress.console.print(
                            f"[yellow]not stored[/] {outcome.key}: {outcome.error}; kept at {outcome.spooled_at}"
                        )
                    last = f"{_last(doc)} ({time.monotonic() - t0:.1f}s)"
                    progress.update(task, advance=1, last=last)
                    if not progress.console.is_terminal:  # logs (CI, pods): one line per cell instead of a bar
                        done = int(progress.tasks[0].completed)
                        progress.console.print(
                            f"[{done}/{int(progress.tasks[0].total)}] {plan.cell.describe()}: {last}"
                        )
                check_interrupted()  # a signal that came while the last result was written
            except Interrupted as exc:  # fio is stopped already (run_fio); keep what is stored
                report.interrupted = exc
                where = f" during {current.cell.describe()} (no result for it)" if current else ""
                progress.console.print(f"[red]{exc}[/]{where}; stopping")
    finally:
        for target in {p.target for p in plans}:
            remove_fio_files(Path(target))
        report.wall_seconds = time.monotonic() - started
    return report
