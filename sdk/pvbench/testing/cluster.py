"""The real Kubernetes node (ci/cluster/up.sh): for the tests marked `cluster` and
pvbench_lab.bench_argo_step.

The node runs the real Argo engines, installed as users install them (ci/cluster/up.sh:
upstream namespace-install manifests of Argo Workflows v3.7.18 and Argo Events v1.9.11,
built from the Go module proxy): the workflow-controller and argo-server, argoexec in every
step pod, the Events controller with a JetStream EventBus. The tests install the chart with
helm and drive it as a user would (submit, wait, read MinIO); nothing here stands in for Argo.

Without a node these tests skip, saying so, unless PVBENCH_CLUSTER_REQUIRED=1 (set by
ci/cluster-stage.sh), where a missing node is a failure.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import yaml

from pvbench.testing import REPO
from pvbench.testing.minio import MinioServer, free_port, tool

TEMPLATES = REPO / "templates"
CHART = REPO / "charts" / "pvbench"

K8S_VERSION = "v1.31.4"
# the Argo Workflows the node runs (ci/cluster/lib.sh; ci/cluster-stage.sh's second pass: v3.7.18)
ARGO_WORKFLOWS_VERSION = os.environ.get("PVBENCH_ARGO_WORKFLOWS_VERSION", "v4.0.5")
CACHE = Path(os.environ.get("PVBENCH_CLUSTER_CACHE", "/var/cache/pvbench-cluster"))
STATE = Path(os.environ.get("PVBENCH_CLUSTER_STATE", "/var/lib/pvbench-cluster"))
KUBECONFIG = Path(os.environ.get("PVBENCH_KUBECONFIG", STATE / "kubeconfig"))
KUBECTL = CACHE / "bin" / K8S_VERSION / "kubectl"
NAMESPACE = "pvbench"
RELEASE = "pvbench"
STORAGE_CLASSES = ["pvbench-ext4", "pvbench-xfs", "pvbench-tmpfs"]
MEDIUM = {"pvbench-ext4": "ext4", "pvbench-xfs": "xfs", "pvbench-tmpfs": "tmpfs"}
# A class whose provisioner nobody runs: its PVCs stay Pending forever (the unbindable volume).
UNBINDABLE_CLASS = "pvbench-unbindable"
RUNNER_IMAGE = os.environ.get("PVBENCH_RUNNER_IMAGE", "ghcr.io/pvbench/pvbench-runner:0.1.0")
REPORT_IMAGE = os.environ.get("PVBENCH_REPORT_IMAGE", "ghcr.io/pvbench/pvbench-report:0.1.0")
LABEL_WORKFLOW = "workflows.argoproj.io/workflow"
RUN_TIMEOUT = int(os.environ.get("PVBENCH_CLUSTER_RUN_TIMEOUT", "900"))
# wait_workflow looks at a watched run again at least this often (a watch that missed its change)
WATCH_RECHECK = 60
# Short fio timing keeps a cell near 10 s; the UI's enums are for real runs (Argo does not
# enforce a parameter's enum on submitted workflows, pvbench validate checks the values).
# ci/cluster/up.sh labels each node with its number (NODE_LABEL in ci/cluster/lib.sh)
NODE_LABEL = "pvbench.io/ci-node"
NODE_1 = {"node-label": NODE_LABEL, "node-value": "1"}
QUICK = {"ramp": "1s", "runtime": "3s", "size": "64M", "volume-size": "1Gi", "volume-timeout": "20s"}


def required() -> bool:
    return os.environ.get("PVBENCH_CLUSTER_REQUIRED") == "1"


# ------------------------------------------------------------------ kubectl
class Kube:
    def __init__(self, kubeconfig: Path = KUBECONFIG, kubectl: Path = KUBECTL):
        self.kubeconfig, self.kubectl = kubeconfig, kubectl
        cfg = yaml.safe_load(kubeconfig.read_text())
        self.server = cfg["clusters"][0]["cluster"]["server"]
        self.host = urllib.parse.urlparse(self.server).hostname  # the pod bridge's host address

    def argv(self, *args: str, namespace: str | None = NAMESPACE) -> list[str]:
        """kubectl's command line for ``args``, on this cluster (and ``namespace``)."""
        return [
            str(self.kubectl),
            "--kubeconfig",
            str(self.kubeconfig),
            *(["-n", namespace] if namespace else []),
            *args,
        ]

    def run(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        timeout: int = 120,
        namespace: str | None = NAMESPACE,
    ) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            self.argv(*args, namespace=namespace), input=input, capture_output=True, text=True, timeout=timeout
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
        return proc

    def json(self, *args: str, namespace: str | None = NAMESPACE) -> dict:
        return json.loads(self.run(*args, "-o", "json", namespace=namespace).stdout)

    def watch_phase(self, kind: str, name: str, phases: tuple[str, ...], seconds: float) -> bool:
        """Whether the object's status.phase becomes one of ``phases`` within ``seconds``: a watch
        (kubectl get --watch prints it at once, then at each change of the object), so the wait
        ends when the change is made, not at the next poll."""
        argv = self.argv("get", kind, name, "--watch", "-o", 'jsonpath={.status.phase}{"\\n"}')
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        deadline, pending = time.monotonic() + seconds, b""
        try:  # the pipe read as it comes (a buffered reader could hold a line select never sees)
            while (left := deadline - time.monotonic()) > 0:
                if not select.select([proc.stdout], [], [], left)[0]:
                    return False
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:  # the watch ended (the API server closes watches in time; an error)
                    time.sleep(min(left, 3))  # the caller looks again: not at once, in a loop
                    return False
                *lines, pending = (pending + chunk).split(b"\n")
                if any(line.strip().decode() in phases for line in lines):
                    return True
            return False
        finally:
            proc.kill()
            proc.wait()
            proc.stdout.close()

    def get(self, kind: str, name: str, namespace: str | None = NAMESPACE) -> dict | None:
        proc = self.run("get", kind, name, "-o", "json", "--ignore-not-found", namespace=namespace)
        return json.loads(proc.stdout) if proc.stdout.strip() else None

    def items(self, kind: str, *selectors: str, namespace: str | None = NAMESPACE) -> list[dict]:
        args = ["get", kind] + [a for s in selectors for a in ("-l", s)]
        return self.json(*args, namespace=namespace)["items"]

    def apply(self, *objs: dict) -> subprocess.CompletedProcess:
        """Objects carry their namespace (or are cluster-scoped)."""
        return self.run("apply", "-f", "-", input=_docs(objs), namespace=None)

    def create(self, *objs: dict, check: bool = True) -> subprocess.CompletedProcess:
        return self.run("create", "-f", "-", input=_docs(objs), check=check)

    def delete(self, kind: str, name: str, wait: bool = True, namespace: str | None = NAMESPACE) -> None:
        self.run(
            "delete",
            kind,
            name,
            "--ignore-not-found",
            f"--wait={'true' if wait else 'false'}",
            namespace=namespace,
            timeout=180,
        )


