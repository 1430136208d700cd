"""Helpers for the tests on the real Kubernetes node (ci/cluster/up.sh, marker `cluster`).

What Argo's controller would do around a step is done here the way its code does it
(workflow/controller/workflowpod.go with the emissary executor): the step pod gets the
template's container as `main` (command prefixed by the emissary), an `init` container that
fetches the input artifacts and a `wait` container that uploads the output artifacts and
reports the outputs as a WorkflowTaskResult under the workflow's ServiceAccount, the
template's volumes (the per-cell PVC as a generic ephemeral volume), security context,
node selector, affinity and metadata. The executor containers run ci/cluster/argoexec.py
in the runner image. The node has no kube-proxy: pods reach the API server and MinIO on
the pod bridge's host address (the API server's and MinIO's listen address).

Without a node these tests skip, saying so, unless PVBENCH_CLUSTER_REQUIRED=1 (set by
ci/cluster-stage.sh), where a missing node is a failure.
"""

from __future__ import annotations

import atexit
import copy
import functools
import hashlib
import json
import os
import subprocess
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from argo_helpers import CHART, TEMPLATES, load_yaml_docs, substitute_all
from conftest import MinioServer, free_port, tool

REPO = Path(__file__).resolve().parents[2]
CLUSTER_DIR = REPO / "ci" / "cluster"
K8S_VERSION = "v1.31.4"
CACHE = Path(os.environ.get("PVBENCH_CLUSTER_CACHE", "/var/cache/pvbench-cluster"))
STATE = Path(os.environ.get("PVBENCH_CLUSTER_STATE", "/var/lib/pvbench-cluster"))
KUBECONFIG = Path(os.environ.get("PVBENCH_KUBECONFIG", STATE / "kubeconfig"))
KUBECTL = CACHE / "bin" / K8S_VERSION / "kubectl"
NAMESPACE = "pvbench"
RELEASE = "pvbench"
STORAGE_CLASSES = ["pvbench-ext4", "pvbench-xfs", "pvbench-tmpfs"]
MEDIUM = {"pvbench-ext4": "ext4", "pvbench-xfs": "xfs", "pvbench-tmpfs": "tmpfs"}
RUNNER_IMAGE = os.environ.get("PVBENCH_RUNNER_IMAGE", "ghcr.io/pvbench/pvbench-runner:0.1.0")
REPORT_IMAGE = os.environ.get("PVBENCH_REPORT_IMAGE", "ghcr.io/pvbench/pvbench-report:0.1.0")
EXECUTOR_IMAGE = RUNNER_IMAGE  # plays argoexec: python3 + minio
ARGOEXEC_CONFIGMAP = "pvbench-ci-argoexec"
ARGO_LABEL_WORKFLOW = "workflows.argoproj.io/workflow"
POD_TIMEOUT = int(os.environ.get("PVBENCH_CLUSTER_POD_TIMEOUT", "420"))


def required() -> bool:
    return os.environ.get("PVBENCH_CLUSTER_REQUIRED") == "1"


