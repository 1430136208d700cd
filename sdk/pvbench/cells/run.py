"""Run one cell: checks, fio, metrics, provenance → a ResultDocument.

This is what the Argo step pod runs (via ``pvbench fio-step``) and what local mode runs
for each cell, so a number from a cluster and one from a laptop come from the same code.
"""

from __future__ import annotations

import os
import platform
import socket
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from pvbench import __version__
from pvbench.cells import guards
from pvbench.cells.cell import Cell
from pvbench.cells.publish import CellRaw
from pvbench.cells.slo import describe as describe_slo
from pvbench.cells.slo import rate_options, slo_fio_seconds, slo_probe_timing, slo_run_timing
from pvbench.cells.slo import search as search_slo
from pvbench.cells.volume import check_block_device, check_test_fits_shape, writes_data
from pvbench.fio.parse import cpu_seconds, direction_metrics, job_errors, steady_state_result
from pvbench.fio.runner import FioError, FioRun, fio_version, run_fio
from pvbench.fio.series import cell_series, logs_archive
from pvbench.fio.target import check_target, filesystem_of
from pvbench.profiles import (
    FioTest,
    Profile,
    ProfileError,
    Timing,
    load_profile,
    render_jobfile,
    resolve_timing,
)
from pvbench.results.schema import LatencySloResult, Provenance, ResultDocument, WorkloadSpec
from pvbench.results.volume import BLOCK

# Depth/jobs ladder tried by the sweep's "80% of max" search, lightest first.
LOAD_LADDER = ((1, 1), (2, 1), (4, 1), (8, 1), (16, 1), (4, 4), (8, 4), (32, 1))
# A cell's deadline allows fio to lay out its files at this write rate at least (fio writes
# them before the ramp), so a slow but working volume is never cut off by the deadline.
LAYOUT_FLOOR_BYTES_S = 10 * 2**20
# Container start, fio's start-up and the result's upload, beyond fio's own time.
CELL_OVERHEAD_S = 60


def max_jobs(test: FioTest, one_client: bool = False) -> int:
    """Most fio jobs (each with its own file) the test may run: the load search tries up to 32;
    a multi-client test runs its jobs once per client (``one_client``: those of one client, what
    one client pod's own volume holds)."""
    return max(test.numjobs, 32 if test.load_target else 1) * (1 if one_client else test.clients)


def probe_timing(timing: Timing) -> Timing:
    """The short runs of the 80%-of-max search: a fifth of the runtime, at most 5 s."""
    return Timing(ramp_s=min(timing.ramp_s, 1.0), runtime_s=max(0.5, min(5.0, timing.runtime_s / 5)), size=timing.size)


@dataclass(frozen=True)
class TimingOverrides:
    ramp: str | None = None
    runtime: str | None = None
    size: str | None = None


@dataclass
class CellPlan:
    """A cell with its profile, test and timing resolved and checked — ready for fio."""

    cell: Cell
    profile: Profile
    test: FioTest
    timing: Timing
    target: Path  # a directory, or a Block cell's device
    scratch: bool = False  # a Block cell's device may be overwritten (pvbench.cells.volume)

    @property
    def block(self) -> bool:
        """fio runs on the raw device ``target`` (a Block volume)."""
        return self.cell.volume_mode == BLOCK

    @property
    def fio_timeout_s(self) -> float:
        # Generous: layout of a large file on slow storage comes before the ramp.
        return 3 * (self.timing.ramp_s + self.timing.runtime_s) + 300

    @property
    def fio_seconds(self) -> float:
        """fio's own time for this cell: ramp + runtime, plus every probe of a load search
        (a latency search: every probe and both full-length runs it may make)."""
        if self.test.slo:
            return slo_fio_seconds(self.timing)
        seconds = self.timing.ramp_s + self.timing.runtime_s
        if self.test.load_target:
            probe = probe_timing(self.timing)
            seconds += (1 + len(LOAD_LADDER)) * (probe.ramp_s + probe.runtime_s)
        return seconds

    def deadline_s(self, volume_wait_s: float) -> float:
        """How long the cell may take in all, from its pod's creation: waiting for the volume,
        twice fio's own time, laying out its files at a slow disk's speed, and start-up."""
        layout = self.timing.size_bytes * max_jobs(self.test) / LAYOUT_FLOOR_BYTES_S
        return volume_wait_s + 2 * self.fio_seconds + layout + CELL_OVERHEAD_S


