#!/usr/bin/env python3
"""A stand-in for Argo's executor (argoexec), for step pods on the CI node.

The Argo controller cannot be had here, so the tests build each step pod the way the
controller does (workflow/controller/workflowpod.go, emissary executor) and this script
plays the executor's containers, in the runner image (python3 + the `minio` package):

  init      copies the emissary into /var/run/argo, fetches the input artifacts from the
            artifact repository into the main container's volumes (mounted here under
            /mainctrfs, as Argo does when an artifact path lies on a volume) or into the
            input-artifacts volume;
  wait      waits until the main container has exited (the emissary writes its exit
            code), uploads the output artifacts from the mirrored volumes, and reports the
            outputs (result = main's stdout, output parameters read from their
            `valueFrom.path`, artifact keys) as a WorkflowTaskResult through
            the API server, with the pod's ServiceAccount token, like Argo >= 3.4;
  resource  a resource template (`action: delete` with flags), as `argoexec resource`
            runs kubectl with the pod's ServiceAccount.

Configuration comes from the environment the test sets: ARGO_TEMPLATE (the template after
parameter substitution, artifact locations resolved), ARGO_ARTIFACT_REPOSITORY (the chart's
ConfigMap entry as JSON), AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (from the Secret it
names), ARGO_POD_NAME, ARGO_WORKFLOW_NAME, ARGO_NAMESPACE, ARGO_API_SERVER (where the
in-cluster `kubernetes` Service would lead; this node has no kube-proxy).

Any failure exits non-zero with the reason on stderr, so the pod fails like an Argo step
whose executor failed (e.g. "failed to save outputs: ... no such file or directory").
"""

from __future__ import annotations

import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ARGO = Path("/var/run/argo")
MAINCTRFS = Path("/mainctrfs")
INPUTS = Path("/argo/inputs/artifacts")
SA = Path("/var/run/secrets/kubernetes.io/serviceaccount")

# The emissary: runs the main container's command, keeps its stdout (outputs.result) and
# exit code for the wait container. Argo's is a static binary; a POSIX shell script does
# the same job for images that have /bin/sh (both pvbench images do).
EMISSARY = r"""#!/bin/sh
[ "$1" = emissary ] && shift
[ "$1" = "--" ] && shift
mkdir -p /var/run/argo/ctr/main
{ "$@"; echo $? > /var/run/argo/ctr/main/exitcode.tmp; } | tee /var/run/argo/ctr/main/stdout
rc=$(cat /var/run/argo/ctr/main/exitcode.tmp 2>/dev/null || echo 127)
mv /var/run/argo/ctr/main/exitcode.tmp /var/run/argo/ctr/main/exitcode
exit "$rc"
"""


def say(msg: str) -> None:
    print(f"argoexec: {msg}", file=sys.stderr, flush=True)


def fail(msg: str) -> None:
    say(msg)
    sys.exit(1)


def template() -> dict:
    return json.loads(os.environ["ARGO_TEMPLATE"])


def main_mounts(tmpl: dict) -> list[str]:
    return [m["mountPath"] for m in (tmpl.get("container") or tmpl.get("script") or {}).get("volumeMounts") or []]


def on_volume(tmpl: dict, path: str) -> Path | None:
    """Argo's FindOverlappingVolume: the path as seen through the mirrored volume, if any."""
    for mount in sorted(main_mounts(tmpl), key=len, reverse=True):
        if path == mount or path.startswith(mount.rstrip("/") + "/"):
            return MAINCTRFS / path.lstrip("/")
    return None


def s3():
    from minio import Minio

    repo = json.loads(os.environ["ARGO_ARTIFACT_REPOSITORY"])["s3"]
    client = Minio(repo["endpoint"], access_key=os.environ["AWS_ACCESS_KEY_ID"],
                   secret_key=os.environ["AWS_SECRET_ACCESS_KEY"], secure=not repo.get("insecure", False),
                   region=repo.get("region") or None)
    return client, repo["bucket"]


