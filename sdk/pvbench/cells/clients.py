"""Run one multi-client cell (a test with ``clients`` > 1): in one place, or as N pods.

In one place (local mode, ``run_clients_cell``): client N gets the subdirectory
``pvbench-client-N`` of the cell's target (local mode's stand-in for "its own volume of the
class"), its own fio process and the same job; all are released together behind a file barrier
(pvbench.fio.barrier, pvbench.fio.clients).

As N pods (Argo, ``run_pod_client`` then ``merge_pod_clients``): each client pod runs the job on
its own volume and waits at its own file barrier, which the cell's TCP barrier
(pvbench.fio.pod_barrier) opens for all pods at once; each pod writes its ``ClientOutput``
(``pvbench.store.layout.CLIENT_FILE``), and the cell's merge step turns the N of them into the one result.

Either way the result document is made by ``clients_document``: its ``metrics`` are the totals
(pvbench.fio.merge), so every summary and comparison reads them as any cell's; ``clients``
holds each client's own result, the start skew and the overlap; the raw ``fio.json`` holds
every client's json+ output (``pvbench.fio.merge.clients_raw``).
"""

from __future__ import annotations

import os
import platform
import socket
from datetime import datetime, timezone
from typing import Callable

from pvbench import __version__
from pvbench.cells import guards
from pvbench.cells.publish import CellRaw
from pvbench.fio.barrier import Barrier
from pvbench.fio.clients import run_fio_clients
from pvbench.fio.merge import ClientOutput, clients_raw, merge_clients
from pvbench.fio.parse import job_errors, steady_state_result
from pvbench.fio.runner import FioError, fio_version
from pvbench.fio.series import cell_series, logs_archive, read_logs_archive
from pvbench.fio.target import client_dir, filesystem_of
from pvbench.profiles import render_jobfile
from pvbench.results.schema import GuardFlag, Provenance, ResultDocument, WorkloadSpec


def run_clients_cell(plan, labels: dict[str, str] | None = None) -> tuple[ResultDocument, CellRaw]:
    """``run_cell`` for a multi-client test (``plan``: a CellPlan), every client here. Returns the document and the raw text."""
    test = plan.test
    n = test.clients
    target = plan.target.resolve()
    targets = [client_dir(target, i) for i in range(1, n + 1)]
    for path in targets:
        path.mkdir(exist_ok=True)
    started = datetime.now(timezone.utc)
    with Barrier(timeout_s=plan.fio_timeout_s) as barrier:
        jobfiles = [_jobfile(plan, path, barrier, i) for i, path in enumerate(targets, start=1)]
        runs = run_fio_clients(jobfiles, barrier, jobs_per_client=test.numjobs, timeout_s=plan.fio_timeout_s)
    ended = datetime.now(timezone.utc)
    outputs = [
        ClientOutput(r.client, r.run.output, r.ready_ns, r.released_ns, str(targets[r.client - 1]), _node())
        for r in runs
    ]
    where = f"{n} fio clients in {target}/pvbench-client-1..{n}"
    filesystem = filesystem_of(target)
    # all n clients' files share this host's page cache
    per_client = {
        r.client: guards.check(
            r.run.output, r.run.job_cpu, _options(r.run.output), [targets[r.client - 1]], filesystem, n
        )
        for r in runs
    }
    return clients_document(
        plan,
        labels,
        outputs,
        started,
        ended,
        str(target),
        filesystem,
        where,
        volumes="shared",
        guard_flags=guards.worst_of_clients(per_client),
        logs=[r.run.logs for r in runs],  # client 1 first
    )