def _docs(objs) -> str:
    return "".join("---\n" + json.dumps(o) + "\n" for o in objs)


@functools.lru_cache(maxsize=1)
def kube_or_none() -> Kube | None:
    if not (KUBECONFIG.is_file() and KUBECTL.is_file()):
        return None
    k = Kube()
    proc = k.run("get", "--raw", "/readyz", check=False, namespace=None, timeout=20)
    return k if proc.returncode == 0 else None


def require_kube() -> Kube:
    k = kube_or_none()
    if k is None:
        msg = (
            f"no Kubernetes node (kubeconfig {KUBECONFIG}, kubectl {KUBECTL}): "
            "run ci/cluster-stage.sh, or ci/cluster/up.sh first"
        )
        if "pytest" not in sys.modules:  # a benchmark (pvbench_lab.bench_argo_step), not a test
            raise SystemExit(msg)
        import pytest

        if required():
            pytest.fail(msg)
        pytest.skip(msg)
    return k


def wait_until(what: str, fn, timeout: float, every: float = 2.0):
    """fn() until it returns something truthy; that value. AssertionError naming `what` on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f} s")
        time.sleep(every)


# ------------------------------------------------------------------ MinIO the pods can reach
@dataclass
class PodMinio(MinioServer):
    """The tests' MinIO (pvbench.testing.minio), listening on the pod bridge's host address instead of loopback."""

    host: str = "127.0.0.1"

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.port}"

    def client(self):
        from minio import Minio

        return Minio(self.endpoint, access_key=self.access_key, secret_key=self.secret_key, secure=False)

    def keys(self, bucket: str, prefix: str) -> list[str]:
        return sorted(o.object_name for o in self.client().list_objects(bucket, prefix=prefix, recursive=True))


@functools.lru_cache(maxsize=1)
def pod_minio() -> PodMinio:
    k = require_kube()
    server = PodMinio(
        Path(tempfile.mkdtemp(prefix="pvbench-cluster-minio-")), port=free_port(), console_port=free_port(), host=k.host
    )
    server.start()

    def stop():
        import shutil

        server.stop()
        shutil.rmtree(server.data_dir, ignore_errors=True)

    atexit.register(stop)
    return server


# ------------------------------------------------------------------ the chart, installed
BUCKET = "pvbench"
S3_SECRET = "pvbench-s3"
# A CSI driver stand-in the chart watches: a DaemonSet whose image the events test changes.
CSI_NAMESPACE = "pvbench-csi"
CSI_DAEMONSET = "csi-fakeplugin"
# The driver of pvbench-qos, which the upgrade test really changes (pvbench.testing.upgrade): its
# runs in a campaign of their own, with write tests, on a node selection of their own: the first
# node, where the driver runs (its own mutex: they queue beside the other tests' runs; the
# benchmark pods' anti-affinity still runs one cell at a time on a node). The Sensor's candidate
# runs and the baselines share these.
QOS_CLASS = "pvbench-qos"
QOS_DAEMONSET = "csi-qosplugin"
QOS_RUNS = {
    **QUICK,
    "campaign": "ci-upgrade",
    "tests": "randwrite-iops,randwrite-lat",
    "repetitions": "2",
    "ramp": "3s",  # the driver limits a new container's cgroup within its ramp, even on a busy node
    # the run's 4 cells in one pod (4 fresh volumes): one pod start a run, not four; every upgrade
    # run alike, so its volume lifecycle figures compare (docs/kubernetes.md, "Cells per pod")
    "cells-per-pod": "4",
    **NODE_1,
    "volume-timeout": "10m",  # a cell may wait for the node while another run's cell holds it
}


def helm(*args: str, check: bool = True, timeout: int = 300) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [tool("helm"), "--kubeconfig", str(KUBECONFIG), *args], capture_output=True, text=True, timeout=timeout
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed:\n{proc.stderr}")
    return proc


KEEP_FLAGGED_IN_CI = "client_cpu"


def chart_values(minio: PodMinio) -> dict:
    """The values of the CI install: occasions and events on, the artifact repository on the pods'
    MinIO, the storage classes of this node, short runs for everything the events start."""
    quick_run = {"tests": "randread-iops", "repetitions": "1", **QUICK}
    return {
        "s3": {"endpoint": minio.endpoint, "insecure": True, "bucket": BUCKET, "region": ""},
        # the UI's defaults must be among its choices (argo-server refuses a template otherwise)
        # The node's classes are on tmpfs and loop devices on 2 CPUs: fio is client-bound on tmpfs, so
        # its client_cpu flag would leave those classes out of every verdict the tests check. Kept,
        # as a user keeps them: the benchmark template's keep-flagged, here for every run.
        "benchmark": {
            "parameters": {"storage-classes": json.dumps(STORAGE_CLASSES[:2]), "keep-flagged": KEEP_FLAGGED_IN_CI}
        },
        "occasions": {
            "enabled": True,
            # no report for the occasions' run: test_cluster_failures proves the CronWorkflow queues
            # and succeeds, and an Evidence build would hold the node ~100 s of CI for nothing
            "parameters": {
                "storage-classes": json.dumps(["pvbench-tmpfs"]),
                "campaign": "ci-occasions",
                "build-report": "false",
                **quick_run,
            },
        },
        "events": {
            "enabled": True,
            "parameters": {"campaign": "ci-events", **quick_run},
            # the events test posts three webhook calls in a row: the default (12 an hour, spaced
            # evenly) would hold the second one for 5 minutes
            "rateLimit": {"unit": "Minute", "requestsPerUnit": 120},
            "csi": {
                "storageClasses": ["pvbench-tmpfs"],
                "workloads": [
                    {"name": "fake-csi", "namespace": CSI_NAMESPACE, "kind": "DaemonSet", "namePrefix": "csi-fake"},
                    {
                        "name": "qos-csi",
                        "namespace": CSI_NAMESPACE,
                        "kind": "DaemonSet",
                        "namePrefix": QOS_DAEMONSET,
                        "storageClasses": [QOS_CLASS],
                        "parameters": QOS_RUNS,
                    },
                ],
            },
        },
    }


@functools.lru_cache(maxsize=1)
def installed_release() -> dict:
    """`helm upgrade --install` of charts/pvbench into the node (once per session), the S3
    Secret it names and the bucket. Returns the artifact repository as the chart configured
    it, helm's output and the values file."""
    k = require_kube()
    minio = pod_minio()
    minio.make_bucket(BUCKET)
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": S3_SECRET, "namespace": NAMESPACE},
        "stringData": {"accesskey": minio.access_key, "secretkey": minio.secret_key},
    }
    csi_ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CSI_NAMESPACE}}
    unbindable = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": UNBINDABLE_CLASS, "labels": {"app.kubernetes.io/part-of": "pvbench-ci"}},
        "provisioner": "pvbench.io/nobody-serves-this",
        "volumeBindingMode": "WaitForFirstConsumer",
    }
    current = k.get("storageclass", UNBINDABLE_CLASS, namespace=None)
    if current and current["provisioner"] != unbindable["provisioner"]:  # fixed by an earlier session
        k.delete("storageclass", UNBINDABLE_CLASS, namespace=None)
    k.apply(secret, csi_ns, unbindable)
    values = Path(tempfile.mkdtemp(prefix="pvbench-values-")) / "values.yaml"
    values.write_text(yaml.safe_dump(chart_values(minio)))
    proc = helm(
        "upgrade",
        "--install",
        RELEASE,
        str(CHART),
        "--namespace",
        NAMESPACE,
        "--wait",
        "--timeout",
        "3m",
        "-f",
        str(values),
    )
    cm = k.json("get", "configmap", "pvbench-artifact-repository")
    repo = yaml.safe_load(cm["data"]["default"])
    return {"artifact_repository": repo, "helm_stdout": proc.stdout, "values": values}