# ------------------------------------------------------------------ init
def init() -> None:
    (ARGO / "argoexec").write_text(EMISSARY)
    os.chmod(ARGO / "argoexec", 0o755)
    tmpl = template()
    arts = (tmpl.get("inputs") or {}).get("artifacts") or []
    if not arts:
        return
    client, bucket = s3()
    for art in arts:
        key = (art.get("s3") or {}).get("key")
        if not key:
            if art.get("optional"):
                continue
            fail(f"input artifact {art['name']}: no location")
        dest = on_volume(tmpl, art["path"]) or INPUTS / art["name"]
        prefix = key.rstrip("/") + "/"
        objects = list(client.list_objects(bucket, prefix=prefix, recursive=True))
        if objects:  # a "directory" key: everything below it
            for obj in objects:
                target = dest / obj.object_name[len(prefix):]
                target.parent.mkdir(parents=True, exist_ok=True)
                client.fget_object(bucket, obj.object_name, str(target))
            say(f"input artifact {art['name']}: {len(objects)} objects from s3://{bucket}/{prefix} -> {art['path']}")
        else:
            try:
                dest.parent.mkdir(parents=True, exist_ok=True)
                client.fget_object(bucket, key, str(dest))
                say(f"input artifact {art['name']}: s3://{bucket}/{key} -> {art['path']}")
            except Exception as e:  # noqa: BLE001 - any S3 error means the artifact is missing
                if art.get("optional"):
                    continue
                fail(f"failed to load artifact {art['name']}: s3://{bucket}/{key}: {e}")


# ------------------------------------------------------------------ wait
def api(method: str, path: str, body: dict | None = None, content_type: str = "application/json") -> dict:
    ctx = ssl.create_default_context(cafile=str(SA / "ca.crt"))
    token = (SA / "token").read_text().strip()
    req = urllib.request.Request(os.environ["ARGO_API_SERVER"].rstrip("/") + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": content_type,
                                          "Accept": "application/json"})
    with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
        return json.loads(r.read() or b"{}")


def upload(client, bucket: str, local: Path, key: str) -> list[str]:
    if local.is_dir():
        keys = []
        for f in sorted(p for p in local.rglob("*") if p.is_file()):
            k = f"{key.rstrip('/')}/{f.relative_to(local).as_posix()}"
            client.fput_object(bucket, k, str(f))
            keys.append(k)
        return keys
    client.fput_object(bucket, key, str(local))
    return [key]


