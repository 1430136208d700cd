#!/usr/bin/env python3
"""A tiny dynamic provisioner for node-local storage classes (stdlib only).

    provisioner.py --server URL --ca CA --cert CERT --key KEY \
        --class pvbench-ext4=/var/lib/pvbench-cluster/media/ext4 [--class ...] \
        [--name pvbench.io/local-media] [--interval 5]

The storage classes say `provisioner: pvbench.io/local-media` and
`volumeBindingMode: WaitForFirstConsumer`. When the scheduler has picked the node for a
pod (the PVC gets `volume.kubernetes.io/selected-node`), this creates a fresh directory
on the class's medium (ext4 / XFS on a loop device, tmpfs) and a `local` PersistentVolume
pre-bound to the claim; the PV controller binds it. When the claim goes away (a generic
ephemeral volume is deleted with its pod) the PV is Released: the directory is removed
and the PV deleted. So every benchmark cell gets a fresh, empty volume of its class,
like a cloud provisioner would give it, and nothing piles up between runs. A pass runs at
every change of a claim or a volume (two watches), and at least every --interval seconds.

The directory is created root-owned 0755, as a fresh filesystem would be: pods that do
not set fsGroup cannot write there as a non-root user (the kubelet applies fsGroup to
`local` volumes).

A claim with `volumeMode: Block` gets a raw block volume instead: a sparse file of the
requested size on the class's medium, attached as a loop device (direct I/O where the medium
allows it, so the page cache of the file is not in the path), as a `local` PV with
`volumeMode: Block` (Kubernetes' local volume plugin maps the device into the pod). When the
claim goes, the loop device is detached and the file removed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
ANN_MEDIUM = "pvbench.io/medium"
ANN_BACKING = "pvbench.io/backing-file"  # a Block PV's file, behind its loop device


def attach_loop(backing: Path, size: int) -> str:
    """A loop device over a fresh sparse file of ``size`` bytes: direct I/O where the medium takes
    it (not tmpfs), so reads and writes reach the medium, not the file's page cache."""
    with open(backing, "wb") as f:
        f.truncate(size)
    for direct in ("on", "off"):
        done = subprocess.run(
            ["losetup", "--find", "--show", f"--direct-io={direct}", str(backing)], capture_output=True, text=True
        )
        if done.returncode == 0:
            return done.stdout.strip()
    raise RuntimeError(f"losetup {backing}: {done.stderr.strip()}")


def detach_loop(device: str, backing: Path) -> None:
    subprocess.run(["losetup", "-d", device], capture_output=True)
    backing.unlink(missing_ok=True)


def log(msg: str) -> None:
    print(time.strftime("%H:%M:%S"), msg, flush=True)


class Api:
    def __init__(self, server: str, ca: str, cert: str, key: str):
        self.server = server.rstrip("/")
        self.ctx = ssl.create_default_context(cafile=ca)
        self.ctx.load_cert_chain(cert, key)

    def call(self, method: str, path: str, body: dict | None = None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            self.server + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        with urllib.request.urlopen(req, context=self.ctx, timeout=20) as r:
            return json.loads(r.read() or b"{}")

    def watch(self, path: str, changed: threading.Event) -> None:
        """Set ``changed`` at every event of a watch of ``path``, for ever: a pass then runs as the
        scheduler picks a claim's node (a cell's pod waits for its volume), not at the next tick
        of an interval (at 1 s, 0.5 s a claim on average; a v4.0.5 pass makes 65 claims)."""
        while True:
            req = urllib.request.Request(f"{self.server}{path}?watch=1&timeoutSeconds=240")
            try:
                with urllib.request.urlopen(req, context=self.ctx, timeout=300) as events:
                    for _event in events:  # one JSON line each
                        changed.set()
            except Exception as e:  # the API server restarting, a watch cut: watched again
                log(f"watch {path}: {e!r}")
                time.sleep(1)
            changed.set()  # what changed between two watches is seen by the next pass


def parse_quantity(q: str) -> int:
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
    for u, f in units.items():
        if q.endswith(u):
            return int(float(q[: -len(u)]) * f)
    return int(float(q))


def provision(api: Api, name: str, classes: dict[str, Path], pvc: dict) -> None:
    meta, spec = pvc["metadata"], pvc["spec"]
    sc = spec.get("storageClassName")
    node = (meta.get("annotations") or {}).get(ANN_SELECTED_NODE)
    pv_name = f"pvc-{meta['uid']}"
    directory = classes[sc] / pv_name
    request = spec.get("resources", {}).get("requests", {}).get("storage", "1Gi")
    free = shutil.disk_usage(classes[sc]).free
    if parse_quantity(request) > free + free // 10:
        # Say so on the claim, like a real provisioner that is out of space would.
        log(f"{meta['namespace']}/{meta['name']}: {request} asked, {free >> 20} MiB free on {sc}; provisioning anyway")
    block = spec.get("volumeMode") == "Block"
    annotations = {ANN_PROVISIONED_BY: name}
    if block:
        backing = classes[sc] / f"{pv_name}.img"
        path = attach_loop(backing, parse_quantity(request))
        annotations[ANN_BACKING] = str(backing)
    else:
        directory.mkdir(mode=0o755, exist_ok=True)
        os.chmod(directory, 0o755)
        path = str(directory)
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": pv_name,
            "annotations": annotations,
            "labels": {"pvbench.io/storage-class": sc},
        },
        "spec": {
            "capacity": {"storage": request},
            "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Delete",
            "storageClassName": sc,
            "volumeMode": "Block" if block else "Filesystem",
            "local": {"path": path},
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta["uid"],
            },
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}
                    ]
                }
            },
        },
    }
    try:
        api.call("POST", "/api/v1/persistentvolumes", pv)
        log(f"provisioned {pv_name} ({sc}, {request}) for {meta['namespace']}/{meta['name']} at {path}")
    except urllib.error.HTTPError as e:
        if block:  # not ours after all (an earlier pass made it): give the device back
            detach_loop(path, backing)
        if e.code != 409:  # already exists: an earlier pass created it
            raise