def load_yaml_docs(path_or_text: Path | str) -> list[dict]:
    text = path_or_text.read_text() if isinstance(path_or_text, Path) else path_or_text
    return [d for d in yaml.safe_load_all(text) if d]


def rendered_templates(name: str = "benchmark.yaml") -> list[dict]:
    return load_yaml_docs(TEMPLATES / name)


# ------------------------------------------------------------------ workflows
def argo(*args: str, check: bool = True, timeout: int = 120) -> subprocess.CompletedProcess:
    """The argo CLI (built with the engines), talking to the Kubernetes API as a user's would."""
    proc = subprocess.run(
        [tool("argo"), "--kubeconfig", str(KUBECONFIG), "-n", NAMESPACE, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"argo {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def submit(parameters: dict[str, str], generate_name: str = "pvbench-ci-", labels: dict | None = None) -> str:
    """A Workflow that references the installed WorkflowTemplate, as the Argo UI creates one."""
    k = require_kube()
    installed_release()
    wf = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"generateName": generate_name, "namespace": NAMESPACE, "labels": labels or {}},
        "spec": {
            "workflowTemplateRef": {"name": "pvbench-benchmark"},
            "arguments": {"parameters": [{"name": n, "value": v} for n, v in parameters.items()]},
        },
    }
    out = k.run("create", "-f", "-", "-o", "name", input=json.dumps(wf)).stdout.strip()
    return out.split("/", 1)[1]