def wait() -> None:
    code_file = ARGO / "ctr" / "main" / "exitcode"
    while not code_file.exists():
        time.sleep(0.2)
    exit_code = int(code_file.read_text().strip() or 1)
    tmpl = template()
    outputs: dict = {"exitCode": str(exit_code)}
    stdout = ARGO / "ctr" / "main" / "stdout"
    if stdout.exists():
        text = stdout.read_text(errors="replace")
        outputs["result"] = text[:-1] if text.endswith("\n") else text
    errors = []
    # Output parameters, as the executor's SaveParameters: the file at valueFrom.path (here
    # through the mirrored volume it lies on), less one trailing newline; `default` if missing.
    params = []
    for param in (tmpl.get("outputs") or {}).get("parameters") or []:
        value_from = param.get("valueFrom") or {}
        if not value_from.get("path"):
            continue
        local = on_volume(tmpl, value_from["path"])
        if local is None:
            errors.append(f"{param['name']}: {value_from['path']} is on no volume of the main container "
                          "(this stand-in reads outputs from mirrored volumes only)")
            continue
        if local.is_file():
            value = local.read_text(errors="replace")
        elif "default" in value_from:
            value = value_from["default"]
        else:
            errors.append(f"failed to save outputs: {param['name']}: open {value_from['path']}: "
                          "no such file or directory")
            continue
        params.append({**param, "value": value[:-1] if value.endswith("\n") else value})
        say(f"output parameter {param['name']}: {value_from['path']} ({len(value)} bytes)")
    if params:
        outputs["parameters"] = params
    arts = (tmpl.get("outputs") or {}).get("artifacts") or []
    if arts:
        client, bucket = s3()
        saved = []
        for art in arts:
            local = on_volume(tmpl, art["path"])
            if local is None:
                errors.append(f"{art['name']}: {art['path']} is on no volume of the main container "
                              "(this stand-in reads outputs from mirrored volumes only)")
                continue
            if not local.exists():
                if art.get("optional"):
                    continue
                errors.append(f"failed to save outputs: {art['name']}: open {art['path']}: no such file or directory")
                continue
            if local.is_dir() and not any(p.is_file() for p in local.rglob("*")) and not art.get("optional"):
                errors.append(f"failed to save outputs: {art['name']}: {art['path']} is an empty directory")
                continue
            if "none" not in (art.get("archive") or {}):
                errors.append(f"{art['name']}: only `archive: none` is emulated here")
                continue
            key = (art.get("s3") or {}).get("key") or f"argo/{os.environ.get('ARGO_WORKFLOW_NAME')}/{os.environ.get('ARGO_POD_NAME')}/{art['name']}"
            keys = upload(client, bucket, local, key)
            say(f"output artifact {art['name']}: {art['path']} -> s3://{bucket}/{key} ({len(keys)} objects)")
            saved.append({"name": art["name"], "s3": {"key": key}, "path": art["path"]})
        outputs["artifacts"] = saved
    ns, pod, wf = os.environ["ARGO_NAMESPACE"], os.environ["ARGO_POD_NAME"], os.environ.get("ARGO_WORKFLOW_NAME", "")
    phase = "Failed" if exit_code or errors else "Succeeded"
    body = {"apiVersion": "argoproj.io/v1alpha1", "kind": "WorkflowTaskResult",
            "metadata": {"name": pod, "labels": {"workflows.argoproj.io/workflow": wf,
                                                 "workflows.argoproj.io/report-outputs-completed": "true"}},
            "phase": phase, "message": "; ".join(errors), "outputs": outputs}
    try:
        try:
            api("POST", f"/apis/argoproj.io/v1alpha1/namespaces/{ns}/workflowtaskresults", body)
        except urllib.error.HTTPError as e:
            if e.code != 409:
                raise
            api("PATCH", f"/apis/argoproj.io/v1alpha1/namespaces/{ns}/workflowtaskresults/{pod}", body,
                "application/merge-patch+json")
    except urllib.error.HTTPError as e:
        fail(f"failed to report outputs (WorkflowTaskResult {ns}/{pod}): {e.code} {e.read().decode(errors='replace')[:400]}")
    say(f"reported outputs: phase {phase}, exit code {exit_code}")
    if errors:
        fail("; ".join(errors))


# ------------------------------------------------------------------ resource
def resource() -> None:
    """`argoexec resource`: the template's kubectl action with the pod's ServiceAccount.
    Emulated for what templates/ uses: delete <plural> --selector S [--ignore-not-found]."""
    res = template()["resource"]
    ns = os.environ["ARGO_NAMESPACE"]
    flags = list(res.get("flags") or [])
    if res.get("action") != "delete" or not flags:
        fail(f"resource action {res.get('action')!r} with flags {flags} is not emulated")
    kind = flags.pop(0)
    selector = None
    ignore_missing = False
    while flags:
        f = flags.pop(0)
        if f in ("--selector", "-l"):
            selector = flags.pop(0)
        elif f.startswith("--selector="):
            selector = f.split("=", 1)[1]
        elif f == "--ignore-not-found":
            ignore_missing = True
        elif f.startswith("--wait"):
            pass
        else:
            fail(f"flag {f} is not emulated")
    core = {"persistentvolumeclaims": "/api/v1", "pods": "/api/v1", "configmaps": "/api/v1"}
    if kind not in core:
        fail(f"resource kind {kind} is not emulated")
    base = f"{core[kind]}/namespaces/{ns}/{kind}"
    try:
        # what `kubectl delete KIND --selector S` does: list, then delete each object
        items = api("GET", base + "?labelSelector=" + urllib.parse.quote(selector or ""))["items"]
        for item in items:
            try:
                api("DELETE", f"{base}/{item['metadata']['name']}")
                print(f'{kind} "{item["metadata"]["name"]}" deleted', flush=True)
            except urllib.error.HTTPError as e:
                if not (e.code == 404 and ignore_missing):
                    raise
        if not items:
            print("No resources found", flush=True)
    except urllib.error.HTTPError as e:
        fail(f"kubectl delete {kind} --selector {selector}: {e.code} {e.read().decode(errors='replace')[:400]}")


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    {"init": init, "wait": wait, "resource": resource}.get(mode, lambda: fail(f"unknown mode {mode!r}"))()
