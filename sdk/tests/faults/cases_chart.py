"""The chart and the Argo steps: bad values refused at install, a run over the chart's limits
refused by `validate` before any PVC exists, a token that cannot be read refused before any
request (issue 10, the chart / Argo area)."""

from __future__ import annotations

import json
import subprocess

from faults import REPO, Case, Ctx, Outcome, clear_error

CHART = REPO / "charts" / "pvbench"


def _helm_refused(name: str, sets: tuple[str, ...], *expect: str) -> Case:
    """`helm template` (what `helm install` renders first) with these values fails with a message."""

    def run(ctx: Ctx) -> Outcome:
        from conftest import tool  # sdk/tests: the shared tool lookup (.tools/bin, PATH)

        args = [tool("helm"), "template", "pvbench", str(CHART), "--namespace", "pvbench"]
        for s in sets:
            args += ["--set", s]
        proc = subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=ctx.tmp)
        ok, shown = clear_error(proc, *expect)
        return Outcome(ok and not proc.stdout.strip(), shown, "nothing rendered, so nothing installed")

    return Case("chart", name, run)


def _validate_over_the_limit(ctx: Ctx) -> Outcome:
    """What the validate step runs, with the chart's limit in its environment (ConfigMap pvbench-limits)."""
    classes = json.dumps([f"class-{i}" for i in range(9)])
    out = ctx.tmp / "validate"
    proc = ctx.cli(
        "validate",
        "--campaign",
        "c",
        "--run",
        "wf-1",
        "--occasion",
        "adhoc",
        "--storage-classes",
        classes,
        "--profiles",
        "dbench",
        "--volume-size",
        "10Gi",
        "--outputs",
        str(out),
        env={"PVBENCH_MAX_STORAGE_CLASSES": "8"},
    )
    ok, shown = clear_error(proc, "9 storage classes", "at most 8", "maxStorageClasses")
    written = out.exists() and any(out.iterdir())
    return Outcome(
        ok and not written,
        shown,
        "run stops at validate: no cell-timeout, no fan-out, no PVC" if not written else "outputs written",
    )


def _token_file_missing(ctx: Ctx) -> Outcome:
    # an unreachable server: exit 1 would mean a request was attempted
    proc = ctx.cli(
        "argo",
        "submit",
        "--host",
        "http://127.0.0.1:9",
        "--token-file",
        str(ctx.tmp / "no-token"),
        "-p",
        "repetitions=1",
        env={"ARGO_TOKEN": ""},
    )
    ok, shown = clear_error(proc, "token file")
    return Outcome(ok and proc.returncode == 2, shown, "no request sent")


CASES = [
    _helm_refused(
        "chart: benchmark.maxStorageClasses=0", ("benchmark.maxStorageClasses=0",), "maxStorageClasses", "minimum"
    ),
    _helm_refused(
        "chart: storage-classes default naming 3 classes with maxStorageClasses=2",
        ("benchmark.maxStorageClasses=2", 'benchmark.parameters.storage-classes=["a"\\,"b"\\,"c"]'),
        "names 3 classes",
        "maxStorageClasses=2",
    ),
    _helm_refused(
        "chart: events.csi.storageClasses over maxStorageClasses",
        ("benchmark.maxStorageClasses=1", "events.enabled=true", "events.csi.storageClasses={a,b}"),
        "events.csi.storageClasses names 2 classes",
    ),
    _helm_refused("chart: events.rateLimit.unit=Day", ("events.rateLimit.unit=Day",), "rateLimit"),
    Case("chart", "validate: 9 storage classes, chart limit 8", _validate_over_the_limit),
    Case("chart", "argo submit --token-file that does not exist", _token_file_missing),
]