# ------------------------------------------------------------------ kubectl
class Kube:
    def __init__(self, kubeconfig: Path = KUBECONFIG, kubectl: Path = KUBECTL):
        self.kubeconfig, self.kubectl = kubeconfig, kubectl
        cfg = yaml.safe_load(kubeconfig.read_text())
        self.server = cfg["clusters"][0]["cluster"]["server"]
        self.host = urllib.parse.urlparse(self.server).hostname  # the pod bridge's host address

    def run(self, *args: str, input: str | None = None, check: bool = True, timeout: int = 120,
            namespace: str | None = NAMESPACE) -> subprocess.CompletedProcess:
        argv = [str(self.kubectl), "--kubeconfig", str(self.kubeconfig)]
        if namespace:
            argv += ["-n", namespace]
        proc = subprocess.run(argv + list(args), input=input, capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
        return proc

    def json(self, *args: str, namespace: str | None = NAMESPACE) -> dict:
        return json.loads(self.run(*args, "-o", "json", namespace=namespace).stdout)

    def get(self, kind: str, name: str, namespace: str | None = NAMESPACE) -> dict | None:
        proc = self.run("get", kind, name, "-o", "json", "--ignore-not-found", namespace=namespace)
        return json.loads(proc.stdout) if proc.stdout.strip() else None

    def apply(self, *objs: dict, strict: bool = True) -> subprocess.CompletedProcess:
        return self.run("apply", f"--validate={'strict' if strict else 'false'}", "-f", "-", input=_docs(objs))

    def create(self, *objs: dict, dry_run: bool = False, check: bool = True) -> subprocess.CompletedProcess:
        """Create with server-side strict field validation: unknown fields are errors."""
        args = ["create", "--validate=strict", "-f", "-"] + (["--dry-run=server"] if dry_run else [])
        return self.run(*args, input=_docs(objs), check=check)

    def delete(self, kind: str, name: str, wait: bool = True, namespace: str | None = NAMESPACE) -> None:
        self.run("delete", kind, name, "--ignore-not-found", f"--wait={'true' if wait else 'false'}",
                 namespace=namespace, timeout=180)

    def logs(self, pod: str, container: str) -> str:
        return self.run("logs", pod, "-c", container, check=False).stdout

    def wait_pod(self, name: str, timeout: int = POD_TIMEOUT) -> dict:
        """Until the pod has Succeeded or Failed; a pod stuck Pending is a failure with its events."""
        deadline = time.monotonic() + timeout
        pod = {}
        while time.monotonic() < deadline:
            pod = self.json("get", "pod", name)
            if pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
                return pod
            time.sleep(1)
        events = self.run("get", "events", "--field-selector", f"involvedObject.name={name}", check=False).stdout
        raise AssertionError(f"pod {name} not finished after {timeout}s: phase "
                             f"{pod.get('status', {}).get('phase')}\n{events}")


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
        msg = (f"no Kubernetes node (kubeconfig {KUBECONFIG}, kubectl {KUBECTL}): "
               "run ci/cluster-stage.sh, or ci/cluster/up.sh first")
        if required():
            pytest.fail(msg)
        pytest.skip(msg)
    return k


# ------------------------------------------------------------------ MinIO the pods can reach
@dataclass
class PodMinio(MinioServer):
    """conftest's MinIO, listening on the pod bridge's host address instead of loopback."""

    host: str = "127.0.0.1"

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.port}"

    def client(self):
        from minio import Minio

        return Minio(self.endpoint, access_key=self.access_key, secret_key=self.secret_key, secure=False)


@functools.lru_cache(maxsize=1)
def pod_minio() -> PodMinio:
    import tempfile

    k = require_kube()
    server = PodMinio(Path(tempfile.mkdtemp(prefix="pvbench-cluster-minio-")), port=free_port(),
                      console_port=free_port(), host=k.host)
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


def helm(*args: str, check: bool = True, timeout: int = 300) -> subprocess.CompletedProcess:
    proc = subprocess.run([tool("helm"), "--kubeconfig", str(KUBECONFIG), *args], capture_output=True, text=True,
                          timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed:\n{proc.stderr}")
    return proc


def chart_values(minio: PodMinio) -> list[str]:
    """The values of the CI install: every optional part on (the chart's ci/all-on-values.yaml),
    the artifact repository pointed at the pods' MinIO, the storage classes of this node."""
    return ["-f", str(CHART / "ci" / "all-on-values.yaml"),
            "--set", f"s3.endpoint={minio.endpoint}", "--set", "s3.insecure=true", "--set", f"s3.bucket={BUCKET}",
            "--set", "s3.region=", "--set-json", f"benchmark.parameters={json.dumps({'storage-classes': json.dumps(STORAGE_CLASSES), 'repetitions': '1'})}",
            "--set-json", f"events.csi.storageClasses={json.dumps(STORAGE_CLASSES)}"]


@functools.lru_cache(maxsize=1)
def installed_release() -> dict:
    """`helm upgrade --install` of charts/pvbench into the node (once per session), the S3
    Secret it names, the bucket, and the executor stand-in's ConfigMap. Returns the
    artifact repository as the chart configured it."""
    k = require_kube()
    minio = pod_minio()
    minio.make_bucket(BUCKET)
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": S3_SECRET, "namespace": NAMESPACE},
              "stringData": {"accesskey": minio.access_key, "secretkey": minio.secret_key}}
    webhook = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "pvbench-webhook", "namespace": NAMESPACE},
               "stringData": {"token": "ci-token"}}
    argoexec = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": ARGOEXEC_CONFIGMAP, "namespace": NAMESPACE},
                "data": {"argoexec.py": (CLUSTER_DIR / "argoexec.py").read_text()}}
    # all-on-values watches CSI workloads in rook-ceph too: the chart's RBAC goes there
    rook = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "rook-ceph"}}
    k.apply(secret, webhook, argoexec, rook)
    proc = helm("upgrade", "--install", RELEASE, str(CHART), "--namespace", NAMESPACE, "--wait", "--timeout", "2m",
                *chart_values(minio))
    cm = k.json("get", "configmap", "pvbench-artifact-repository")
    repo = yaml.safe_load(cm["data"]["default"])
    return {"artifact_repository": repo, "helm_stdout": proc.stdout}


