"""A cell's volume lifecycle: PVC created -> bound -> pod scheduled -> attached -> mounted -> started.

The cell reads it itself, once its container runs and before fio starts (so the reads cost
the measurement nothing), from the objects the run already makes: its pod, the pod's claim
(a generic ephemeral volume, ``<pod>-target``) and the claim's PV. Nothing is watched:
Kubernetes keeps each moment on the objects, in whole seconds:

    pod created                metadata.creationTimestamp of the pod
    claim created              metadata.creationTimestamp of the PVC (the ephemeral volume
                               controller makes it right after the pod)
    volume bound               the PV's status.lastPhaseTransitionTime (GA in Kubernetes 1.31)
    pod scheduled              the pod's PodScheduled condition (with WaitForFirstConsumer the
                               scheduler binds the volume first: provisioning is inside)
    volume attached            the attach/detach controller's SuccessfulAttachVolume event
                               (only volume types that attach: CSI block devices, cloud disks)
    mounted, sandbox ready     the PodReadyToStartContainers condition: the kubelet makes the
                               sandbox only once every volume is mounted
    container started          the benchmark container's state.running.startedAt

What cannot be read (no rights, an older cluster, an event already expired) is left null and
said in ``notes``; a cell never fails for its lifecycle.
"""

from __future__ import annotations

import os
import time
from datetime import datetime

from pvbench.kube.api import Api, KubeError, claim_names, parse_time
from pvbench.results.schema import VolumeLifecycle

POD_NAME_ENV = "PVBENCH_POD_NAME"  # the downward API gives the pod its own name and namespace
POD_NAMESPACE_ENV = "PVBENCH_POD_NAMESPACE"
STATUS_WAIT_S = 15.0  # how long a cell waits for the kubelet to report its container's start
VOLUME_NAME = "target"  # the cell pod's volume under test (the template's ephemeral volume)
ATTACH_REASON = "SuccessfulAttachVolume"


def _condition(pod: dict, kind: str) -> datetime | None:
    for cond in pod.get("status", {}).get("conditions") or []:
        if cond.get("type") == kind and cond.get("status") == "True":
            return parse_time(cond.get("lastTransitionTime"))
    return None


def _container_started(pod: dict, container: str) -> datetime | None:
    for status in pod.get("status", {}).get("containerStatuses") or []:
        if status.get("name") == container:
            return parse_time((status.get("state", {}).get("running") or {}).get("startedAt"))
    return None


def _event_time(event: dict) -> datetime | None:
    # core/v1 events from the old recorders carry firstTimestamp; the new ones eventTime
    return parse_time(event.get("eventTime") or event.get("firstTimestamp") or event.get("lastTimestamp"))


def _span(start: datetime | None, end: datetime | None, notes: list[str], what: str) -> float | None:
    if start is None or end is None:
        return None
    seconds = (end - start).total_seconds()
    if seconds < 0:  # the kubelet's and the API server's clocks disagree: no duration at all
        notes.append(f"{what}: the end ({end.isoformat()}) is before the start ({start.isoformat()})")
        return None
    return seconds


