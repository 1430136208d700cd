"""Adding a run to a large campaign on the real engines: what the `aggregate` step costs there.

pvbench_lab.bench_aggregate times the step's command in a pod-like directory; this times the step as
users of the chart run it, on the node of ci/cluster/up.sh (real Kubernetes, Argo Workflows'
controller and argoexec, the chart installed with helm, MinIO on the pod bridge as in the
cluster tests). It
  1. makes N synthetic earlier runs (pvbench_lab.bench_aggregate's results, 1,000 per run) in a local
     store and compacts them there with `pvbench aggregate` (the runs' compacts, as earlier
     `aggregate` steps would have written them),
  2. puts those compacts into the chart's bucket under the campaign's compact/ prefix,
  3. submits one quick run in that campaign (one cell) and waits for it,
  4. prints, from the `aggregate` pod: argoexec fetching its inputs (the init container: the
     run's results and every earlier run's compact), `pvbench aggregate` (main) and argoexec
     storing its outputs (wait), with the objects fetched; and checks that the campaign's
     tables it wrote hold every run.
A script, not a test: minutes, and a node. Usage (as root):
  ci/cluster/up.sh && .venv/bin/python -m pvbench_lab.bench_argo_step [--runs 100]
"""

from __future__ import annotations

import argparse
import io
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import duckdb

from pvbench.store import LocalStore
from pvbench.store.layout import analytics_prefix, compact_prefix, results_prefix
from pvbench.testing.cluster import (  # the node, the chart and MinIO of the cluster tests
    BUCKET,
    QUICK,
    describe,
    installed_release,
    pod_minio,
    require_kube,
    submit,
    wait_workflow,
)
from pvbench_lab import bench_aggregate  # the synthetic runs


def at(state: dict, which: str) -> datetime:
    """When a container (its terminated state) started or finished; Kubernetes keeps whole seconds."""
    return datetime.fromisoformat(state["terminated"][which].replace("Z", "+00:00"))


def seconds(start: datetime, end: datetime, digits: int = 0) -> str:
    return f"{(end - start).total_seconds():.{digits}f} s"


def logged(kube, pod: str, container: str, starting: str) -> tuple[datetime, datetime]:
    """When argoexec in ``container`` logged ``starting`` first, and its last line: the span of
    its artifact work, to the millisecond (the containers' states keep whole seconds)."""
    lines = kube.run("logs", pod, "-c", container, "--timestamps").stdout.splitlines()
    stamp = lambda line: datetime.fromisoformat(line.split(" ", 1)[0][:26] + "+00:00")  # noqa: E731
    return stamp(next(line for line in lines if starting in line)), stamp(lines[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=100, help="earlier runs of 1,000 results (default 100)")
    args = parser.parse_args()
    campaign = f"scale-{int(time.time())}"
    kube = require_kube()
    installed_release()
    minio = pod_minio()
    client = minio.client()

    with tempfile.TemporaryDirectory(prefix="pvbench-bench-argo-") as tmp:
        work = Path(tmp)
        store = LocalStore(work / "store")
        print(f"{args.runs} earlier runs of {bench_aggregate.PER_RUN:,} results in campaign {campaign} …")
        template = bench_aggregate.template_document(work)
        bench_aggregate.write_runs(store, template, 0, args.runs, campaign=campaign)
        made = subprocess.run(
            [*bench_aggregate.PVBENCH, "aggregate", "--store", str(store.root), "--campaign", campaign],
            capture_output=True,
            text=True,
        )
        assert made.returncode == 0, made.stderr
        keys = list(store.list_keys(compact_prefix(campaign) + "/"))
        with ThreadPoolExecutor(8) as pool:  # the compacts, as earlier aggregate steps stored them
            list(
                pool.map(
                    lambda key: client.put_object(BUCKET, key, io.BytesIO(data := store.get_bytes(key)), len(data)),
                    keys,
                )
            )
    print(f"  {len(keys)} compact objects stored; one quick run in the campaign …")

    name = submit(
        {
            "campaign": campaign,
            "storage-classes": '["pvbench-tmpfs"]',
            "tests": "randread-iops",
            "repetitions": "1",
            **QUICK,
        },
        generate_name="pvbench-scale-",
    )
    wf = wait_workflow(name)
    assert wf["status"]["phase"] == "Succeeded", describe(wf)
    [node] = [n for n in wf["status"]["nodes"].values() if n.get("templateName") == "aggregate" and n["type"] == "Pod"]
    [pod] = [
        p
        for p in kube.items("pod", f"workflows.argoproj.io/workflow={name}")
        if p["metadata"].get("annotations", {}).get("workflows.argoproj.io/node-name") == node["name"]
    ]
    init = {s["name"]: s["state"] for s in pod["status"]["initContainerStatuses"]}["init"]
    states = {s["name"]: s["state"] for s in pod["status"]["containerStatuses"]}
    main, wait = states["main"], states["wait"]
    fetched = len(keys) + len(minio.keys(BUCKET, results_prefix(campaign, name) + "/"))

    tables = f"{analytics_prefix(campaign)}/report_run_summary.parquet"
    with tempfile.NamedTemporaryFile(suffix=".parquet") as f:
        f.write(client.get_object(BUCKET, tables).read())
        f.flush()
        runs = duckdb.sql(f"SELECT count(DISTINCT run) FROM read_parquet('{f.name}')").fetchone()[0]
    assert runs == args.runs + 1, f"the campaign's tables hold {runs} runs, not {args.runs + 1}"

    fetch = logged(kube, pod["metadata"]["name"], "init", "Start loading input artifacts")
    store_outputs = logged(kube, pod["metadata"]["name"], "wait", "Saving output artifacts")
    results = args.runs * bench_aggregate.PER_RUN
    print(
        "\n| earlier runs | results | objects fetched | fetch inputs (argoexec init) | `pvbench aggregate` (main) "
        "| store outputs (argoexec wait) | the step's pod, first container start to last end |"
    )
    print("|---|---|---|---|---|---|---|")
    print(
        f"| {args.runs} | {results:,} | {fetched:,} | {seconds(*fetch, 1)} "
        f"| {seconds(at(main, 'startedAt'), at(main, 'finishedAt'))} | {seconds(*store_outputs, 1)} "
        f"| {seconds(at(init, 'startedAt'), at(wait, 'finishedAt'))} |"
    )
    print("(argoexec's spans from its log lines; the others from the containers' states, in whole seconds)")
    print(f"(workflow {name}; the campaign's tables hold all {runs} runs)")


if __name__ == "__main__":
    main()