def installed_workflow_template() -> dict:
    """The WorkflowTemplate as the API server stores it (after the CRD's pruning): what a
    controller would read."""
    installed_release()
    return require_kube().json("get", "workflowtemplate", "pvbench-benchmark")


def rendered_templates(name: str = "benchmark.yaml") -> list[dict]:
    return load_yaml_docs(TEMPLATES / name)


# ------------------------------------------------------------------ step pods as Argo makes them
def _dns(name: str, limit: int = 63) -> str:
    name = "".join(c if c.isalnum() or c == "-" else "-" for c in name.lower()).strip("-")
    if len(name) <= limit:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:8]
    return name[: limit - 9].rstrip("-") + "-" + digest


@dataclass
class StepResult:
    name: str
    pod: dict
    logs: dict[str, str]
    task_result: dict | None

    @property
    def phase(self) -> str:
        return self.pod["status"]["phase"]

    @property
    def outputs(self) -> dict:
        return (self.task_result or {}).get("outputs") or {}

    def container_status(self, container: str) -> dict:
        statuses = (self.pod["status"].get("containerStatuses") or []) + \
            (self.pod["status"].get("initContainerStatuses") or [])
        for s in statuses:
            if s["name"] == container:
                return s
        return {}

    def exit_code(self, container: str) -> int | None:
        term = self.container_status(container).get("state", {}).get("terminated")
        return None if term is None else term.get("exitCode")

    def describe(self) -> str:
        parts = [f"pod {self.name}: {self.phase}"]
        for c, text in self.logs.items():
            parts.append(f"--- {c} (exit {self.exit_code(c)}):\n{text[-3000:]}")
        return "\n".join(parts)