def workflow(name: str) -> dict:
    return require_kube().json("get", "workflow", name)


def hold_mutex(mutex: str) -> str:
    """A Workflow of one suspend step (no pod) that takes the namespace's Argo mutex ``mutex`` and
    keeps it until ``argo resume``; its name, once the controller has given it the mutex."""
    k = require_kube()
    wf = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"generateName": "pvbench-holder-", "namespace": NAMESPACE},
        "spec": {
            "entrypoint": "hold",
            "templates": [{"name": "hold", "suspend": {}, "synchronization": {"mutexes": [{"name": mutex}]}}],
        },
    }
    name = k.run("create", "-f", "-", "-o", "name", input=json.dumps(wf)).stdout.strip().split("/", 1)[1]

    wait_until(f"{name} holds mutex {mutex}", lambda: mutex in workflow_mutexes(workflow(name), "holding"), 60)
    return name


def wait_workflow(name: str, timeout: int = RUN_TIMEOUT, phases=("Succeeded", "Failed", "Error")) -> dict:
    """Until the workflow is in one of `phases`; the workflow. Fails with its nodes' messages and,
    for a workflow still waiting for a mutex, who holds and waits for that mutex."""
    deadline = time.monotonic() + timeout
    wf: dict = {}
    while time.monotonic() < deadline:
        wf = workflow(name)
        if wf.get("status", {}).get("phase") in phases:
            return wf
        # watched, not polled: a wait used to end up to 3 s after the run did, on every wait of
        # the cluster stage's critical path; looked at again at least every WATCH_RECHECK seconds
        left = min(deadline - time.monotonic(), WATCH_RECHECK)
        require_kube().watch_phase("workflow", name, tuple(phases), max(left, 0))
    raise AssertionError(
        f"workflow {name} not {'/'.join(phases)} after {timeout}s:\n{describe(wf)}{describe_mutexes(wf)}"
    )