def check_size_holds_a_block(profile: Profile, test: FioTest, timing: Timing) -> None:
    """fio refuses a file smaller than one block ("size too small, must not be less than minimum
    block size"): a size of 10 (bytes, fio-style) or 64k for a 128k test failed every cell of the
    run, after the volumes were made. Said before anything runs instead."""
    if timing.size_bytes < test.bs_bytes:
        raise ProfileError(
            f"{profile.name}/{test.name}: size {timing.size_bytes:,} bytes is smaller than one block of the test "
            f"(bs {test.bs}); fio needs a file of at least one block: use a larger size, e.g. 1G"
        )


def plan_cell(
    cell: Cell,
    target: Path,
    overrides: TimingOverrides = TimingOverrides(),
    check: bool = True,
    one_client: bool = False,
    scratch: bool = False,
) -> CellPlan:
    """Resolve and check everything about a cell; raises ProfileError before any I/O if wrong.
    ``one_client``: the target is one client pod's own volume (only its jobs' files must fit).
    A Block cell's ``target`` is its device; ``scratch``: the device may be overwritten (a fresh
    volume made for the cell, or a device the user marked so)."""
    profile = load_profile(cell.profile_spec)
    test = profile.test(cell.workload)
    timing = resolve_timing(profile, overrides.ramp, overrides.runtime, overrides.size)
    check_size_holds_a_block(profile, test, timing)
    check_test_fits_shape(test, cell.volume_mode, cell.access_mode)
    if check and cell.volume_mode == BLOCK:
        # each job its own size bytes of the device (offset_increment); the load search tries up to 32
        check_block_device(target, timing.size_bytes * max_jobs(test), writes_data(test), scratch)
    elif check:
        check_target(target, timing.size_bytes, max_jobs(test, one_client))
    return CellPlan(cell, profile, test, timing, target, scratch)


def _total_iops(run: FioRun) -> float:
    return sum(m.iops or 0.0 for m in direction_metrics(run.output))


def _find_load(plan: CellPlan) -> tuple[dict[str, str], str]:
    """Sweep's 80%-of-max load level, found by measurement on this very storage.

    Probe QD32 for the maximum, then walk the ladder until IOPS reach the target share.
    Probes are short (a fifth of the runtime, at most 5 s); the chosen setting is then
    measured with the full timing.
    """
    test, timing = plan.test, plan.timing
    probe = probe_timing(timing)

    def measure(depth: int, jobs: int) -> float:
        jobfile = render_jobfile(
            plan.profile,
            [test],
            probe,
            plan.target,
            overrides={test.name: {"iodepth": str(depth), "numjobs": str(jobs)}},
            block=plan.block,
        )
        return _total_iops(run_fio(jobfile, plan.fio_timeout_s))

    maximum = measure(32, 1)
    goal = maximum * (test.load_target or 0.8)
    tried = [f"qd32x1={maximum:.0f}"]
    chosen = (32, 1)
    for depth, jobs in LOAD_LADDER:
        iops = measure(depth, jobs)
        tried.append(f"qd{depth}x{jobs}={iops:.0f}")
        if iops >= goal:
            chosen = (depth, jobs)
            break
    note = f"target {goal:.0f} IOPS ({test.load_target:.0%} of QD32 max {maximum:.0f}); tried " + ", ".join(tried)
    return {"iodepth": str(chosen[0]), "numjobs": str(chosen[1])}, note


