"""What the benchmark template's steps share: placeholders, pod settings, resources, retries, arguments."""

import json

from hera.workflows import Env, Parameter, S3Artifact
from hera.workflows import models as m

from pvbench.argo import conventions as c
from pvbench.argo import keys
from pvbench.cells.guards import KEEP_FLAGGED_ENV
from pvbench.cells.matrix import POD_CELLS_KEY

WF = "{{workflow.parameters.%s}}".__mod__
IN = "{{inputs.parameters.%s}}".__mod__
RUN = "{{workflow.name}}"
# The store keys hold slugs of the labels; for a label that `validate` accepted (letters,
# digits, . _ -) the slug is its lowercase form, which Argo's expressions can compute.
CAMPAIGN_KEY = "{{=lower(workflow.parameters.campaign)}}"
OCCASION_KEY = "{{=lower(workflow.parameters.occasion)}}"
CELL_TIMEOUT = "{{workflow.outputs.parameters.%s}}" % c.CELL_TIMEOUT_OUTPUT
VOLUME_WAIT = "{{workflow.outputs.parameters.%s}}" % c.VOLUME_WAIT_OUTPUT
HOSTNAME = "kubernetes.io/hostname"


def options(**values: str | bool) -> list[str]:
    """Command-line options in the order given: ``--name value``, or the bare ``--name`` for True
    (False: left out); ``name_with_underscores`` is ``--name-with-underscores``."""
    args: list[str] = []
    for name, value in values.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            args.append(flag)
        elif value is not False:
            args += [flag, value]
    return args


# ------------------------------------------------------------------ pods
# Non-root everywhere; fsGroup makes the fresh PVC writable for that user.
POD_SECURITY = m.PodSecurityContext(
    run_as_non_root=True,
    run_as_user=c.RUN_AS_USER,
    run_as_group=c.RUN_AS_USER,
    fs_group=c.RUN_AS_USER,
    seccomp_profile=m.SeccompProfile(type="RuntimeDefault"),
)
STRICT = m.SecurityContext(
    allow_privilege_escalation=False,
    read_only_root_filesystem=True,
    capabilities=m.Capabilities(drop=["ALL"]),
)


def resources(cpu: str, memory: str, cpu_limit: str | None, memory_limit: str) -> m.ResourceRequirements:
    limits = {"memory": memory_limit} | ({"cpu": cpu_limit} if cpu_limit else {})
    return m.ResourceRequirements(requests={"cpu": cpu, "memory": memory}, limits=limits)


# What each step needs (requests) and may take (limits). The steps around the cells are small
# Python commands; aggregate and the adaptive check run DuckDB over the run's results; the
# report runs Node (Evidence; `pvbench report build` caps its heap at 2 GiB, and the build peaked
# at ~1.9 GiB RSS in pvbench_lab.bench_aggregate; it requests 3Gi, room for the page cache beside it).
SMALL = resources("100m", "128Mi", "1", "512Mi")
TABLES = resources("500m", "512Mi", "2", "4Gi")
REPORT = resources("1", "3Gi", "2", "5Gi")
# A cell: no CPU limit, on purpose. A CPU limit is a CFS quota: once fio has used it within a
# 100 ms period, it is stopped until the next one, which shows as latency outliers (p99, p99.9)
# and lower IOPS that measure the limit, not the storage. A cell runs alone on its node (pod
# anti-affinity, the node mutex), so there is no neighbour of ours to protect; its request
# gives it its share under contention, and the memory limit still bounds it.
CELL = resources("500m", "256Mi", None, "2Gi")
# Steps that Argo's own container runs (resource templates: create/delete an object) have no
# container of ours to set resources on: they come in by podSpecPatch.
ARGO_STEP_RESOURCES = json.dumps(
    {
        "containers": [
            {
                "name": "main",
                "resources": {
                    "requests": {"cpu": "50m", "memory": "64Mi"},
                    "limits": {"cpu": "500m", "memory": "256Mi"},
                },
            }
        ]
    },
    separators=(",", ":"),
)
PULL = "IfNotPresent"  # images are pinned by tag (the chart sets it); kind can side-load them
RUNNER = WF("image")
# A step that runs one `pvbench` command in the runner image, non-root on a read-only root.
PVBENCH_STEP = dict(image=RUNNER, image_pull_policy=PULL, command=["pvbench"], security_context=STRICT)
# The steps that compute statistics (validate checks it) keep the flagged results the run's
# keep-flagged parameter names.
KEEP_FLAGGED = Env(name=KEEP_FLAGGED_ENV, value=WF("keep-flagged"))
# Transient trouble only, for the steps around the cells: OnError retries pods that Argo or
# Kubernetes lost (evicted, deleted, executor errors), never a step whose own command failed.
# Cells are not retried (see benchmark-cell).
TRANSIENT = m.RetryStrategy(
    limit="2",
    retry_policy="OnError",
    backoff=m.Backoff(duration="30s", factor="2", max_duration="10m"),
)