def from_objects(
    pod: dict, claim: dict | None, volume: dict | None, pod_events: list[dict], container: str = "main"
) -> VolumeLifecycle:
    """The lifecycle of one pod and its claim, from the API objects as read (pure: unit-testable)."""
    notes: list[str] = []
    pod_created = parse_time(pod["metadata"]["creationTimestamp"])
    claim_created = parse_time((claim or {}).get("metadata", {}).get("creationTimestamp"))
    bound = parse_time((volume or {}).get("status", {}).get("lastPhaseTransitionTime"))
    if volume is not None and volume.get("status", {}).get("phase") not in ("Bound", None) and bound:
        bound = None  # released or failed since: its last transition is not the binding
    scheduled = _condition(pod, "PodScheduled")
    attach_events = [e for e in pod_events if e.get("reason") == ATTACH_REASON]
    attached = min((t for t in map(_event_time, attach_events) if t), default=None)
    sandbox = _condition(pod, "PodReadyToStartContainers")
    started = _container_started(pod, container)
    mount_from = attached or scheduled
    return VolumeLifecycle(
        claim=(claim or {}).get("metadata", {}).get("name"),
        volume=(volume or {}).get("metadata", {}).get("name"),
        pod_created_at=pod_created,
        claim_created_at=claim_created,
        volume_bound_at=bound,
        pod_scheduled_at=scheduled,
        volume_attached_at=attached,
        pod_sandbox_at=sandbox,
        container_started_at=started,
        volume_bind_s=_span(claim_created, bound, notes, "volume_bind_s"),
        pod_schedule_s=_span(pod_created, scheduled, notes, "pod_schedule_s"),
        volume_attach_s=_span(scheduled, attached, notes, "volume_attach_s"),
        volume_mount_s=_span(mount_from, sandbox, notes, "volume_mount_s"),
        pod_start_s=_span(pod_created, started, notes, "pod_start_s"),
        notes=notes,
    )


def read(
    api: Api,
    namespace: str,
    pod_name: str,
    container: str = "main",
    wait_s: float = STATUS_WAIT_S,
    volume_name: str = VOLUME_NAME,
) -> VolumeLifecycle:
    """Read the pod, its volume under test (``volume_name``: a pod of several cells has one per
    cell), that volume's PV and the pod's events, then compute."""
    base = f"/api/v1/namespaces/{namespace}"
    pod = api.get(f"{base}/pods/{pod_name}")
    # The kubelet reports the container's start to the API server a moment after it started (seen:
    # the cell's first read, ~1 s in, found no startedAt): look again, briefly, before fio starts.
    deadline = time.monotonic() + wait_s
    while _container_started(pod, container) is None and time.monotonic() < deadline:
        time.sleep(0.5)
        pod = api.get(f"{base}/pods/{pod_name}")
    notes: list[str] = []
    if _container_started(pod, container) is None:
        notes.append(f"container {container}: no start time in the pod's status after {wait_s:g} s")
    claim = volume = None
    names = claim_names(pod)
    own = f"{pod_name}-{volume_name}"
    name = own if own in names else (names[0] if names else None)
    if name is None:
        notes.append("the pod has no persistent volume claim")
    else:
        try:
            claim = api.get(f"{base}/persistentvolumeclaims/{name}")
        except KubeError as exc:
            notes.append(f"claim {name}: {exc}")
    pv_name = (claim or {}).get("spec", {}).get("volumeName")
    if pv_name:
        try:  # PVs are cluster-scoped: the chart grants get on them (a ClusterRole), optionally
            volume = api.get(f"/api/v1/persistentvolumes/{pv_name}")
        except KubeError as exc:
            notes.append(f"volume {pv_name}: {exc}")
    try:
        events = (
            api.get(f"{base}/events", fieldSelector=f"involvedObject.kind=Pod,involvedObject.name={pod_name}").get(
                "items"
            )
            or []
        )
    except KubeError as exc:
        notes.append(f"events of {pod_name}: {exc}")
        events = []
    lifecycle = from_objects(pod, claim, volume, events, container)
    lifecycle.notes[:0] = notes
    return lifecycle


def read_own(container: str = "main", volume_name: str = VOLUME_NAME) -> tuple[VolumeLifecycle | None, str | None]:
    """The lifecycle of the pod this process runs in; (None, why) outside Kubernetes or without rights.

    Outside a pod (local mode, a test) there is nothing to read and nothing to say.
    """
    pod_name, namespace = os.environ.get(POD_NAME_ENV), os.environ.get(POD_NAMESPACE_ENV)
    if not pod_name or not namespace:
        return None, None
    try:
        return read(Api.in_cluster(), namespace, pod_name, container, volume_name=volume_name), None
    except KubeError as exc:
        return None, f"volume lifecycle not read: {exc}"
