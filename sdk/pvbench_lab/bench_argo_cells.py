"""Cells at fio speed on Argo: a dbench run's wall time against its fio time, side by side.

On the node of ci/cluster/up.sh (real Kubernetes, Argo Workflows' controller and argoexec, the chart
installed with helm), for each controller setting (Argo's default DEFAULT_REQUEUE_TIME, 10 s, and
the CI overlay's 1 s) and each cells-per-pod (1: a pod per cell; K: K cells to a pod, each on its
own fresh volume), it submits the same dbench run (17-s cells: ramp 2 s + 15 s measured) and
prints, from the workflow's nodes:
  - cells: from the first cell's node starting (its pod made; the volumes' provisioning inside)
    to the last cell's node ending, against the cells' fio time (ramp + runtime, summed);
  - run: the whole workflow up to its exit handler (validate, expand, the cells).
The controller's setting is changed with `kubectl set env` and put back as it was at the end.
A script, not a test: ~15 minutes, and a node. Usage (as root):
  ci/cluster/up.sh && .venv/bin/python -m pvbench_lab.bench_argo_cells [--cells-per-pod 9]
"""

from __future__ import annotations

import argparse
from datetime import datetime

from pvbench.cells.matrix import parse_pod_cells
from pvbench.testing.cluster import NAMESPACE, describe, nodes, require_kube, submit, wait_workflow

CONTROLLER = "deployment/workflow-controller"
REQUEUE_ENV = "DEFAULT_REQUEUE_TIME"
DEFAULT = "default"  # Argo's own (10 s): the variable unset
CELL_TEMPLATES = ("benchmark-cell", "benchmark-pod")


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def requeue_setting(kube) -> str:
    env = kube.json("get", CONTROLLER)["spec"]["template"]["spec"]["containers"][0].get("env") or []
    return next((e["value"] for e in env if e["name"] == REQUEUE_ENV), DEFAULT)


def set_requeue(kube, value: str) -> None:
    if requeue_setting(kube) == value:
        return
    kube.run("set", "env", CONTROLLER, f"{REQUEUE_ENV}-" if value == DEFAULT else f"{REQUEUE_ENV}={value}")
    kube.run("rollout", "status", CONTROLLER, "--timeout", "180s", timeout=200)


def timing(wf: dict, fio_s_per_cell: float) -> dict:
    """From a finished run: its cell pods, cells, fio time, the cells' wall time and the run's."""
    cells = [n for n in nodes(wf) if n.get("templateName") in CELL_TEMPLATES and n.get("type") == "Pod"]
    start, end = min(_time(n["startedAt"]) for n in cells), max(_time(n["finishedAt"]) for n in cells)
    n_cells = sum(
        len(parse_pod_cells(n["inputs"]["parameters"][0]["value"])) if n["templateName"] == "benchmark-pod" else 1
        for n in cells
    )
    return {
        "pods": len(cells),
        "cells": n_cells,
        "fio_s": n_cells * fio_s_per_cell,
        "cells_s": (end - start).total_seconds(),
        "run_s": (end - _time(wf["status"]["startedAt"])).total_seconds(),
    }


def measure(parameters: dict[str, str], fio_s_per_cell: float) -> dict:
    name = submit(parameters, generate_name="pvbench-bench-cells-")
    wf = wait_workflow(name, timeout=3600)
    if wf["status"]["phase"] != "Succeeded":
        raise SystemExit(f"{name} did not succeed:\n{describe(wf)}")
    return {"workflow": name, **timing(wf, fio_s_per_cell)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--storage-class", default="pvbench-ext4")
    parser.add_argument("--repetitions", default="1")
    parser.add_argument("--cells-per-pod", default="9", help="K, measured beside 1")
    parser.add_argument("--requeue", default=f"{DEFAULT},1s", help="controller settings, comma-separated")
    parser.add_argument("--size", default="256M", help="fio file size (dbench's own 2G x 4 jobs overfills the node)")
    args = parser.parse_args()
    kube = require_kube()
    ramp_s, runtime_s = 2.0, 15.0  # dbench's own timing
    base = {
        "storage-classes": f'["{args.storage_class}"]',
        "profile": "dbench",
        "repetitions": args.repetitions,
        "size": args.size,
        "volume-size": "2Gi",
        "campaign": "bench-argo-cells",
        "build-report": "false",
    }
    was = requeue_setting(kube)
    rows = []
    try:
        for requeue in args.requeue.split(","):
            set_requeue(kube, requeue)
            for k in ("1", args.cells_per_pod):
                row = measure({**base, "cells-per-pod": k}, ramp_s + runtime_s)
                rows.append({"requeue": requeue, "k": k, **row})
                print(f"  {requeue} / cells-per-pod {k}: {row}", flush=True)
    finally:
        set_requeue(kube, was)
    print(f"\ndbench, {args.storage_class}, 17-s cells (ramp 2 s + 15 s), size {args.size}; namespace {NAMESPACE}")
    print("| controller requeue | cells per pod | pods | cells | fio time | cells' wall time | × fio | run | × fio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {'10 s (Argo default)' if r['requeue'] == DEFAULT else r['requeue']} | {r['k']} | {r['pods']} | "
            f"{r['cells']} | {r['fio_s']:.0f} s | {r['cells_s']:.0f} s | **{r['cells_s'] / r['fio_s']:.2f}** | "
            f"{r['run_s']:.0f} s | {r['run_s'] / r['fio_s']:.2f} |"
        )


if __name__ == "__main__":
    main()
