"""Run one multi-client cell (a test with ``clients`` > 1) in one place: local mode, or one pod.

Client N gets the subdirectory ``pvbench-client-N`` of the cell's target (local mode's stand-in
for "its own volume of the class"), its own fio process and the same job; all are released
together behind a barrier (pvbench.fio.barrier, pvbench.fio.clients). The result document's
``metrics`` are the totals (pvbench.fio.merge), so every summary and comparison reads them as
any cell's; ``clients`` holds each client's own result, the start skew and the overlap; the raw
``fio.json`` holds every client's json+ output (``pvbench.fio.merge.clients_raw``).
"""

from __future__ import annotations

import os
import platform
import socket
from datetime import datetime, timezone

from pvbench import __version__
from pvbench.fio.barrier import Barrier
from pvbench.fio.clients import run_fio_clients
from pvbench.fio.merge import ClientOutput, clients_raw, merge_clients
from pvbench.fio.parse import job_errors
from pvbench.fio.runner import FioError, fio_version
from pvbench.fio.target import client_dir, filesystem_of
from pvbench.profiles import render_jobfile
from pvbench.results.schema import Provenance, ResultDocument, WorkloadSpec


def run_clients_cell(plan, labels: dict[str, str] | None = None) -> tuple[ResultDocument, str]:
    """``run_cell`` for a multi-client test (``plan``: a CellPlan). Returns the document and the raw text."""
    test, timing, cell = plan.test, plan.timing, plan.cell
    n = test.clients
    notes: dict[str, str] = {} if cell.seed is None else {"seed": str(cell.seed)}
    target = plan.target.resolve()
    targets = [client_dir(target, i) for i in range(1, n + 1)]
    for path in targets:
        path.mkdir(exist_ok=True)
    started = datetime.now(timezone.utc)
    with Barrier(timeout_s=plan.fio_timeout_s) as barrier:
        jobfiles = [
            render_jobfile(
                plan.profile, [test], timing, path, overrides={test.name: {"exec_prerun": barrier.prerun(i)}}
            )
            for i, path in enumerate(targets, start=1)
        ]
        runs = run_fio_clients(jobfiles, barrier, jobs_per_client=test.numjobs, timeout_s=plan.fio_timeout_s)
    ended = datetime.now(timezone.utc)
    node = os.environ.get("PVBENCH_NODE_NAME") or os.environ.get("NODE_NAME")
    outputs = [
        ClientOutput(r.client, r.run.output, r.ready_ns, r.released_ns, str(targets[r.client - 1]), node) for r in runs
    ]
    for out in outputs:
        errors = job_errors(out.output)
        if errors:
            raise FioError(f"client {out.client} of {n}: fio reported failed jobs: " + "; ".join(errors))
    metrics, section = merge_clients(outputs, runtime_s=timing.runtime_s)
    if not metrics:
        raise FioError("fio finished but moved no data; no result for this cell")
    idle = [str(c.client) for c in section.per_client if not c.metrics]
    if idle:
        raise FioError(f"client(s) {', '.join(idle)} of {n} moved no data; no result for this cell")
    first = runs[0].run.output
    options = {
        **first.get("global options", {}),
        **{k: v for k, v in first["jobs"][0].get("job options", {}).items() if k != "exec_prerun"},
    }
    workload = WorkloadSpec.asked(test, timing, options, clients=n)
    options["directory"] = str(target)  # the clients' parent; each client's own is in clients.per_client
    notes["clients"] = f"{n} fio clients in {target}/pvbench-client-1..{n}, released together (start skew "
    notes["clients"] += f"{section.start_skew_s:.3f} s)" if section.start_skew_s is not None else "unknown)"
    provenance = Provenance(
        source="fio",
        pvbench_version=__version__,
        fio_version=first.get("fio version") or fio_version(),
        kernel=platform.release(),
        host=socket.gethostname(),
        node=node,
        target_path=str(target),
        filesystem=filesystem_of(target),
        provisioner=os.environ.get("PVBENCH_PROVISIONER") or None,
        kubernetes_version=os.environ.get("PVBENCH_KUBERNETES_VERSION") or None,
        fio_options={k: str(v) for k, v in options.items()},
        started_at=started,
        ended_at=ended,
        cpu_seconds=sum(c.cpu_seconds or 0.0 for c in section.per_client),
        notes=notes,
    )
    doc = ResultDocument(
        identity=cell.identity(labels), workload=workload, provenance=provenance, metrics=metrics, clients=section
    )
    return doc, clients_raw(outputs)