def reclaim(api: Api, classes: dict[str, Path], pv: dict) -> None:
    name = pv["metadata"]["name"]
    path = Path(pv["spec"].get("local", {}).get("path", ""))
    backing = Path((pv["metadata"].get("annotations") or {}).get(ANN_BACKING, ""))
    if pv["spec"].get("volumeMode") == "Block":
        if any(backing.parent == root for root in classes.values()) and backing.name == f"{name}.img":
            detach_loop(str(path), backing)
    elif any(path.parent == root for root in classes.values()) and path.name == name:
        shutil.rmtree(path, ignore_errors=True)
    try:
        api.call("DELETE", f"/api/v1/persistentvolumes/{name}")
        log(f"reclaimed {name} ({path})")
    except urllib.error.HTTPError as e:
        if e.code != 404:
            raise


def served_classes(api: Api, name: str, classes: dict[str, Path], media_root: Path | None) -> dict[str, Path]:
    """The --class mapping, plus every StorageClass of this provisioner that names its medium
    (annotation pvbench.io/medium, a directory under --media-root): classes made later, as a
    cluster operator would add or fix one."""
    served = dict(classes)
    if media_root is not None:
        for sc in api.call("GET", "/apis/storage.k8s.io/v1/storageclasses")["items"]:
            medium = (sc["metadata"].get("annotations") or {}).get(ANN_MEDIUM)
            if sc.get("provisioner") == name and medium and (media_root / medium).is_dir():
                served.setdefault(sc["metadata"]["name"], media_root / medium)
    return served


def one_pass(api: Api, name: str, classes: dict[str, Path], media_root: Path | None = None) -> None:
    classes = served_classes(api, name, classes, media_root)
    pvs = api.call("GET", "/api/v1/persistentvolumes")["items"]
    existing = {pv["metadata"]["name"] for pv in pvs}
    for pv in pvs:
        ours = (pv["metadata"].get("annotations") or {}).get(ANN_PROVISIONED_BY) == name
        if (
            ours
            and pv.get("status", {}).get("phase") in ("Released", "Failed")
            and not pv["metadata"].get("deletionTimestamp")
        ):
            reclaim(api, classes, pv)
    for pvc in api.call("GET", "/api/v1/persistentvolumeclaims")["items"]:
        meta = pvc["metadata"]
        ann = meta.get("annotations") or {}
        if (
            pvc.get("status", {}).get("phase") == "Pending"
            and not pvc["spec"].get("volumeName")
            and pvc["spec"].get("storageClassName") in classes
            and ann.get(ANN_SELECTED_NODE)
            and ann.get(ANN_PROVISIONER, name) == name
            and not meta.get("deletionTimestamp")
            and f"pvc-{meta['uid']}" not in existing
        ):
            provision(api, name, classes, pvc)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--ca", required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--class", dest="classes", action="append", required=True, metavar="NAME=DIR")
    ap.add_argument("--name", default="pvbench.io/local-media")
    ap.add_argument("--interval", type=float, default=5.0, help="the longest wait between passes")
    ap.add_argument("--media-root", type=Path, help="Also serve classes annotated pvbench.io/medium=<dir under it>")
    args = ap.parse_args()
    classes = {}
    for c in args.classes:
        sc, _, d = c.partition("=")
        classes[sc] = Path(d)
        if not classes[sc].is_dir():
            sys.exit(f"provisioner: {d} (class {sc}) is not a directory")
    api = Api(args.server, args.ca, args.cert, args.key)
    log(f"provisioner {args.name}: {', '.join(f'{k}={v}' for k, v in classes.items())}")
    changed = threading.Event()
    for path in ("/api/v1/persistentvolumeclaims", "/api/v1/persistentvolumes"):
        threading.Thread(target=api.watch, args=(path, changed), daemon=True).start()
    while True:
        changed.clear()  # before the pass: a change during it makes the next one run at once
        try:
            one_pass(api, args.name, classes, args.media_root)
        except Exception as e:  # keep serving; the API server may be restarting
            log(f"error: {e!r}")
        changed.wait(args.interval)


if __name__ == "__main__":
    main()