def workflow_mutexes(wf: dict, key: str) -> set[str]:
    """The mutexes (their short names) the workflow's status says it holds (key "holding") or waits
    for ("waiting"), at the workflow's level and at its nodes'."""
    status = wf.get("status") or {}
    mutex = (status.get("synchronization") or {}).get("mutex") or {}
    found = {(h.get("mutex") or "").rsplit("/", 1)[-1] for h in mutex.get(key) or []}
    if key == "waiting":
        found |= {(n.get("synchronizationStatus") or {}).get("waiting", "").rsplit("/", 1)[-1] for n in nodes(wf)}
    return found - {""}


def _ended(wf: dict) -> bool:
    """The controller has finished with the workflow (and released what it held)."""
    return (wf["metadata"].get("labels") or {}).get("workflows.argoproj.io/completed") == "true"


def mutex_users(mutex: str) -> dict[str, list[str]]:
    """Every workflow of the namespace that has not ended and whose status holds or waits for
    ``mutex`` (its short name, e.g. pvbench-node-linux): {"holding": [...], "waiting": [...]}."""
    users: dict[str, list[str]] = {"holding": [], "waiting": []}
    for wf in require_kube().items("workflow"):
        if _ended(wf):
            continue
        for key in users:
            if mutex in workflow_mutexes(wf, key):
                users[key].append(f"{wf['metadata']['name']} ({(wf.get('status') or {}).get('phase') or 'new'})")
    return users


def describe_mutexes(wf: dict) -> str:
    """For each mutex `wf` waits for: the workflows that hold it and wait for it, by their statuses,
    and what the controller last logged of it. (A wait nobody's status explains is the engine's:
    a holder or a wake-up it lost.)"""
    waited = sorted(workflow_mutexes(wf, "waiting"))
    if not waited:
        return ""
    log = require_kube().run("logs", "deploy/workflow-controller", "--tail", "4000", check=False, timeout=60).stdout
    lines = []
    for mutex in waited:
        users = mutex_users(mutex)
        lines.append(f"\n{mutex}: held by {users['holding'] or 'no workflow'}; waited for by {users['waiting']}")
        logged = [line for line in log.splitlines() if mutex in line and "DecodeLockName" not in line]
        lines += ["  controller: " + line[:300] for line in logged[-15:]]
    return "\n".join(lines)


def wait_mutex_free(mutex: str, timeout: float) -> None:
    """Until no workflow that has not ended holds or waits for ``mutex``, by their statuses."""

    def free() -> bool:
        users = mutex_users(mutex)
        return not users["holding"] and not users["waiting"]

    try:
        wait_until(f"{mutex} to be free", free, timeout, every=3)
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {mutex_users(mutex)}") from None


def retire(names: list[str], timeout: int = 180) -> None:
    """Stop runs a test does not want and delete them, in the order that keeps Argo's mutexes whole:
    `argo terminate`, wait until each has ended (the controller releases its node's mutex as it
    completes, or takes it out of the mutex's queue, and wakes the run next in line), then delete.
    Deleted outright, a run the controller is just then handing the mutex to (the next in line as
    the one before it goes) can leave the mutex held by a run that is gone, and the runs queued
    behind it waiting (docs/kubernetes.md, Known behaviour of the engines)."""
    if not names:
        return
    argo("terminate", *names, check=False)  # one that has already ended says so; it is deleted all the same
    k = require_kube()

    def ended() -> bool:
        return all((wf := k.get("workflow", n)) is None or _ended(wf) for n in names)

    wait_until(f"{', '.join(names)} to end after argo terminate", ended, timeout, every=1)
    for n in names:
        k.delete("workflow", n)


def cluster_nodes() -> dict[int, str]:
    """The node names by their numbers (NODE_LABEL, which ci/cluster/up.sh sets): {1: "localhost", ...}."""
    found = require_kube().items("node", NODE_LABEL, namespace=None)
    return {int(n["metadata"]["labels"][NODE_LABEL]): n["metadata"]["name"] for n in found}