def run_pod_client(plan, number: int, release: Callable[[], None], shared: bool = False) -> tuple[dict, bytes | None]:
    """Client ``number`` of an N-pod cell, in this pod on its own volume (``plan.target``).

    Its fio lays out its files and waits at a local file barrier; ``release`` (the cell's TCP
    barrier) returns once every client pod is ready, and the local barrier opens. Returns what
    ``CLIENT_FILE`` (pvbench.store.layout) holds: its ``ClientOutput`` and its start/end time and filesystem."""
    target = plan.target.resolve()
    started = datetime.now(timezone.utc)
    with Barrier(timeout_s=plan.fio_timeout_s) as barrier:
        jobfile = _jobfile(plan, target, barrier, 1)
        [run] = run_fio_clients(
            [jobfile], barrier, jobs_per_client=plan.test.numjobs, timeout_s=plan.fio_timeout_s, release=release
        )
    ended = datetime.now(timezone.utc)
    output = ClientOutput(number, run.run.output, run.ready_ns, run.released_ns, str(target), _node())
    errors = job_errors(output.output)
    if errors:
        raise FioError(f"client {number} of {plan.test.clients}: fio reported failed jobs: " + "; ".join(errors))
    filesystem = filesystem_of(target)
    # checked here, in the client's pod: the merge step sees neither its CPUs, its memory nor its files
    flags = guards.check(run.run.output, run.run.job_cpu, _options(run.run.output), [target], filesystem)
    summary = {
        "client": output.to_dict(),
        "started_at": started.isoformat(),
        "ended_at": ended.isoformat(),
        "filesystem": filesystem,
        "volumes": "shared" if shared else "own",
        "guards": [f.model_dump(mode="json") for f in flags],
    }
    # its interval logs go beside CLIENT_FILE (FIO_LOGS_FILE); the merge step makes the cell's series of them
    return summary, logs_archive([run.run.logs])


def merge_pod_clients(
    plan, labels: dict[str, str] | None, pod_outputs: list[dict], pod_logs: list[bytes | None] | None = None
) -> tuple[ResultDocument, CellRaw]:
    """The one result of an N-pod cell, from its client pods' client files (any order) and, in the
    same order, their interval logs (``run_pod_client``'s archives; None where a pod has none)."""
    n = plan.test.clients
    outputs = sorted((ClientOutput.from_dict(o["client"]) for o in pod_outputs), key=lambda c: c.client)
    numbers = [o.client for o in outputs]
    if numbers != list(range(1, n + 1)):
        missing = sorted(set(range(1, n + 1)) - set(numbers))
        raise FioError(
            f"{len(outputs)} client outputs for a {n}-client cell (missing: {missing or '-'}, got {numbers}); "
            "no result for this cell"
        )
    started = min(datetime.fromisoformat(o["started_at"]) for o in pod_outputs)
    ended = max(datetime.fromisoformat(o["ended_at"]) for o in pod_outputs)
    filesystems = sorted({o.get("filesystem") for o in pod_outputs if o.get("filesystem")})
    nodes = sorted({o.node for o in outputs if o.node})
    modes = {o.get("volumes") or "own" for o in pod_outputs}
    if len(modes) != 1:
        raise FioError(
            f"the client pods disagree on their volumes ({', '.join(sorted(modes))}); no result for this cell"
        )
    [volumes] = modes
    how = "each on its own volume of the class" if volumes == "own" else "on one shared volume of the class"
    where = f"{n} fio client pods, {how} (node(s): {', '.join(nodes) or 'unknown'})"
    per_client = {
        int(o["client"]["client"]): [GuardFlag.model_validate(f) for f in o.get("guards") or []] for o in pod_outputs
    }
    return clients_document(
        plan,
        labels,
        outputs,
        started,
        ended,
        None,
        ",".join(filesystems) or None,
        where,
        "pods",
        volumes,
        guards.worst_of_clients(per_client),
        logs=_pod_logs(pod_outputs, pod_logs, n),
    )


def _pod_logs(pod_outputs: list[dict], pod_logs: list[bytes | None] | None, n: int) -> list[dict[str, bytes]] | None:
    """Each client's log files, client 1 first, from the pods' archives (paired with their outputs)."""
    if not pod_logs:
        return None
    by_client = {
        int(o["client"]["client"]): (read_logs_archive(data) or [{}])[0] if data else {}
        for o, data in zip(pod_outputs, pod_logs)
    }
    return [by_client.get(number, {}) for number in range(1, n + 1)]