def _search_slo(plan: CellPlan) -> tuple[LatencySloResult, FioRun]:
    """Latency-bounded IOPS (cells/slo.py): short rate-limited probes, then full-length runs; the
    last full-length run is the cell's measurement."""
    test = plan.test
    runs: list[FioRun] = []

    def run(rate: float | None, full: bool) -> tuple[dict, str]:
        timing = slo_run_timing(plan.timing) if full else slo_probe_timing(plan.timing)
        options = {test.name: rate_options(test, rate)}
        fio = run_fio(
            render_jobfile(plan.profile, [test], timing, plan.target, overrides=options, block=plan.block),
            plan.fio_timeout_s,
        )
        errors = job_errors(fio.output)
        if errors:
            raise FioError("fio reported failed jobs: " + "; ".join(errors))
        if full:
            runs.append(fio)
        return fio.output, fio.raw_text

    result, _ = search_slo(test, plan.timing, run)
    return result, runs[-1]


def run_cell(plan: CellPlan, labels: dict[str, str] | None = None) -> tuple[ResultDocument, CellRaw]:
    """Run fio for one planned cell. Returns the result document (with its series and steady-state
    verdict, from fio's own logs and json) and its raw files: fio's JSON text and interval logs."""
    if plan.test.clients > 1:  # N fio clients behind a barrier, merged into one result
        from pvbench.cells.clients import run_clients_cell

        return run_clients_cell(plan, labels)
    test, timing, cell = plan.test, plan.timing, plan.cell
    notes: dict[str, str] = {} if cell.seed is None else {"seed": str(cell.seed)}
    overrides: dict[str, dict[str, str]] = {}
    slo: LatencySloResult | None = None
    started = datetime.now(timezone.utc)
    if test.slo:
        slo, run = _search_slo(plan)
        notes["latency_slo"] = describe_slo(slo)
    else:
        if test.load_target:
            chosen, notes["load_search"] = _find_load(plan)
            overrides[test.name] = chosen
        jobfile = render_jobfile(plan.profile, [test], timing, plan.target, overrides=overrides, block=plan.block)
        run = run_fio(jobfile, plan.fio_timeout_s)
    ended = datetime.now(timezone.utc)
    errors = job_errors(run.output)
    if errors:
        raise FioError("fio reported failed jobs: " + "; ".join(errors))
    metrics = direction_metrics(run.output)
    if not metrics:
        raise FioError("fio finished but moved no data; no result for this cell")
    options = {**run.output.get("global options", {}), **run.output["jobs"][0].get("job options", {})}
    identity = cell.identity(labels)
    workload = WorkloadSpec.asked(test, timing, options)
    provenance = Provenance(
        source="fio",
        pvbench_version=__version__,
        fio_version=run.output.get("fio version") or fio_version(),
        kernel=platform.release(),
        host=socket.gethostname(),
        node=os.environ.get("PVBENCH_NODE_NAME") or os.environ.get("NODE_NAME"),
        target_path=str(plan.target),
        filesystem=None if plan.block else filesystem_of(plan.target),
        provisioner=os.environ.get("PVBENCH_PROVISIONER") or None,
        kubernetes_version=os.environ.get("PVBENCH_KUBERNETES_VERSION") or None,
        fio_options={k: str(v) for k, v in options.items()},
        started_at=started,
        ended_at=ended,
        cpu_seconds=cpu_seconds(run.output),
        notes=notes,
    )
    # fio's files are still in the target here (the caller cleans it up after)
    flags = guards.check(run.output, run.job_cpu, options, [plan.target], provenance.filesystem)
    doc = ResultDocument(
        identity=identity, workload=workload, provenance=provenance, metrics=metrics, latency_slo=slo, guards=flags
    )
    doc.series = cell_series([run.logs])
    doc.steady_state = steady_state_result([run.output], test.steady_state, max_s=timing.runtime_s)
    return doc, CellRaw(run.raw_text, logs_archive([run.logs]))