def wait_all_runs_ended(timeout: float) -> None:
    """Until every workflow of the namespace has ended. The cluster tests submit runs one module at a
    time (the runs conftest starts up front end too), so after this no other test's cell holds a
    node (the benchmark pods' anti-affinity) until the caller submits its own."""

    def ended() -> bool:
        return all(_ended(wf) for wf in require_kube().items("workflow"))

    try:
        wait_until("every other run to end", ended, timeout, every=3)
    except AssertionError as exc:
        left = [wf["metadata"]["name"] for wf in require_kube().items("workflow") if not _ended(wf)]
        raise AssertionError(f"{exc}: {left}") from None


def nodes(wf: dict) -> list[dict]:
    return list((wf.get("status", {}).get("nodes") or {}).values())


def describe(wf: dict) -> str:
    status = wf.get("status", {})
    lines = [f"{wf.get('metadata', {}).get('name')}: {status.get('phase')} {status.get('message', '')}"]
    for n in sorted(nodes(wf), key=lambda n: n.get("startedAt") or ""):
        lines.append(f"  {n.get('type'):9} {n.get('phase'):9} {n.get('displayName')} {n.get('message', '')}")
    return "\n".join(lines)


def cell_nodes(wf: dict) -> list[dict]:
    """The run's pods that measure: a pod per cell, or (cells-per-pod > 1) several cells a pod."""
    return [
        n for n in nodes(wf) if n.get("templateName") in ("benchmark-cell", "benchmark-pod") and n.get("type") == "Pod"
    ]


def run_pvcs_and_pvs(name: str) -> tuple[list[str], list[str]]:
    """PVCs labelled with the run, and PVs bound (or once bound) to a claim of the run."""
    k = require_kube()
    pvcs = [p["metadata"]["name"] for p in k.items("pvc", f"pvbench.io/workflow={name}")]
    pvs = [
        p["metadata"]["name"]
        for p in k.items("pv", namespace=None)
        if (p["spec"].get("claimRef") or {}).get("name", "").startswith(name)
    ]
    return pvcs, pvs


class WatchedRun:
    """A run submitted now and checked later, every PVC it makes recorded while it runs (they are
    gone once it has finished)."""

    def __init__(self, parameters: dict[str, str], generate_name: str):
        self.name = submit(parameters, generate_name)
        self.pvcs: dict[str, dict] = {}
        self._done = threading.Event()
        self._watcher = threading.Thread(target=self._watch, daemon=True)
        self._watcher.start()

    def _watch(self) -> None:
        k = require_kube()
        while not self._done.is_set():
            try:
                for pvc in k.items("pvc", f"pvbench.io/workflow={self.name}"):
                    self.pvcs[pvc["metadata"]["name"]] = pvc
            except (AssertionError, subprocess.TimeoutExpired):
                pass  # the next look sees it
            self._done.wait(1)

    @functools.cached_property
    def workflow(self) -> dict:
        try:
            return wait_workflow(self.name)
        finally:
            self._done.set()
            self._watcher.join()


# The run test_cluster_run checks, started when the session starts (conftest), so that it runs
# beside the failure scenario instead of after it: it selects the node by its hostname, so it
# queues on its own mutex (pvbench-node-localhost), not on the one the other runs share
# (pvbench-node-linux); on the one node, the benchmark pods' anti-affinity still lets only one
# cell run at a time.
MAIN_RUN_CLASSES = ["pvbench-ext4", "pvbench-tmpfs"]
MAIN_RUN = {
    **QUICK,
    "campaign": "CI-Node",  # upper case on purpose: keys hold its slug
    "occasion": "adhoc",
    "storage-classes": json.dumps(MAIN_RUN_CLASSES),
    "profile": "dbench",
    "tests": "randread-iops",
    "repetitions": "2",
    "seed": "11",
    "volume-size": "2Gi",  # not the template's literal 1Gi: proves the podSpecPatch
    # a cell may wait for the node, unscheduled, while another run's cells hold it (anti-affinity):
    # allow for that wait (the guard fails a pod unscheduled past it), not just QUICK's 20 s
    "volume-timeout": "10m",
    # adaptive: every cell has 2 < 5 values, so round 1 asks for a 3rd; at 3 (the cap) round 2 says done
    "adaptive-target": "0.02",
    "adaptive-max-repetitions": "3",
    "role": "candidate",
    "trigger": "ci",
    "changed": "StorageClass/pvbench-xfs",
    "node-label": "kubernetes.io/hostname",
    "node-value": "localhost",
}


@functools.lru_cache(maxsize=1)
def main_run() -> WatchedRun:
    installed_release()
    return WatchedRun(MAIN_RUN, "pvbench-benchmark-")