def _node() -> str | None:
    return os.environ.get("PVBENCH_NODE_NAME") or os.environ.get("NODE_NAME")


def _options(output: dict) -> dict:
    """A client's fio options as it ran them (its job file holds one job section)."""
    return {**output.get("global options", {}), **output["jobs"][0].get("job options", {})}


def _jobfile(plan, path, barrier: Barrier, client: int) -> str:
    test = plan.test
    overrides = {test.name: {"exec_prerun": barrier.prerun(client)}}
    return render_jobfile(plan.profile, [test], plan.timing, path, overrides=overrides)


def clients_document(
    plan,
    labels: dict[str, str] | None,
    outputs: list[ClientOutput],
    started: datetime,
    ended: datetime,
    target_path: str | None,
    filesystem: str | None,
    where: str,
    barrier: str = "file",
    volumes: str | None = None,
    guard_flags: list[GuardFlag] | None = None,
    logs: list[dict[str, bytes]] | None = None,
) -> tuple[ResultDocument, CellRaw]:
    """The cell's result document (totals, clients section, provenance, series) and raw files from its
    clients' outputs and (``logs``, client 1 first) their interval logs. The cell's series is the
    clients' series summed interval by interval, aligned by interval index (pvbench.fio.series)."""
    test, timing, cell = plan.test, plan.timing, plan.cell
    n = test.clients
    notes: dict[str, str] = {} if cell.seed is None else {"seed": str(cell.seed)}
    for out in outputs:
        errors = job_errors(out.output)
        if errors:
            raise FioError(f"client {out.client} of {n}: fio reported failed jobs: " + "; ".join(errors))
    metrics, section = merge_clients(outputs, runtime_s=timing.runtime_s, barrier=barrier, volumes=volumes)
    if not metrics:
        raise FioError("fio finished but moved no data; no result for this cell")
    idle = [str(c.client) for c in section.per_client if not c.metrics]
    if idle:
        raise FioError(f"client(s) {', '.join(idle)} of {n} moved no data; no result for this cell")
    first = outputs[0].output
    options = {
        **first.get("global options", {}),
        **{k: v for k, v in first["jobs"][0].get("job options", {}).items() if k != "exec_prerun"},
    }
    workload = WorkloadSpec.asked(test, timing, options, clients=n)
    if target_path is not None:
        options["directory"] = target_path  # the clients' parent; each client's own is in clients.per_client
    skew = f"{section.start_skew_s:.3f} s" if section.start_skew_s is not None else "unknown"
    notes["clients"] = f"{where}, released together (start skew {skew})"
    provenance = Provenance(
        source="fio",
        pvbench_version=__version__,
        fio_version=first.get("fio version") or fio_version(),
        kernel=platform.release(),
        host=socket.gethostname(),
        node=outputs[0].node,
        target_path=target_path or outputs[0].target_path,
        filesystem=filesystem,
        provisioner=os.environ.get("PVBENCH_PROVISIONER") or None,
        kubernetes_version=os.environ.get("PVBENCH_KUBERNETES_VERSION") or None,
        fio_options={k: str(v) for k, v in options.items()},
        started_at=started,
        ended_at=ended,
        cpu_seconds=sum(c.cpu_seconds or 0.0 for c in section.per_client),
        notes=notes,
    )
    doc = ResultDocument(
        identity=cell.identity(labels),
        workload=workload,
        provenance=provenance,
        metrics=metrics,
        clients=section,
        guards=guard_flags or [],
    )
    doc.series = cell_series(logs) if logs else None
    doc.steady_state = steady_state_result([out.output for out in outputs], test.steady_state, max_s=timing.runtime_s)
    return doc, CellRaw(clients_raw(outputs, barrier, volumes), logs_archive(logs) if logs else None)
