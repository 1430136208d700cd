"""The cell guard: a benchmark cell whose pod is not scheduled within the run's volume-timeout
fails then, saying why.

Each cell pod carries its deadline (Argo sets ``activeDeadlineSeconds`` from the template's
``timeout``, which ``pvbench validate`` derives from the workload: volume-timeout plus the
cell's fio time) and volume-timeout itself (the annotation ANNOTATION_VOLUME_WAIT). Once a pod
runs, the kubelet enforces the deadline. A pod that is never scheduled (its PVC never binds: no
provisioner, a zone conflict, a quota) is seen by no kubelet, and Argo v3.7 does not look at a
pending pod again until something changes (and with the run's parallelism reached it does not
look at all), so the cell would wait forever and hold the node's turn.

The guard does that part for those pods, at the sooner of the two: an unscheduled cell pod past
its volume-timeout (or its deadline, for a pod without the annotation) is marked Failed (reason
DeadlineExceeded) with a message naming the volume and what Kubernetes says about it. Argo then
fails the cell with that message, the run goes on to the next cell, and the report names it.
One guard per namespace (a Deployment of the chart), stdlib only: it talks to the API server
with its ServiceAccount's token.
"""

from __future__ import annotations

import time
import urllib.parse
from datetime import datetime, timezone

from pvbench.argo import conventions as c
from pvbench.kube.api import Api, KubeError, claim_names, parse_time

SELECTOR = f"{c.LABEL_COMPONENT}={c.COMPONENT_BENCHMARK},workflows.argoproj.io/workflow"
REASON = "DeadlineExceeded"  # as the kubelet says it for a running pod past activeDeadlineSeconds


def limit(pod: dict) -> tuple[float, str] | None:
    """How long a cell pod may stay unscheduled, and what that limit is, in words: its
    volume-timeout (the annotation), or its deadline when the annotation is missing or not a
    number (a template older than the guard); None for a pod without a deadline (not a cell)."""
    deadline = pod.get("spec", {}).get("activeDeadlineSeconds")
    if not deadline:
        return None
    said = f"its deadline of {deadline} s (volume-timeout plus its fio time)"
    try:
        wait = float(pod["metadata"].get("annotations", {})[c.ANNOTATION_VOLUME_WAIT])
    except (KeyError, ValueError):
        return float(deadline), said
    return (wait, f"the run's volume-timeout of {wait:g} s") if 0 < wait < deadline else (float(deadline), said)


def overdue(pod: dict, now: datetime) -> float | None:
    """Seconds past its limit for an unscheduled, pending cell pod; None if not (yet) overdue."""
    spec, status, most = pod.get("spec", {}), pod.get("status", {}), limit(pod)
    if status.get("phase") != "Pending" or spec.get("nodeName") or most is None:
        return None  # running or scheduled pods are the kubelet's; pods without a deadline are not pvbench's cells
    late = (now - parse_time(pod["metadata"]["creationTimestamp"])).total_seconds() - most[0]
    return late if late > 0 else None


def why_not_started(api: Api, namespace: str, pod: dict) -> str:
    """What Kubernetes says about the pod's volumes, and the scheduler's last word."""
    parts = []
    for name in claim_names(pod):
        try:
            pvc = api.call("GET", f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}")
        except KubeError:
            parts.append(f"volume {name} was never created")
            continue
        phase, sc = pvc.get("status", {}).get("phase", "?"), pvc.get("spec", {}).get("storageClassName")
        if phase == "Bound":
            continue
        events = api.call(
            "GET",
            f"/api/v1/namespaces/{namespace}/events?"
            + urllib.parse.urlencode(
                {"fieldSelector": f"involvedObject.kind=PersistentVolumeClaim,involvedObject.name={name}"}
            ),
        )
        last = max(
            events.get("items") or [], default=None, key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or ""
        )
        said = f": {last['message']}" if last and last.get("message") else ""
        parts.append(f"its volume (storage class {sc}) is still {phase}{said}")
    for cond in pod.get("status", {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False" and cond.get("message"):
            parts.append(f"the scheduler says: {cond['message']}")
    return "; ".join(parts) or "it was never scheduled"


def check(api: Api, namespace: str, now: datetime | None = None, log=print) -> list[str]:
    """One pass: fail every overdue, unscheduled cell pod of the namespace. Returns their names."""
    now = now or datetime.now(timezone.utc)
    pods = api.call(
        "GET",
        f"/api/v1/namespaces/{namespace}/pods?"
        + urllib.parse.urlencode({"labelSelector": SELECTOR, "fieldSelector": "status.phase=Pending"}),
    )
    failed = []
    for pod in pods.get("items") or []:
        late = overdue(pod, now)
        if late is None:
            continue
        name, said = pod["metadata"]["name"], limit(pod)[1]
        message = f"pvbench: the cell did not start within {said}: {why_not_started(api, namespace, pod)}"
        api.call(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/pods/{name}/status",
            {"status": {"phase": "Failed", "reason": REASON, "message": message}},
            content_type="application/merge-patch+json",
        )
        log(f"{name}: failed {late:.0f} s late: {message}")
        failed.append(name)
    return failed


def run(api: Api, namespace: str, every_s: float, log=print) -> None:
    log(f"guarding the cell pods of namespace {namespace} every {every_s:g} s")
    while True:
        try:
            check(api, namespace, log=log)
        except KubeError as exc:  # the API server restarting is no reason to stop guarding
            log(f"error (retrying): {exc}")
        time.sleep(every_s)