# ------------------------------------------------------------------ arguments
MATRIX_ARGS = options(
    campaign=WF("campaign"),
    run=RUN,
    occasion=WF("occasion"),
    storage_classes=WF("storage-classes"),
    profiles=WF("profile"),
    tests=WF("tests"),
    repetitions=WF("repetitions"),
    seed=WF("seed"),
    volume_modes=WF("volume-modes"),
    access_modes=WF("access-modes"),
)
TIMING_ARGS = options(ramp=WF("ramp"), runtime=WF("runtime"), size=WF("size"))


def cell_arguments(clients: bool = False, pod: bool = False) -> list[Parameter]:
    """A fan-out item (`pvbench expand`, or ci-check's `next`) as benchmark-cell's arguments
    (``clients``: client-cell's, whose items also say how many client pods; ``pod``:
    benchmark-pod's, whose items are its cells)."""
    if pod:
        return [Parameter(name=POD_CELLS_KEY, value="{{item.%s}}" % POD_CELLS_KEY)]
    keys_ = (*c.FAN_OUT_ITEM_KEYS, "clients") if clients else c.FAN_OUT_ITEM_KEYS
    return [Parameter(name=name.replace("_", "-"), value="{{item.%s}}" % name) for name in keys_]


def cells_done(*tasks: str) -> str:
    """A `depends` that holds once every fan-out ended, however (an empty fan-out is Skipped)."""
    return " && ".join(
        "(" + " || ".join(f"{t}.{phase}" for phase in ("Succeeded", "Failed", "Errored", "Skipped")) + ")"
        for t in tasks
    )


def run_results_artifact(optional: bool = False) -> S3Artifact:
    """Every result of this run so far, fetched by Argo into a store directory (no S3 credentials in the pod)."""
    prefix = keys.run_results_prefix(CAMPAIGN_KEY, RUN)
    return S3Artifact(name="results", path=f"{c.STORE_DIR}/{prefix}", key=prefix, optional=optional or None)


# ------------------------------------------------------------------ a cell (a fan-out item)
# Its inputs (storage-class, workload, rep, order), where its results go in the store, and the
# arguments every fio-step of the cell gets.
CELL_INPUTS = [Parameter(name=name.replace("_", "-")) for name in c.FAN_OUT_ITEM_KEYS]
CELL_KEY = keys.cell_prefix(
    CAMPAIGN_KEY,
    RUN,
    OCCASION_KEY,
    IN("storage-class"),
    keys.volume_key_expression("inputs.parameters['volume-mode']", "inputs.parameters['access-mode']"),
    WF("profile"),
    IN("workload"),
    IN("rep"),
)
# A multi-client cell's id on its pods and its shared claim.
CELL_ID = "{{workflow.uid}}-" + IN("order")
CELL_ARGS = [
    *options(
        campaign=WF("campaign"),
        run=RUN,
        occasion=WF("occasion"),
        storage_class=IN("storage-class"),
        volume_mode=IN("volume-mode"),
        access_mode=IN("access-mode"),
        profile=WF("profile"),
        workload=IN("workload"),
        rep=IN("rep"),
        order=IN("order"),
        seed=WF("seed"),
    ),
    *TIMING_ARGS,
]
# A pod of several cells (`pvbench fio-pod`): the run's part of CELL_ARGS, its cells come as one input.
POD_ARGS = [
    *options(campaign=WF("campaign"), run=RUN, occasion=WF("occasion"), profile=WF("profile"), seed=WF("seed")),
    *TIMING_ARGS,
]
POD_TIMEOUT = "{{workflow.outputs.parameters.%s}}" % c.POD_TIMEOUT_OUTPUT
LABEL_ARGS = [
    *(
        arg
        for name in ("role", "trigger", "old-image", "new-image", "changed")
        for arg in ("--label", f"{name}={WF(name)}")
    ),
    # the nodes the run asked for: a class's history is one series per node selection
    *("--label", f"node-selection={WF('node-label')}={WF('node-value')}"),
]
