"""The commands Argo's steps run: expand the matrix, validate a run, run one cell (`fio-step`)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape

from pvbench.argo.conventions import (
    CELL_TIMEOUT_OUTPUT,
    DEFAULT_MAX_STORAGE_CLASSES,
    MAX_STORAGE_CLASSES_ENV,
    POD_TIMEOUT_OUTPUT,
    POD_VOLUME_PREFIX,
    VOLUME_WAIT_OUTPUT,
)
from pvbench.cells.guards import KEEP_FLAGGED_ENV
from pvbench.cli.common import console, fail, parse_labels, split_list
from pvbench.cli.profiles import PROFILE_NAMES
from pvbench.fio.pod_barrier import DEFAULT_PORT as DEFAULT_BARRIER_PORT
from pvbench.kube.lifecycle import VOLUME_NAME
from pvbench.profiles import DEFAULT_PROFILE_NAME, ProfileError
from pvbench.results.schema import LIFECYCLE_METRICS
from pvbench.results.volume import BLOCK, DEFAULT_ACCESS_MODE, DEFAULT_VOLUME_MODE
from pvbench.store.layout import CLIENT_FILE, FIO_LOGS_FILE, RAW_FIO_FILE, RESULT_FILE

app = typer.Typer()


# ---------------------------------------------------------------- matrix
def _cells(
    campaign,
    run,
    occasion,
    storage_classes,
    profiles,
    repetitions,
    seed,
    tests,
    volume_modes,
    access_modes,
    client_volumes,
):
    from pvbench.cells.matrix import every_shape, expand
    from pvbench.store.layout import check_distinct_keys

    try:
        classes = split_list(storage_classes)
        cells = expand(
            campaign=campaign,
            run=run,
            occasion=occasion,
            storage_classes=classes,
            profiles=split_list(profiles),
            repetitions=repetitions,
            seed=seed,
            tests=split_list(tests) or None,
            shapes=every_shape(
                classes, split_list(volume_modes.replace(" ", ",")), split_list(access_modes.replace(" ", ","))
            ),
            shared_clients=client_volumes == "shared",
        )
        check_distinct_keys((cell.describe(), cell.identity()) for cell in cells)
    except (ProfileError, ValueError) as exc:
        fail(str(exc))
    return cells


CampaignOpt = Annotated[str, typer.Option(help="Campaign label (groups runs that belong together)")]
RunOpt = Annotated[str, typer.Option(help="Run id (an Argo workflow name, a local run id)")]
OccasionOpt = Annotated[str, typer.Option(help="Occasion label, e.g. weekday-office")]
ClassesOpt = Annotated[str, typer.Option("--storage-classes", help="Storage classes, comma-separated or a JSON list")]
ProfilesOpt = Annotated[str, typer.Option("--profiles", help=f"Profiles, comma-separated: {PROFILE_NAMES}, file:PATH")]
RepsOpt = Annotated[int, typer.Option(help="Repetitions of every cell")]
SeedOpt = Annotated[int, typer.Option(help="Seed of the randomized cell order")]
TestsOpt = Annotated[str, typer.Option(help="Only these tests of the profiles, comma-separated")]
VolumeModesOpt = Annotated[
    str,
    typer.Option(
        help="Volume modes, each a cell of its own: Filesystem (fio's files on the volume's filesystem), Block "
        "(fio on the raw device), or both ('Filesystem Block')"
    ),
]
AccessModesOpt = Annotated[
    str,
    typer.Option(
        help="Access modes of the cells' volumes: ReadWriteOnce, ReadWriteMany (shared client volumes need it), or both"
    ),
]
CellsPerPodOpt = Annotated[
    int,
    typer.Option(
        help="One-pod cells run this many to a pod, one after another, each on its own fresh volume "
        "(Argo's per-step cost paid once per pod; the pod's volumes all exist while it runs)"
    ),
]


@app.command()
def expand(
    campaign: CampaignOpt,
    run: RunOpt,
    occasion: OccasionOpt,
    storage_classes: ClassesOpt,
    profiles: ProfilesOpt = DEFAULT_PROFILE_NAME,
    repetitions: RepsOpt = 1,
    seed: SeedOpt = 1,
    tests: TestsOpt = "",
    outputs: Annotated[
        Optional[Path],
        typer.Option(
            help="Also write Argo's fan-outs here: cells (one pod each), client-cells (N client pods, a volume "
            "each), shared-client-cells (N client pods on one ReadWriteMany volume)"
        ),
    ] = None,
    client_volumes: Annotated[
        str, typer.Option(help="Multi-client cells' volumes: own (a PVC per client pod) or shared (one RWX PVC)")
    ] = "own",
    cells_per_pod: CellsPerPodOpt = 1,
    volume_modes: VolumeModesOpt = DEFAULT_VOLUME_MODE,
    access_modes: AccessModesOpt = DEFAULT_ACCESS_MODE,
) -> None:
    """Print the cells of the matrix as a JSON list, in their seeded random order (Argo's withParam input).

    Each item holds only what tells the run's cells apart (storage_class, volume_mode, access_mode,
    workload, rep, order);
    Argo names each fan-out node after its item. With --outputs, the same items split into the
    template's fan-outs (pvbench.cells.matrix.argo_fan_outs).
    """
    from pvbench.cells.matrix import argo_fan_outs

    cells = _cells(
        campaign,
        run,
        occasion,
        storage_classes,
        profiles,
        repetitions,
        seed,
        tests,
        volume_modes,
        access_modes,
        client_volumes,
    )
    try:
        fan_outs = argo_fan_outs(
            [(c.profile_spec, c.workload, c.fan_out_item()) for c in cells], client_volumes, cells_per_pod
        )
    except ProfileError as exc:
        fail(str(exc))
    sys.stdout.write(json.dumps([cell.fan_out_item() for cell in cells]) + "\n")
    if outputs is not None:
        outputs.mkdir(parents=True, exist_ok=True)
        for name, items in fan_outs.items():
            (outputs / name).write_text(json.dumps(items) + "\n")


@app.command()
def validate(
    campaign: CampaignOpt,
    run: RunOpt,
    occasion: OccasionOpt,
    storage_classes: ClassesOpt,
    profiles: ProfilesOpt = DEFAULT_PROFILE_NAME,
    repetitions: RepsOpt = 1,
    seed: SeedOpt = 1,
    tests: TestsOpt = "",
    ramp: Annotated[Optional[str], typer.Option(help="Ramp time override (profile: the profile's own)")] = None,
    runtime: Annotated[Optional[str], typer.Option(help="Runtime override (profile: the profile's own)")] = None,
    size: Annotated[Optional[str], typer.Option(help="fio file size override (profile: the profile's own)")] = None,
    volume_size: Annotated[Optional[str], typer.Option(help="PVC size; fio's files must fit in it")] = None,
    volume_timeout: Annotated[
        str,
        typer.Option(help="How long a cell's pod may wait for its volume, unscheduled; part of each cell's deadline"),
    ] = "10m",
    outputs: Annotated[
        Optional[Path],
        typer.Option(
            help="Write cell-timeout (the longest cell's deadline, e.g. 1234s), pod-timeout and volume-wait "
            "(volume-timeout in seconds) into this directory, for Argo"
        ),
    ] = None,
    max_storage_classes: Annotated[
        int,
        typer.Option(
            envvar=MAX_STORAGE_CLASSES_ENV,
            min=1,
            help="At most this many storage classes in one run (the chart's benchmark.maxStorageClasses)",
        ),
    ] = DEFAULT_MAX_STORAGE_CLASSES,
    client_volumes: Annotated[
        str,
        typer.Option(help="Multi-client cells' volumes: own (each client's files in its own) or shared (all in one)"),
    ] = "own",
    keep_flagged: Annotated[
        str,
        typer.Option(
            envvar=KEEP_FLAGGED_ENV,
            metavar="RULE[,RULE]",
            help="Guard rules whose flagged results the run's statistics keep (pvbench.cells.guards)",
        ),
    ] = "",
    cells_per_pod: CellsPerPodOpt = 1,
    volume_modes: VolumeModesOpt = DEFAULT_VOLUME_MODE,
    access_modes: AccessModesOpt = DEFAULT_ACCESS_MODE,
) -> None:
    """Check every parameter of a run before anything is created; exit 2 with a clear message if wrong.

    Also derives each cell's deadline from its workload (waiting for the volume, fio's time, laying
    out its files, start-up) and, with --outputs, writes the longest one for the Argo template, and
    a pod's (one volume wait, then cells-per-pod of the longest cell).
    """
    import math

    from pvbench.analytics.inputs import check_keep_flagged
    from pvbench.analytics.tables import AnalyticsError
    from pvbench.cells.guards import split_rules
    from pvbench.cells.matrix import CLIENT_VOLUMES, check_cells_per_pod
    from pvbench.cells.run import TimingOverrides, max_jobs, plan_cell
    from pvbench.profiles import parse_seconds, parse_size

    if client_volumes not in CLIENT_VOLUMES:
        fail(f"client volumes {client_volumes!r}: choose one of {', '.join(CLIENT_VOLUMES)}")
    try:
        check_cells_per_pod(cells_per_pod)
    except ProfileError as exc:
        fail(str(exc))
    try:  # the statistics steps read it at the end of the run: a typo must not wait for that
        check_keep_flagged(split_rules(keep_flagged))
    except AnalyticsError as exc:
        fail(f"keep-flagged: {exc}")
    classes = split_list(storage_classes)
    if len(classes) > max_storage_classes:
        fail(
            f"{len(classes)} storage classes in one run; at most {max_storage_classes} are allowed "
            f"(the chart's benchmark.maxStorageClasses): split them over several runs"
        )
    cells = _cells(
        campaign,
        run,
        occasion,
        storage_classes,
        profiles,
        repetitions,
        seed,
        tests,
        volume_modes,
        access_modes,
        client_volumes,
    )
    deadline = 0.0
    try:
        volume = parse_size(volume_size.removesuffix("i")) if volume_size else None
        volume_wait = parse_seconds(volume_timeout)
        seen: set[tuple[str, str, str]] = set()
        for cell in cells:  # only the tests this run measures, each once (per volume mode)
            if (cell.profile, cell.workload, cell.volume_mode) in seen:
                continue
            seen.add((cell.profile, cell.workload, cell.volume_mode))
            plan = plan_cell(cell, Path("/"), TimingOverrides(ramp, runtime, size), check=False)
            # on Argo each client of a multi-client test is a pod with its own volume of this size,
            # or every client's files go into one shared volume of this size
            jobs = max_jobs(plan.test, one_client=client_volumes == "own")
            room = volume if cell.volume_mode == BLOCK else volume * 0.95 if volume is not None else None
            if room is not None and plan.timing.size_bytes * jobs > room:
                per = ""
                if plan.test.clients > 1:
                    per = " per client pod" if client_volumes == "own" else f" of {plan.test.clients} clients together"
                fail(
                    f"{cell.profile}/{cell.workload}: size {plan.timing.size} × {jobs} job(s){per} does not fit in a "
                    f"{volume_size} {cell.volume_mode} volume"
                    + (" (keep 5% for the filesystem)" if cell.volume_mode != BLOCK else "")
                    + "; lower the size or raise the volume size"
                )
            deadline = max(deadline, plan.deadline_s(volume_wait))
    except ProfileError as exc:
        fail(str(exc))
    pod_deadline = volume_wait + cells_per_pod * (deadline - volume_wait)
    if outputs is not None:
        outputs.mkdir(parents=True, exist_ok=True)
        (outputs / CELL_TIMEOUT_OUTPUT).write_text(f"{math.ceil(deadline)}s")
        (outputs / POD_TIMEOUT_OUTPUT).write_text(f"{math.ceil(pod_deadline)}s")
        (outputs / VOLUME_WAIT_OUTPUT).write_text(f"{math.ceil(volume_wait)}")
    console.print(
        f"[green]ok[/]: {len(cells)} cells; each may take up to {math.ceil(deadline)} s "
        f"(volume wait {volume_timeout} + fio)"
    )


# ---------------------------------------------------------------- one cell (the pod step)
@app.command("fio-step")
def fio_step(
    campaign: CampaignOpt,
    run: RunOpt,
    occasion: OccasionOpt,
    storage_class: Annotated[str, typer.Option(help="Storage class of the target")],
    profile: Annotated[str, typer.Option(help=f"{PROFILE_NAMES} or file:PATH")],
    workload: Annotated[str, typer.Option(help="Test of the profile, e.g. randread-iops")],
    rep: Annotated[int, typer.Option(help="Repetition number, from 1")],
    target: Annotated[
        Optional[Path],
        typer.Option(
            help="Directory on the storage under test (the PVC mount), or its device (Block); not with --merge"
        ),
    ] = None,
    volume_mode: Annotated[
        str, typer.Option(help="Filesystem, or Block: --target is the raw device of a fresh volume made for this cell")
    ] = DEFAULT_VOLUME_MODE,
    access_mode: Annotated[str, typer.Option(help="The volume's access mode: ReadWriteOnce or ReadWriteMany")] = (
        DEFAULT_ACCESS_MODE
    ),
    order: Annotated[int, typer.Option(help="Position in the randomized order")] = 0,
    seed: Annotated[Optional[int], typer.Option(help="Seed of the randomized order, recorded in the result")] = None,
    ramp: Annotated[Optional[str], typer.Option(help="Ramp time override, e.g. 2s")] = None,
    runtime: Annotated[Optional[str], typer.Option(help="Runtime override, e.g. 15s")] = None,
    size: Annotated[Optional[str], typer.Option(help="File size override, e.g. 1G")] = None,
    store: Annotated[Optional[str], typer.Option(help="Store URL: a directory or s3://bucket/prefix")] = None,
    out: Annotated[
        Optional[Path],
        typer.Option(help=f"Also write {RESULT_FILE}, {RAW_FIO_FILE} and {FIO_LOGS_FILE} here (artifacts)"),
    ] = None,
    key: Annotated[
        Optional[str],
        typer.Option(
            help="The store key the caller will upload --out under (Argo's artifact key); refused unless it is "
            "the key layout's own for this cell"
        ),
    ] = None,
    spool: Annotated[Optional[Path], typer.Option(help="Where a result waits if the store is down")] = None,
    label: Annotated[Optional[list[str]], typer.Option(help="key=value label on the result, repeatable")] = None,
    cleanup: Annotated[bool, typer.Option(help="Remove fio's files from the target afterwards")] = False,
    client: Annotated[
        Optional[int],
        typer.Option(
            min=1,
            help="Run only client N of a multi-client cell (one of its N pods, on its own volume), released with "
            f"the others by --barrier; writes {CLIENT_FILE} to --out for the cell's --merge step, no result",
        ),
    ] = None,
    barrier: Annotated[
        Optional[str], typer.Option(help="host:port of the cell's start barrier (`pvbench barrier`), with --client")
    ] = None,
    shared_volume: Annotated[
        bool,
        typer.Option(
            help="With --client: --target is the volume all the cell's client pods share (ReadWriteMany); this "
            "client runs in its own directory pvbench-client-N of it"
        ),
    ] = False,
    merge: Annotated[
        Optional[Path],
        typer.Option(
            help=f"Make the cell's result from its client pods' {CLIENT_FILE} files under this directory "
            "instead of running fio"
        ),
    ] = None,
) -> None:
    """Run one cell with fio and write its result document (what each Argo step pod runs).

    A multi-client cell on Argo runs as N pods: each runs this with --client (its own fio on its
    own volume, released together by the cell's barrier), then one runs it with --merge.
    """
    from pvbench.cells.cell import Cell
    from pvbench.cells.run import TimingOverrides, plan_cell
    from pvbench.store import open_store
    from pvbench.store.base import StoreError

    try:
        if merge is not None and (target is not None or client is not None):
            raise ValueError("--merge makes a cell's result from its clients' outputs: no --target, no --client")
        if merge is None and target is None:
            raise ValueError("--target is needed (the directory fio runs on)")
        if client is not None and (barrier is None or out is None or store is not None):
            raise ValueError("--client needs --barrier (the cell's start barrier) and --out, and stores nothing")
        if shared_volume and client is None:
            raise ValueError("--shared-volume is for a client pod (--client)")
        labels = parse_labels(label or [])
        cell = Cell(
            campaign=campaign,
            run=run,
            occasion=occasion,
            storage_class=storage_class,
            volume_mode=volume_mode,
            access_mode=access_mode,
            profile=profile,
            workload=workload,
            rep=rep,
            order=order,
            seed=seed,
        )
        if key is not None and key.strip("/") != cell.identity().prefix():
            raise ValueError(
                f"the result would be stored under {key!r}, but the key layout puts this cell at "
                f"{cell.identity().prefix()!r}; the template and pvbench disagree"
            )
        overrides = TimingOverrides(ramp, runtime, size)
        if merge is not None:
            plan = plan_cell(cell, Path("/"), overrides, check=False)
        else:
            # a client pod's own volume holds its files; a shared one holds every client's
            # a Block cell's device is a fresh volume made for this cell alone: scratch
            plan = plan_cell(cell, target, overrides, one_client=client is not None and not shared_volume, scratch=True)
        if client is not None and not 1 <= client <= plan.test.clients:
            raise ValueError(f"--client {client}: {cell.workload} has {plan.test.clients} client(s)")
        store_obj = open_store(store) if store else None
        if store_obj is not None:
            store_obj.check()  # reachable, bucket there, writable: before fio, not after it
    except (ProfileError, ValueError, StoreError) as exc:
        fail(str(exc))
    if client is not None:
        _run_pod_client(plan, client, barrier, out, shared_volume, cleanup)
        return
    if merge is not None:
        doc, raw = _merge_pod_clients(plan, labels, merge)
    else:
        try:
            doc, raw = _run_whole_cell(plan, labels, target, cleanup)
        except CellFailed as exc:
            fail(str(exc), code=exc.code)
    _report_cell(doc, raw, out, store_obj, spool)


class CellFailed(Exception):
    """A cell measured nothing: fio failed (code 1) or was stopped by a signal (its code)."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


def _run_whole_cell(plan, labels, target: Path, cleanup: bool, volume_name: str = VOLUME_NAME):
    """Every client of the cell here (one fio, or N behind the file barrier), its lifecycle read
    first (of the pod's volume ``volume_name``: a pod of several cells has one each); CellFailed if none."""
    from pvbench.cells.run import run_cell
    from pvbench.fio.runner import FioError
    from pvbench.fio.target import remove_fio_files
    from pvbench.kube.lifecycle import read_own
    from pvbench.stopping import Interrupted, stop_on_signals

    cell = plan.cell
    console.print(f"[bold]pvbench[/] {cell.describe()} on {target}")
    # In a Kubernetes pod: how long its volume took to become usable, read before fio starts
    lifecycle, lifecycle_problem = read_own(volume_name=volume_name)
    if lifecycle_problem:
        console.print(f"  [yellow]{lifecycle_problem}[/]")
    try:
        # SIGTERM (the pod is deleted) or SIGINT: fio is stopped with it, never left running
        with (
            stop_on_signals(),
            console.status(f"fio {plan.test.name}: ramp {plan.timing.ramp_s:g}s + {plan.timing.runtime_s:g}s"),
        ):
            doc, raw = run_cell(plan, labels)
    except FioError as exc:
        raise CellFailed(f"{cell.describe()}: {exc}", 1) from None
    except Interrupted as exc:
        raise CellFailed(f"{cell.describe()}: {exc}; fio was stopped, no result for this cell", exc.exit_code) from None
    finally:
        if cleanup:
            remove_fio_files(target)
    return _with_lifecycle(doc, lifecycle, lifecycle_problem), raw


# ---------------------------------------------------------------- several cells in one pod
# Argo's executor shows what a step writes here as the node's progress ("3/8") in the UI.
ARGO_PROGRESS_ENV = "ARGO_PROGRESS_FILE"
# What a failed container writes here is its message in `kubectl describe` and Argo's node.
TERMINATION_LOG = Path("/dev/termination-log")


@app.command("fio-pod")
def fio_pod(
    campaign: CampaignOpt,
    run: RunOpt,
    occasion: OccasionOpt,
    profile: Annotated[str, typer.Option(help=f"{PROFILE_NAMES} or file:PATH")],
    cells: Annotated[
        str,
        typer.Option(
            help="The pod's cells, 'class:volume_mode:access_mode:workload:rep:order …' in their order (a cell-pods item)"
        ),
    ],
    targets: Annotated[Path, typer.Option(help="Cell i runs on its own fresh volume, mounted at TARGETS/i (i from 0)")],
    out: Annotated[Path, typer.Option(help="Each cell's result files go under OUT/<its key below --key>")],
    key: Annotated[
        str,
        typer.Option(
            help="The store key the caller will upload --out under (the run's results prefix); refused unless it "
            "is the key layout's own"
        ),
    ],
    seed: Annotated[Optional[int], typer.Option(help="Seed of the randomized order, recorded in the results")] = None,
    ramp: Annotated[Optional[str], typer.Option(help="Ramp time override, e.g. 2s")] = None,
    runtime: Annotated[Optional[str], typer.Option(help="Runtime override, e.g. 15s")] = None,
    size: Annotated[Optional[str], typer.Option(help="File size override, e.g. 1G")] = None,
    label: Annotated[Optional[list[str]], typer.Option(help="key=value label on the results, repeatable")] = None,
    cleanup: Annotated[bool, typer.Option(help="Remove fio's files from each volume after its cell")] = False,
) -> None:
    """Run several one-pod cells in this pod, one after another, each on its own fresh volume.

    What `fio-step` does for one cell, for each (its volume's lifecycle, fio, its result files).
    A failed cell does not stop the others; the command then exits 1 naming every failed cell.
    """
    from pvbench.cells.cell import Cell
    from pvbench.cells.matrix import parse_pod_cells, pod_cells_text
    from pvbench.cells.run import TimingOverrides, plan_cell
    from pvbench.store.layout import results_prefix

    try:
        labels = parse_labels(label or [])
        if key.strip("/") != results_prefix(campaign, run):
            raise ValueError(
                f"the results would be stored under {key!r}, but the key layout puts this run's at "
                f"{results_prefix(campaign, run)!r}; the template and pvbench disagree"
            )
        items = parse_pod_cells(cells)
        overrides = TimingOverrides(ramp, runtime, size)
        plans = [
            plan_cell(
                Cell(campaign=campaign, run=run, occasion=occasion, profile=profile, seed=seed, **item),
                targets / str(i),
                overrides,
            )
            for i, item in enumerate(items)
        ]
    except (ProfileError, ValueError) as exc:
        fail(str(exc))
    progress = os.environ.get(ARGO_PROGRESS_ENV)
    failed: list[str] = []
    for i, (item, plan) in enumerate(zip(items, plans)):
        try:
            doc, raw = _run_whole_cell(plan, labels, plan.target, cleanup, volume_name=f"{POD_VOLUME_PREFIX}{i}")
        except CellFailed as exc:
            console.print(f"[bold red]cell failed:[/] {escape(str(exc))}")
            if exc.code not in (0, 1):  # stopped by a signal: the pod is going, so are its other cells
                fail(str(exc), code=exc.code)
            failed.append(f"{pod_cells_text([item])} ({exc})")
        else:
            below = plan.cell.identity().prefix().removeprefix(key.strip("/")).strip("/")
            _report_cell(doc, raw, out / below, None, None)
        if progress:  # Argo's own progress: the UI shows "cells done/cells"
            Path(progress).write_text(f"{i + 1}/{len(plans)}\n")
    if failed:
        message = f"{len(failed)} of {len(plans)} cells failed: " + "; ".join(failed)
        try:
            TERMINATION_LOG.write_text(message[:4000])  # the node's message in Argo (Kubernetes keeps 4 KiB)
        except OSError:
            pass  # not in a container
        fail(message, code=1)


def _with_lifecycle(doc, lifecycle, problem: str | None):
    if lifecycle is None and not problem:
        return doc
    notes = doc.provenance.notes | ({"lifecycle": problem} if problem else {})
    if lifecycle is not None:
        spans = {name: getattr(lifecycle, name) for name in LIFECYCLE_METRICS}
        console.print("  volume lifecycle: " + ", ".join(f"{k} {v:g}" for k, v in spans.items() if v is not None))
    return doc.model_copy(
        update={"lifecycle": lifecycle, "provenance": doc.provenance.model_copy(update={"notes": notes})}
    )


def _run_pod_client(plan, number: int, barrier: str, out: Path, shared: bool, cleanup: bool) -> None:
    """One client pod of an N-pod cell: HELLO to the barrier, fio lays out and waits, GO, measure, CLIENT_FILE."""
    import dataclasses

    from pvbench.cells.clients import run_pod_client
    from pvbench.fio.pod_barrier import BarrierClient
    from pvbench.fio.runner import FioError
    from pvbench.fio.target import client_dir, remove_fio_files
    from pvbench.kube.lifecycle import read_own
    from pvbench.stopping import Interrupted, stop_on_signals

    if shared:  # the cell's one volume: this client's own directory of it, as in local mode
        own = client_dir(plan.target, number)
        own.mkdir(exist_ok=True)
        plan = dataclasses.replace(plan, target=own)
    target = plan.target
    n, what = plan.test.clients, plan.cell.describe()
    console.print(f"[bold]pvbench[/] {what}: client {number} of {n} on {target}, barrier {barrier}")
    lifecycle, lifecycle_problem = read_own()
    if lifecycle_problem:
        console.print(f"  [yellow]{lifecycle_problem}[/]")
    try:
        with stop_on_signals(), BarrierClient(barrier, number, plan.fio_timeout_s) as gate:
            with console.status(f"fio {plan.test.name}: laying out, then waiting for the other clients"):
                output, logs = run_pod_client(plan, number, gate.release, shared)
    except FioError as exc:
        fail(f"{what}: {exc}", code=1)
    except Interrupted as exc:
        fail(f"{what}: client {number}: {exc}; fio was stopped", code=exc.exit_code)
    finally:
        if cleanup:
            remove_fio_files(target)
            if shared:  # its own directory, if nothing else is in it (never another client's)
                try:
                    target.rmdir()
                except OSError:
                    pass
    output["lifecycle"] = lifecycle.model_dump(mode="json") if lifecycle is not None else None
    output["lifecycle_problem"] = lifecycle_problem
    out.mkdir(parents=True, exist_ok=True)
    if logs is not None:  # before CLIENT_FILE: a client file always has its logs beside it
        (out / FIO_LOGS_FILE).write_bytes(logs)
    (out / CLIENT_FILE).write_text(json.dumps(output, indent=1))
    released = output["client"]["released_ns"]
    console.print(f"  released at {max(released) / 1e9:.3f} (unix s); wrote {out / CLIENT_FILE}")


def _merge_pod_clients(plan, labels, directory: Path):
    """The cell's result from its client pods' outputs; its lifecycle is its slowest client pod's."""
    from pvbench.cells.clients import merge_pod_clients
    from pvbench.fio.runner import FioError
    from pvbench.results.schema import VolumeLifecycle

    files = sorted(directory.rglob(CLIENT_FILE))
    console.print(f"[bold]pvbench[/] {plan.cell.describe()}: merging {len(files)} client output(s) from {directory}")
    try:
        outputs = [json.loads(f.read_text()) for f in files]
        # each client pod's interval logs, beside its CLIENT_FILE
        logs = [
            (f.parent / FIO_LOGS_FILE).read_bytes() if (f.parent / FIO_LOGS_FILE).is_file() else None for f in files
        ]
        doc, raw = merge_pod_clients(plan, labels, outputs, logs)
    except (FioError, ValueError, KeyError) as exc:
        fail(f"{plan.cell.describe()}: {exc}", code=1)
    lifecycles = [VolumeLifecycle.model_validate(o["lifecycle"]) for o in outputs if o.get("lifecycle")]
    problems = sorted({o["lifecycle_problem"] for o in outputs if o.get("lifecycle_problem")})
    # the cell could start only once its last client pod could: that pod's record, whole
    slowest = max(lifecycles, key=lambda lc: (lc.pod_start_s is not None, lc.pod_start_s or 0), default=None)
    return _with_lifecycle(doc, slowest, "; ".join(problems) or None), raw


def _report_cell(doc, raw, out: Path | None, store_obj, spool: Path | None) -> None:
    """Write the result (--out), print its headline numbers, store it (--store). ``raw``: the
    cell's CellRaw (pvbench.cells.publish), its raw files stored beside result.json."""
    from pvbench.cells.publish import publish

    if out:
        out.mkdir(parents=True, exist_ok=True)
        (out / RAW_FIO_FILE).write_text(raw.fio_json)
        if raw.fio_logs is not None:
            (out / FIO_LOGS_FILE).write_bytes(raw.fio_logs)
        (out / RESULT_FILE).write_bytes(doc.to_json())
    for m in doc.metrics:
        console.print(
            f"  {m.direction}: {m.iops:,.0f} IOPS, {m.bw_mib_s:,.1f} MiB/s, "
            f"lat mean {m.lat_mean_us or 0:,.1f} µs, p99 {m.lat_p99_us or 0:,.1f} µs"
        )
    if doc.clients is not None:
        c = doc.clients
        console.print(
            f"  {c.count} clients released together: start skew {c.start_skew_s or 0:.3f} s, all measuring "
            f"{c.overlap_s or 0:.1f} s at once; "
            + ", ".join(f"{m.direction} straggler ratio {m.straggler_ratio or 0:.2f}" for m in doc.metrics)
        )
    if store_obj is not None:
        outcome = publish(doc, raw, store_obj, spool or (out if out else Path("/tmp/pvbench-spool")))
        if not outcome.stored:
            kept = (
                f"kept at {outcome.spooled_at}"
                if outcome.spooled_at
                else (f"only in {out}" if out else "not kept anywhere")
            )
            fail(f"result could not be stored ({outcome.error}); {kept}", code=3)
        console.print(f"  stored {store_obj.url}/{outcome.key}")


@app.command("barrier")
def barrier_serve(
    clients: Annotated[int, typer.Option(min=1, max=64, help="How many client pods the cell has")],
    timeout: Annotated[str, typer.Option(help="Give up (ABORT every client) unless all are ready by then, e.g. 600s")],
    port: Annotated[int, typer.Option(help="TCP port to listen on")] = DEFAULT_BARRIER_PORT,
    linger: Annotated[bool, typer.Option(help="After GO, stay up until stopped (SIGTERM), then exit 0")] = False,
) -> None:
    """Serve one multi-client cell's start barrier: GO to every client pod once all N are ready (pvbench.fio.pod_barrier).

    What the cell's Argo daemon step runs; its pod IP is the clients' --barrier. Exit 0 after GO,
    1 after ABORT (a client left before the start, or not all were ready in time). With --linger
    (an Argo daemon step) it stays up after GO until it is stopped, and exits 0 then."""
    from pvbench.fio.pod_barrier import BarrierServer
    from pvbench.profiles import parse_seconds

    try:
        timeout_s = parse_seconds(timeout)
    except ProfileError as exc:
        fail(str(exc))
    server = BarrierServer(clients, timeout_s, log=lambda line: console.print(line, highlight=False))
    raise typer.Exit(server.run(port=port, linger=linger))