@dataclass
class StepPod:
    """One step pod of a workflow, built from the (substituted) template like Argo's controller."""

    wt: dict                              # the WorkflowTemplate
    template: dict                        # one of its templates, parameters substituted
    run: str                              # the workflow's name
    artifact_repository: dict
    input_keys: dict[str, str] = field(default_factory=dict)   # artifacts passed with `from:`
    service_account: str | None = None    # override (RBAC tests)
    security_context: dict | None = None  # override (fsGroup tests); None = the template's / workflow's
    suffix: str = ""

    @property
    def name(self) -> str:
        h = hashlib.sha1(json.dumps([self.template, self.suffix, time.time_ns()], sort_keys=True,
                                    default=str).encode()).hexdigest()[:6]
        return _dns(f"{self.run}-{self.template['name']}-{h}")

    def resolved_template(self) -> dict:
        tmpl = copy.deepcopy(self.template)
        for art in (tmpl.get("inputs") or {}).get("artifacts") or []:
            if art["name"] in self.input_keys:
                art["s3"] = {"key": self.input_keys[art["name"]]}
        return tmpl

    def executor_env(self, pod_name: str) -> list[dict]:
        s3 = self.artifact_repository["s3"]
        secret = lambda ref: {"secretKeyRef": {"name": ref["name"], "key": ref["key"]}}  # noqa: E731
        return [
            {"name": "ARGO_TEMPLATE", "value": json.dumps(self.resolved_template())},
            {"name": "ARGO_ARTIFACT_REPOSITORY", "value": json.dumps(self.artifact_repository)},
            {"name": "AWS_ACCESS_KEY_ID", "valueFrom": secret(s3["accessKeySecret"])},
            {"name": "AWS_SECRET_ACCESS_KEY", "valueFrom": secret(s3["secretKeySecret"])},
            {"name": "ARGO_POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "ARGO_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "ARGO_WORKFLOW_NAME", "value": self.run},
            {"name": "ARGO_API_SERVER", "value": require_kube().server},
            {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
        ]

    def manifest(self, pod_name: str) -> dict:
        tmpl = self.resolved_template()
        spec = self.wt["spec"]
        is_resource = "resource" in tmpl
        argo_mount = {"name": "var-run-argo", "mountPath": "/var/run/argo"}
        exec_mount = {"name": "argoexec", "mountPath": "/argoexec", "readOnly": True}
        volumes = [{"name": "var-run-argo", "emptyDir": {}},
                   {"name": "argoexec", "configMap": {"name": ARGOEXEC_CONFIGMAP}}]
        volumes += copy.deepcopy(tmpl.get("volumes") or [])
        main_mounts = [] if is_resource else copy.deepcopy(tmpl["container"].get("volumeMounts") or [])
        mirrored = [{**m, "mountPath": "/mainctrfs" + m["mountPath"]} for m in main_mounts]

        init = {"name": "init", "image": EXECUTOR_IMAGE, "imagePullPolicy": "IfNotPresent",
                "command": ["python3", "/argoexec/argoexec.py", "init"], "env": self.executor_env(pod_name),
                "volumeMounts": [argo_mount, exec_mount] + mirrored}
        containers = []
        in_arts = (tmpl.get("inputs") or {}).get("artifacts") or []
        if in_arts:
            volumes.append({"name": "input-artifacts", "emptyDir": {}})
            init["volumeMounts"].append({"name": "input-artifacts", "mountPath": "/argo/inputs/artifacts"})
        if is_resource:
            # `argoexec resource` is the main container; there is no wait container
            containers.append({"name": "main", "image": EXECUTOR_IMAGE, "imagePullPolicy": "IfNotPresent",
                               "command": ["python3", "/argoexec/argoexec.py", "resource"],
                               "env": self.executor_env(pod_name), "volumeMounts": [argo_mount, exec_mount]})
        else:
            containers.append({"name": "wait", "image": EXECUTOR_IMAGE, "imagePullPolicy": "IfNotPresent",
                               "command": ["python3", "/argoexec/argoexec.py", "wait"],
                               "env": self.executor_env(pod_name),
                               "volumeMounts": [argo_mount, exec_mount] + mirrored})
            main = copy.deepcopy(tmpl["container"])
            main["name"] = "main"
            assert main.get("command"), f"{tmpl['name']}: the emissary needs the command stated in the template"
            main["command"] = ["/var/run/argo/argoexec", "emissary", "--"] + main["command"]
            main["volumeMounts"] = main_mounts + [argo_mount]
            for art in in_arts:  # an artifact on no volume gets the input-artifacts volume at its path
                if not any(art["path"] == m["mountPath"] or art["path"].startswith(m["mountPath"].rstrip("/") + "/")
                           for m in main_mounts):
                    main["volumeMounts"].append({"name": "input-artifacts", "mountPath": art["path"],
                                                 "subPath": art["name"]})
            containers.append(main)

        meta = tmpl.get("metadata") or {}
        labels = {**(meta.get("labels") or {}), ARGO_LABEL_WORKFLOW: self.run, "app.kubernetes.io/part-of": "pvbench-ci"}
        pod_spec = {
            "restartPolicy": "Never",
            "serviceAccountName": self.service_account or tmpl.get("serviceAccountName") or spec.get("serviceAccountName"),
            "volumes": volumes,
            "initContainers": [init],
            "containers": containers,
        }
        sc = self.security_context if self.security_context is not None else \
            (tmpl.get("securityContext") or spec.get("securityContext"))
        if sc:
            pod_spec["securityContext"] = sc
        for key in ("nodeSelector", "affinity", "tolerations"):
            value = tmpl.get(key) or spec.get(key)
            if value:
                pod_spec[key] = value
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": pod_name, "namespace": NAMESPACE, "labels": labels,
                             "annotations": {**(meta.get("annotations") or {}),
                                             "workflows.argoproj.io/node-name": f"{self.run}.{tmpl['name']}"}},
                "spec": pod_spec}

    def run_pod(self, timeout: int = POD_TIMEOUT, keep: bool = False) -> StepResult:
        k = require_kube()
        name = self.name
        k.create(self.manifest(name))
        try:
            pod = k.wait_pod(name, timeout)
            containers = [c["name"] for c in pod["spec"].get("initContainers", [])] + \
                [c["name"] for c in pod["spec"]["containers"]]
            logs = {c: k.logs(name, c) for c in containers}
            task_result = k.get("workflowtaskresult", name)
            return StepResult(name, pod, logs, task_result)
        finally:
            if not keep:
                k.delete("pod", name, wait=False)


def step(wt: dict, name: str, ctx: dict[str, str], inputs: dict[str, str] | None = None, **kw) -> StepPod:
    """The StepPod of template `name` with the workflow context and the task's inputs substituted."""
    from argo_helpers import step_context, templates_by_name

    template = copy.deepcopy(templates_by_name(wt)[name])
    local = step_context(template, ctx, inputs or {})
    resolved = substitute_all(template, local)
    return StepPod(wt=wt, template=resolved, run=ctx["workflow.name"],
                   artifact_repository=installed_release()["artifact_repository"], **kw)
