"""WorkflowTemplate ``pvbench-benchmark``: one benchmark run, submitted from the Argo UI or CLI.

    validate ─▶ expand ─┬▶ benchmark-cell × cells (withParam, one pod each)     ─┬▶ adaptive (if adaptive-target is set)
                        └▶ client-cell × client-cells (a profile with multi-client tests) ─┘
    client-cell:  barrier (daemon) ─▶ fio-client × N (withSequence, own PVC each) ─▶ merge-clients
    exit handler, whatever happened: cleanup (stuck cell pods) ─▶ publish, under the campaign's mutex:
                                     aggregate ─▶ report (unless build-report is false)

    adaptive, one round:  check (ci-check) ─▶ benchmark-cell × next, client-cell × next-clients ─▶ adaptive (round + 1)

One cell runs at a time (the main and adaptive DAGs' parallelism: a one-pod cell, or a
multi-client cell's whole DAG, is one child).

Every step is a ``pvbench`` command; this file only says how Argo wires them.
Rendered to templates/benchmark.yaml by ``pvbench render`` (never edit that file).
"""

import json

from hera.workflows import (
    DAG,
    Artifact,
    ConfigMapEnv,
    Container,
    EmptyDirVolume,
    FieldEnv,
    Parameter,
    Resource,
    S3Artifact,
    Task,
    WorkflowTemplate,
)
from hera.workflows import (
    models as m,
)
from hera.workflows.archive import NoneArchiveStrategy

from pvbench.argo import conventions as c
from pvbench.argo import keys
from pvbench.cells.matrix import (
    CELLS_FAN_OUT,
    CLIENT_CELLS_FAN_OUT,
    CLIENT_VOLUMES,
    FAN_OUTS,
    NEXT_ROUND,
    SHARED_CLIENT_CELLS_FAN_OUT,
)
from pvbench.cells.run import max_jobs
from pvbench.fio.pod_barrier import DEFAULT_PORT as DEFAULT_BARRIER_PORT
from pvbench.kube import lifecycle
from pvbench.kube.api import SA_DIR
from pvbench.profiles import DEFAULT_PROFILE_NAME, PROFILES, Profile, parse_size
from pvbench.store.layout import CLIENTS_DIR

WF = "{{workflow.parameters.%s}}".__mod__
IN = "{{inputs.parameters.%s}}".__mod__
# The store keys hold slugs of the labels; for a label that `validate` accepted (letters,
# digits, . _ -) the slug is its lowercase form, which Argo's expressions can compute.
CAMPAIGN_KEY = "{{=lower(workflow.parameters.campaign)}}"
OCCASION_KEY = "{{=lower(workflow.parameters.occasion)}}"
CELL_TIMEOUT = "{{workflow.outputs.parameters.%s}}" % c.CELL_TIMEOUT_OUTPUT

# ------------------------------------------------------------------ shared pod settings
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


def tmp(size_limit: str) -> EmptyDirVolume:
    """/tmp: the only writable path besides a cell's /data; capped, so a runaway step is evicted
    before it fills the node's disk."""
    return EmptyDirVolume(name="tmp", mount_path="/tmp", size_limit=size_limit)


def resources(cpu: str, memory: str, cpu_limit: str | None, memory_limit: str) -> m.ResourceRequirements:
    limits = {"memory": memory_limit} | ({"cpu": cpu_limit} if cpu_limit else {})
    return m.ResourceRequirements(requests={"cpu": cpu, "memory": memory}, limits=limits)


# What each step needs (requests) and may take (limits). The steps around the cells are small
# Python commands; aggregate and the adaptive check run DuckDB over the run's results; the
# report runs Node (Evidence; `pvbench report build` caps its heap at 2 GiB, and the build peaked
# at ~1.9 GiB RSS in ci/bench_aggregate.py; it requests 3Gi, room for the page cache beside it).
SMALL = resources("100m", "128Mi", "1", "512Mi")
TABLES = resources("500m", "512Mi", "2", "4Gi")
REPORT = resources("1", "3Gi", "2", "5Gi")
# A cell: no CPU limit, on purpose. A CPU limit is a CFS quota: once fio has used it within a
# 100 ms period, it is stopped until the next one, which shows as latency outliers (p99, p99.9)
# and lower IOPS that measure the limit, not the storage. A cell runs alone on its node (pod
# anti-affinity, the node mutex), so there is no neighbour of ours to protect; its request
# gives it its share under contention, and the memory limit still bounds it.
CELL = resources("500m", "256Mi", None, "2Gi")
PULL = "IfNotPresent"  # images are pinned by tag (the chart sets it); kind can side-load them
RUNNER = WF("image")
# Transient trouble only, for the steps around the cells: OnError retries pods that Argo or
# Kubernetes lost (evicted, deleted, executor errors), never a step whose own command failed.
# Cells are not retried (see benchmark-cell).
TRANSIENT = m.RetryStrategy(
    limit="2",
    retry_policy="OnError",
    backoff=m.Backoff(duration="30s", factor="2", max_duration="10m"),
)
MATRIX_ARGS = [
    "--campaign", WF("campaign"),
    "--run", "{{workflow.name}}",
    "--occasion", WF("occasion"),
    "--storage-classes", WF("storage-classes"),
    "--profiles", WF("profile"),
    "--tests", WF("tests"),
    "--repetitions", WF("repetitions"),
    "--seed", WF("seed"),
]  # fmt: skip
TIMING_ARGS = ["--ramp", WF("ramp"), "--runtime", WF("runtime"), "--size", WF("size")]


KUBE_API_VOLUME = "kube-api"
KUBE_API = m.Volume(
    name=KUBE_API_VOLUME,
    projected=m.ProjectedVolumeSource(
        sources=[
            m.VolumeProjection(
                service_account_token=m.ServiceAccountTokenProjection(path="token", expiration_seconds=600)
            ),
            m.VolumeProjection(
                config_map=m.ConfigMapProjection(
                    name="kube-root-ca.crt", items=[m.KeyToPath(key="ca.crt", path="ca.crt")]
                )
            ),
        ]
    ),
)


def run_results_artifact(optional: bool = False) -> S3Artifact:
    """Every result of this run so far, fetched by Argo into a store directory (no S3 credentials in the pod)."""
    prefix = keys.run_results_prefix(CAMPAIGN_KEY, "{{workflow.name}}")
    return S3Artifact(name="results", path=f"{c.STORE_DIR}/{prefix}", key=prefix, optional=optional or None)


def cell_arguments(clients: bool = False) -> list[Parameter]:
    """A fan-out item (`pvbench expand`, or ci-check's `next`) as benchmark-cell's arguments
    (``clients``: client-cell's, whose items also say how many client pods)."""
    keys_ = (*c.FAN_OUT_ITEM_KEYS, "clients") if clients else c.FAN_OUT_ITEM_KEYS
    return [Parameter(name=name.replace("_", "-"), value="{{item.%s}}" % name) for name in keys_]


def cells_done(*tasks: str) -> str:
    """A `depends` that holds once every fan-out ended, however (an empty fan-out is Skipped)."""
    return " && ".join(
        "(" + " || ".join(f"{t}.{phase}" for phase in ("Succeeded", "Failed", "Errored", "Skipped")) + ")"
        for t in tasks
    )


# ------------------------------------------------------------------ the profiles, from the catalog
# Names, test counts and timings come from pvbench's profile catalog; only the extra choices the
# UI offers beside each profile's own timing are stated here.
VOLUME_SIZE = "10Gi"  # the volume-size default
RAMP_CHOICES_S = (30,)
RUNTIME_CHOICES_S = (60, 300)


def _or(parts: list[str]) -> str:
    return ", ".join(parts[:-1]) + " or " + parts[-1] if len(parts) > 1 else parts[0]


def _seconds(value: float) -> str:
    return f"{value:g}s"


def _footprint_bytes(profile: Profile) -> int:
    """The most disk one test of the profile takes on one volume: its file size times its most jobs
    (a multi-client test: one client pod's, each has its own volume)."""
    return max(max_jobs(t, one_client=True) for t in profile.tests) * profile.timing.size_bytes


def _profile_choice(profile: Profile) -> str:
    note = ""
    if _footprint_bytes(profile) > parse_size(VOLUME_SIZE.removesuffix("i")) * 0.95:
        note = f", up to {_footprint_bytes(profile) / 2**30:g} GiB of files: raise volume-size"
    return f"{profile.name} ({len(profile.tests)} tests{note})"


def _each_profiles(what) -> str:
    """'(dbench 2s, vshn 5s, sweep 10s)': one timing of every profile."""
    return "(" + ", ".join(f"{p.name} {what(p.timing)}" for p in PROFILES.values()) + ")"


def _timing_enum(own: str, extra: tuple[float, ...]) -> list[str]:
    """`profile`, then every profile's own value and the extra choices, shortest first."""
    values = {getattr(p.timing, own) for p in PROFILES.values()} | set(extra)
    return [c.PROFILE_DEFAULT, *(_seconds(v) for v in sorted(values))]


P = Parameter
PARAMETERS = [
    P(name="storage-classes", value='["standard"]',
      description='Storage classes to compare, as a JSON list, e.g. ["gp3","io2"]. Each cell gets a fresh PVC of its class.'),
    P(name="profile", value=DEFAULT_PROFILE_NAME, enum=list(PROFILES),
      description=f"Workload profile: {_or([_profile_choice(p) for p in PROFILES.values()])}."),
    P(name="tests", value="",
      description="Only these tests of the profile, comma-separated (empty: all), e.g. randread-iops,seqwrite-bw."),
    P(name="repetitions", value="3", enum=["1", "2", "3", "5", "10"],
      description="Repetitions of every cell. Three or more give confidence intervals."),
    P(name="adaptive-target", value="off", enum=list(c.ADAPTIVE_TARGETS),
      description="Adaptive repetitions: after the planned ones, repeat only the cells whose 95% CI of the mean is "
                  "wider than this share of the mean either side (0.05 = +/-5%), round by round, until all are "
                  f"within it or capped. Every cell then gets at least {c.ADAPTIVE_MIN_REPETITIONS}. "
                  "off: exactly `repetitions` per cell."),
    P(name="adaptive-max-repetitions", value="20", enum=list(c.ADAPTIVE_MAX_REPETITIONS),
      description="Adaptive repetitions: at most this many per cell, and at most this many extra rounds."),
    P(name="seed", value="1", description="Seed of the randomized cell order; the same seed repeats the same order."),
    P(name="ramp", value=c.PROFILE_DEFAULT, enum=_timing_enum("ramp_s", RAMP_CHOICES_S),
      description="fio ramp time before measuring. profile: the profile's own "
                  f"{_each_profiles(lambda t: _seconds(t.ramp_s))}."),
    P(name="runtime", value=c.PROFILE_DEFAULT, enum=_timing_enum("runtime_s", RUNTIME_CHOICES_S),
      description="fio measured runtime per test. profile: the profile's own "
                  f"{_each_profiles(lambda t: _seconds(t.runtime_s))}."),
    P(name="size", value=c.PROFILE_DEFAULT,
      description="fio file size per job, e.g. 1G. profile: the profile's own "
                  f"{_each_profiles(lambda t: t.size)}. Checked against volume-size before anything starts."),
    P(name="volume-size", value=VOLUME_SIZE,
      description="Size of each fresh PVC, e.g. 10Gi (cloud disks: size sets speed)."),
    P(name="client-volumes", value="own", enum=list(CLIENT_VOLUMES),
      description="Multi-client tests (the scaling profile): own = each client pod gets its own fresh PVC of the "
                  "class (ReadWriteOnce); shared = all N client pods of a cell mount one fresh ReadWriteMany PVC of "
                  "the class, each writing in its own directory (CephFS, NFS, RWX block): the class must offer RWX."),
    P(name="volume-timeout", value="10m",
      description="How long a cell may wait for its fresh volume (provisioned, attached, mounted) before it fails; "
                  "the cell's deadline is this plus its fio time, so a volume that never binds cannot hold the node."),
    P(name="campaign", value="default",
      description="Campaign label: groups runs that are compared together (letters, digits, . _ -)."),
    P(name="occasion", value="adhoc",
      description="Occasion label: when the run happens (weekday-office, weekday-night, weekend, adhoc)."),
    P(name="role", value="adhoc", enum=["adhoc", "baseline", "candidate"],
      description="Role of this run in a comparison: candidate = after a storage change (set by the Sensor)."),
    P(name="trigger", value="manual", description="What started the run: manual, cron, storageclass, csi-image, ci."),
    P(name="old-image", value="", description="CSI driver image before the change (set by the Sensor)."),
    P(name="new-image", value="", description="CSI driver image after the change (set by the Sensor)."),
    P(name="changed", value="", description="The object whose change triggered the run, e.g. StorageClass/fast."),
    P(name="node-label", value="kubernetes.io/os",
      description="Benchmark pods run only on nodes with node-label=node-value. Use kubernetes.io/hostname to pin one node."),
    P(name="node-value", value="linux",
      description="Value of node-label. Runs with the same value take turns (mutex pvbench-node-<value>)."),
    P(name="image", value=c.RUNNER_IMAGE, description="Runner image (fio + pvbench)."),
    P(name="report-image", value=c.REPORT_IMAGE, description="Report image (Evidence + pvbench)."),
    P(name="build-report", value="true", enum=["true", "false"],
      description="true = after aggregate, build the campaign's report (Evidence: 1-2 min of CPU, under the node's "
                  "mutex). false = the campaign's tables only; the next run that builds the report shows this run too."),
]  # fmt: skip

with WorkflowTemplate(
    name=c.BENCHMARK_TEMPLATE,
    labels={"app.kubernetes.io/name": "pvbench", "app.kubernetes.io/component": "benchmark"},
    annotations={
        "workflows.argoproj.io/title": "pvbench: benchmark storage classes with fio",
        "workflows.argoproj.io/description": (
            "Validates the parameters, expands storage classes x profile tests x repetitions in a seeded "
            "random order, runs each cell on a fresh PVC of its class (one at a time per node selection), "
            "then aggregates whatever was measured to Parquet and builds the report, naming the cells that "
            "failed. Results, tables and report land in the artifact repository under the pvbench key layout."
        ),
    },
    entrypoint="main",
    on_exit="finish",
    service_account_name=c.SERVICE_ACCOUNT,
    # No step command talks to the Kubernetes API: their containers get no token. Argo's
    # executor (the init and wait containers) still needs one, to report outputs through
    # WorkflowTaskResults: it mounts the executor identity's token Secret (the chart's
    # pvbench-executor.service-account-token), in those containers only.
    automount_service_account_token=False,
    executor=m.ExecutorConfig(service_account_name=c.EXECUTOR_SERVICE_ACCOUNT),
    artifact_repository_ref=m.ArtifactRepositoryRef(
        config_map=c.ARTIFACT_REPOSITORY_CONFIGMAP, key=c.ARTIFACT_REPOSITORY_KEY
    ),
    security_context=POD_SECURITY,
    # One run at a time per node selection: runs with the same node-value (every CronWorkflow
    # occasion, every Sensor candidate, the UI's runs) queue for this mutex, so no two runs
    # disturb each other's numbers. Waiting for it counts against no deadline.
    synchronization=m.Synchronization(mutexes=[m.Mutex(name=c.NODE_MUTEX_PREFIX + WF("node-value"))]),
    # A finished cell's pod goes at once, and its ephemeral PVC (owned by the pod) with it: the
    # volume is freed, and a cloud disk stops being billed, while the run goes on. Its log
    # stays in the artifact repository (archiveLogs), where the Argo UI shows it.
    pod_gc=m.PodGC(
        strategy="OnPodCompletion",
        label_selector=m.LabelSelector(match_labels={c.LABEL_COMPONENT: c.COMPONENT_BENCHMARK}),
    ),
    # A run is labelled with what it is, so the UI and the Sensor's runs can be filtered.
    workflow_metadata=m.WorkflowMetadata(
        labels_from={
            c.LABEL_ROLE: m.LabelValueFrom(expression="workflow.parameters.role"),
            c.LABEL_OCCASION: m.LabelValueFrom(expression="workflow.parameters.occasion"),
            c.LABEL_CAMPAIGN: m.LabelValueFrom(expression="workflow.parameters.campaign"),
        }
    ),
    arguments=PARAMETERS,
) as wt:
    # 1. Bad input fails here, with pvbench's message, before any PVC exists. It also
    #    derives each cell's deadline from the workload (a workflow-wide output).
    validate = Container(
        name="validate",
        image=RUNNER,
        image_pull_policy=PULL,
        command=["pvbench"],
        args=[
            "validate",
            *MATRIX_ARGS,
            *TIMING_ARGS,
            "--volume-size",
            WF("volume-size"),
            "--volume-timeout",
            WF("volume-timeout"),
            "--client-volumes",
            WF("client-volumes"),
            "--outputs",
            c.VALIDATE_OUT_DIR,
        ],  # fmt: skip
        # The chart's limit (benchmark.maxStorageClasses), from its ConfigMap: a parameter of the
        # run cannot raise it. Optional: the rendered template alone uses pvbench's default.
        env=[
            ConfigMapEnv(
                name=c.MAX_STORAGE_CLASSES_ENV,
                config_map_name=c.LIMITS_CONFIGMAP,
                config_map_key=c.MAX_STORAGE_CLASSES_KEY,
                optional=True,
            )
        ],
        security_context=STRICT,
        resources=SMALL,
        volumes=[tmp("64Mi")],
        retry_strategy=TRANSIENT,
        outputs=[
            Parameter(
                name=c.CELL_TIMEOUT_OUTPUT,
                global_name=c.CELL_TIMEOUT_OUTPUT,
                value_from=m.ValueFrom(path=f"{c.VALIDATE_OUT_DIR}/{c.CELL_TIMEOUT_OUTPUT}"),
            )
        ],
    )

    # 2. The cells in the seeded random order, as two fan-outs (output parameters): `cells`, one
    #    pod each, and `client-cells`, N client pods each (a profile with a multi-client test).
    expand = Container(
        name="expand",
        image=RUNNER,
        image_pull_policy=PULL,
        command=["pvbench"],
        args=["expand", *MATRIX_ARGS, "--client-volumes", WF("client-volumes"), "--outputs", c.EXPAND_OUT_DIR],
        security_context=STRICT,
        resources=SMALL,
        volumes=[tmp("64Mi")],
        retry_strategy=TRANSIENT,
        outputs=[Parameter(name=name, value_from=m.ValueFrom(path=f"{c.EXPAND_OUT_DIR}/{name}")) for name in FAN_OUTS],
    )

    # 3. One cell: fio on a fresh PVC of the cell's storage class.
    # The volume: a template-level ephemeral volume, so each pod gets its own PVC of the cell's
    # class ({{inputs.parameters.storage-class}} is substituted in its string fields) and the
    # PVC goes with the pod. Its size cannot be written as {{…}} there (Argo parses templates
    # into Kubernetes types, and a quantity is no string): the literal below is replaced by
    # the run's volume-size through podSpecPatch, a string Argo substitutes and merges into
    # the pod (volumes merge by name).
    # The deadline (`timeout`, from validate): volume-timeout plus the cell's fio time. It
    # counts from when the cell's pod is made, pending included, so a PVC that never binds
    # fails the cell instead of holding the node forever.
    # Not retried: a retried pod template loses Argo's deadline for pods still pending, and a
    # cell that measures only on its second try hides a problem. A failed cell is named in
    # the report; `argo retry` reruns exactly the failed cells, under the same keys.
    # The cell's one Kubernetes call: before fio, it reads its own pod, claim and PV, to record
    # how long the volume took to become usable. Its container alone gets a short-lived token
    # of pvbench-workflow (a projected volume; the pod mounts none), whose Role may only get
    # those objects (the chart's rbac.yaml).
    cell_inputs = [Parameter(name=name.replace("_", "-")) for name in c.FAN_OUT_ITEM_KEYS]
    cell_key = keys.cell_prefix(
        CAMPAIGN_KEY, "{{workflow.name}}", OCCASION_KEY, IN("storage-class"), WF("profile"), IN("workload"), IN("rep")
    )
    cell_args = [
        "--campaign", WF("campaign"),
        "--run", "{{workflow.name}}",
        "--occasion", WF("occasion"),
        "--storage-class", IN("storage-class"),
        "--profile", WF("profile"),
        "--workload", IN("workload"),
        "--rep", IN("rep"),
        "--order", IN("order"),
        "--seed", WF("seed"),
        *TIMING_ARGS,
    ]  # fmt: skip
    label_args = [
        "--label", "role=" + WF("role"),
        "--label", "trigger=" + WF("trigger"),
        "--label", "old-image=" + WF("old-image"),
        "--label", "new-image=" + WF("new-image"),
        "--label", "changed=" + WF("changed"),
    ]  # fmt: skip
    volume_size_patch = {"volumes": [{"name": "target", "ephemeral": {"volumeClaimTemplate": {
        "spec": {"resources": {"requests": {"storage": WF("volume-size")}}}}}}]}  # fmt: skip
    # A fresh volume of the class for each pod (a one-pod cell, or a client pod with its own)
    fresh_volume = dict(
        pod_spec_patch=json.dumps(volume_size_patch, separators=(",", ":")),
        volumes=[
            tmp("256Mi"),
            KUBE_API,
            m.Volume(
                name="target",
                ephemeral=m.EphemeralVolumeSource(
                    volume_claim_template=m.PersistentVolumeClaimTemplate(
                        metadata=m.ObjectMeta(labels={c.LABEL_WORKFLOW: "{{workflow.name}}"}),
                        spec=m.PersistentVolumeClaimSpec(
                            access_modes=["ReadWriteOnce"],
                            storage_class_name=IN("storage-class"),
                            # replaced by volume-size (podSpecPatch above)
                            resources=m.VolumeResourceRequirements(requests={"storage": "1Gi"}),
                        ),
                    )
                ),
            ),
        ],
    )
    # What every fio pod shares: the node selection, the deadline, the token to read its own
    # lifecycle, the volume under test at /data; only one cell's fio pods run on a node at a time.
    fio_pod = dict(
        image=RUNNER,
        image_pull_policy=PULL,
        command=["pvbench"],
        env=[
            FieldEnv(name="PVBENCH_NODE_NAME", field_path="spec.nodeName"),  # recorded in each result
            # the cell reads its own pod, claim and volume: the volume lifecycle (pvbench.kube.lifecycle)
            FieldEnv(name=lifecycle.POD_NAME_ENV, field_path="metadata.name"),
            FieldEnv(name=lifecycle.POD_NAMESPACE_ENV, field_path="metadata.namespace"),
        ],
        security_context=STRICT,
        resources=CELL,
        timeout=CELL_TIMEOUT,
        volume_mounts=[
            m.VolumeMount(name="target", mount_path=c.TARGET_DIR),
            m.VolumeMount(name=KUBE_API_VOLUME, mount_path=SA_DIR, read_only=True),
        ],
        # The node selector picks the node(s); the anti-affinity keeps two cells' benchmark pods
        # off one node even when runs select nodes differently (different node-values).
        node_selector={WF("node-label"): WF("node-value")},
    )
    benchmark_pods = m.LabelSelector(match_labels={c.LABEL_COMPONENT: c.COMPONENT_BENCHMARK})
    result_artifact = S3Artifact(
        name="result",
        path=c.CELL_OUT_DIR,
        key=cell_key,  # the store's key layout, with placeholders; fio-step checks it against the layout
        archive=NoneArchiveStrategy(),
    )
    benchmark_cell = Container(
        name="benchmark-cell",
        inputs=cell_inputs,
        args=[
            "fio-step",
            "--target",
            c.TARGET_DIR,
            *cell_args,
            "--out",
            c.CELL_OUT_DIR,
            "--key",
            cell_key,
            "--cleanup",
            *label_args,
        ],  # fmt: skip
        labels={c.LABEL_COMPONENT: c.COMPONENT_BENCHMARK},
        affinity=m.Affinity(
            pod_anti_affinity=m.PodAntiAffinity(
                required_during_scheduling_ignored_during_execution=[
                    m.PodAffinityTerm(label_selector=benchmark_pods, topology_key="kubernetes.io/hostname")
                ]
            )
        ),
        outputs=[result_artifact],
        **fio_pod,
        **fresh_volume,
    )

    # 3b. A multi-client cell (docs/multi-client.md): N client pods, each with its own fresh PVC
    #     of the class, released together by the cell's start barrier, then one merge step.
    # The barrier: an Argo daemon step (`pvbench barrier`, a TCP server). Argo starts the clients
    # once its readiness probe passes and hands them its pod IP ({{tasks.barrier.ip}}): no pod
    # needs Kubernetes rights for it, and it is stopped when the cell's clients and merge are done.
    barrier_port = str(DEFAULT_BARRIER_PORT)
    cell_barrier = Container(
        name="cell-barrier",
        inputs=[Parameter(name="clients")],
        daemon=True,
        image=RUNNER,
        image_pull_policy=PULL,
        command=["pvbench"],
        args=["barrier", "--clients", IN("clients"), "--timeout", CELL_TIMEOUT, "--port", barrier_port, "--linger"],
        ports=[m.ContainerPort(name="barrier", container_port=DEFAULT_BARRIER_PORT)],
        readiness_probe=m.Probe(tcp_socket=m.TCPSocketAction(port=DEFAULT_BARRIER_PORT), period_seconds=1),
        labels={c.LABEL_COMPONENT: c.COMPONENT_BARRIER},
        security_context=STRICT,
        resources=SMALL,
        volumes=[tmp("16Mi")],
    )
    # A client pod: the cell's job on its volume; its fio lays out its files, then waits for the
    # barrier's GO. Its client.json goes under the cell's key (clients/<n>/) for the merge.
    # The client pods of one cell may share a node (they carry the cell's id), never with
    # another cell's benchmark pods; they prefer distinct nodes, so that N clients load the
    # storage from N nodes where there are N nodes.
    cell_id = "{{workflow.uid}}-" + IN("order")
    this_cells_pods = m.LabelSelector(match_labels={c.LABEL_CELL: cell_id})
    client_affinity = m.Affinity(
        pod_anti_affinity=m.PodAntiAffinity(
            required_during_scheduling_ignored_during_execution=[
                m.PodAffinityTerm(
                    label_selector=m.LabelSelector(
                        match_expressions=[
                            m.LabelSelectorRequirement(
                                key=c.LABEL_COMPONENT, operator="In", values=[c.COMPONENT_BENCHMARK]
                            ),
                            m.LabelSelectorRequirement(key=c.LABEL_CELL, operator="NotIn", values=[cell_id]),
                        ]
                    ),
                    topology_key="kubernetes.io/hostname",
                )
            ],
            preferred_during_scheduling_ignored_during_execution=[
                m.WeightedPodAffinityTerm(
                    weight=100,
                    pod_affinity_term=m.PodAffinityTerm(
                        label_selector=this_cells_pods, topology_key="kubernetes.io/hostname"
                    ),
                )
            ],
        )
    )

    def client_pod(name: str, shared: bool) -> Container:
        """A client pod on a fresh volume of its own, or on the cell's one shared volume (input `claim`)."""
        if shared:
            volume = dict(
                volumes=[
                    tmp("256Mi"),
                    KUBE_API,
                    m.Volume(
                        name="target",
                        persistent_volume_claim=m.PersistentVolumeClaimVolumeSource(claim_name=IN("claim")),
                    ),
                ]
            )
        else:
            volume = fresh_volume
        return Container(
            name=name,
            inputs=[
                *cell_inputs,
                Parameter(name="client"),
                Parameter(name="barrier"),
                *([Parameter(name="claim")] if shared else []),
            ],
            args=[
                "fio-step",
                "--target",
                c.TARGET_DIR,
                *cell_args,
                "--client",
                IN("client"),
                "--barrier",
                IN("barrier"),
                *(["--shared-volume"] if shared else []),
                "--out",
                c.CLIENT_OUT_DIR,
                "--cleanup",
            ],  # fmt: skip
            labels={c.LABEL_COMPONENT: c.COMPONENT_BENCHMARK, c.LABEL_CELL: cell_id},
            affinity=client_affinity,
            outputs=[
                S3Artifact(
                    name="client",
                    path=c.CLIENT_OUT_DIR,
                    key=f"{cell_key}/{CLIENTS_DIR}/{IN('client')}",
                    archive=NoneArchiveStrategy(),
                )
            ],
            **fio_pod,
            **volume,
        )

    fio_client = client_pod("fio-client", shared=False)
    fio_client_shared = client_pod("fio-client-shared", shared=True)
    # The merge: the N client outputs (fetched by Argo from under the cell's key) -> the cell's
    # one result.json and fio.json, under the cell's key, as a one-pod cell stores them.
    merge_clients = Container(
        name="merge-clients",
        inputs=[
            *cell_inputs,
            S3Artifact(name="clients", path=c.CLIENTS_IN_DIR, key=f"{cell_key}/{CLIENTS_DIR}"),
        ],
        image=RUNNER,
        image_pull_policy=PULL,
        command=["pvbench"],
        args=[
            "fio-step",
            *cell_args,
            "--merge",
            c.CLIENTS_IN_DIR,
            "--out",
            c.CELL_OUT_DIR,
            "--key",
            cell_key,
            *label_args,
        ],  # fmt: skip
        security_context=STRICT,
        resources=SMALL,
        volumes=[tmp("256Mi")],
        retry_strategy=TRANSIENT,
        outputs=[result_artifact],
    )
    # client-volumes=shared: the cell's one ReadWriteMany claim of the class, made before the
    # clients and deleted after the merge, by the only identity that may (pvbench-volumes, the
    # chart's benchmark.sharedClientVolumes). The workflow owns it too, so a claim a stopped run
    # left behind goes when the workflow is deleted. Argo's own container runs these steps: their
    # resources come in by podSpecPatch.
    argo_step_resources = json.dumps({"containers": [{"name": "main", "resources": {
        "requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}}}]},
        separators=(",", ":"))  # fmt: skip
    shared_claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "generateName": "pvbench-shared-",
            "labels": {c.LABEL_WORKFLOW: "{{workflow.name}}", c.LABEL_CELL: cell_id},
        },
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": IN("storage-class"),
            "resources": {"requests": {"storage": WF("volume-size")}},
        },
    }
    shared_volume = Resource(
        name="shared-volume",
        inputs=cell_inputs,
        action="create",
        set_owner_reference=True,
        manifest=json.dumps(shared_claim, indent=1),
        service_account_name=c.VOLUMES_SERVICE_ACCOUNT,
        executor=m.ExecutorConfig(service_account_name=c.VOLUMES_SERVICE_ACCOUNT),
        pod_spec_patch=argo_step_resources,
        retry_strategy=TRANSIENT,
        outputs=[Parameter(name="claim", value_from=m.ValueFrom(json_path="{.metadata.name}"))],
    )
    release_volume = Resource(
        name="release-volume",
        inputs=[Parameter(name="claim")],
        action="delete",
        service_account_name=c.VOLUMES_SERVICE_ACCOUNT,
        executor=m.ExecutorConfig(service_account_name=c.VOLUMES_SERVICE_ACCOUNT),
        pod_spec_patch=argo_step_resources,
        retry_strategy=TRANSIENT,
        flags=["persistentvolumeclaim", IN("claim"), "--ignore-not-found", "--wait=false"],
    )
    passed_on = [Parameter(name=p.name, value=IN(p.name)) for p in cell_inputs]

    def client_arguments(*extra: Parameter) -> list[Parameter]:
        return [
            *passed_on,
            Parameter(name="client", value="{{item}}"),
            Parameter(name="barrier", value="{{tasks.barrier.ip}}:" + barrier_port),
            *extra,
        ]

    barrier_arguments = [Parameter(name="clients", value=IN("clients"))]
    each_client = m.Sequence(start="1", count=IN("clients"))
    with DAG(name="client-cell", inputs=[*cell_inputs, Parameter(name="clients")]) as client_cell:
        t_barrier = Task(name="barrier", template=cell_barrier, arguments=barrier_arguments)
        t_client = Task(name="client", template=fio_client, with_sequence=each_client, arguments=client_arguments())
        t_merge = Task(name="merge", template=merge_clients, arguments=passed_on)
        t_barrier >> t_client >> t_merge
    # Shared: the claim is released whatever became of the clients and the merge. failFast off,
    # or a failed client would stop the release; the DAG's targets are the merge and the
    # release, so a failed client (merge omitted) still fails the cell.
    claim = "{{tasks.volume.outputs.parameters.claim}}"
    with DAG(
        name="shared-client-cell",
        inputs=[*cell_inputs, Parameter(name="clients")],
        fail_fast=False,
        target="merge release",
    ) as shared_client_cell:
        s_barrier = Task(name="barrier", template=cell_barrier, arguments=barrier_arguments)
        s_volume = Task(name="volume", template=shared_volume, arguments=passed_on)
        s_client = Task(
            name="client",
            template=fio_client_shared,
            with_sequence=each_client,
            arguments=client_arguments(Parameter(name="claim", value=claim)),
        )
        s_merge = Task(name="merge", template=merge_clients, arguments=passed_on)
        s_release = Task(name="release", template=release_volume, arguments=[Parameter(name="claim", value=claim)])
        [s_barrier, s_volume] >> s_client >> s_merge
        s_release.depends = "volume.Succeeded && (merge.Succeeded || merge.Failed || merge.Errored || merge.Omitted)"

    # 4. DuckDB over the run's results (fetched from the artifact repository by Argo, so the
    #    pod holds no S3 credentials) and the compacts of the campaign's earlier runs: the run is
    #    compacted once (its compact goes back under compact/), and the campaign's tables, every
    #    run pooled, go back under analytics/…/run=all. Part of the exit handler: it runs however
    #    the cells went (failed, errored, stopped), with Argo's list of failed nodes, so the
    #    report names every cell that has no result.
    run_compact = keys.run_compact_prefix(CAMPAIGN_KEY, "{{workflow.name}}")
    compacts = keys.campaign_compacts_prefix(CAMPAIGN_KEY)
    aggregate = Container(
        name="aggregate",
        inputs=[
            run_results_artifact(optional=True),
            # the first run of a campaign has no compacts yet
            S3Artifact(name="compacts", path=f"{c.STORE_DIR}/{compacts}", key=compacts, optional=True),
        ],
        image=RUNNER,
        image_pull_policy=PULL,
        command=["pvbench"],
        args=[
            "aggregate",
            "--store",
            c.STORE_DIR,
            "--campaign",
            WF("campaign"),
            "--run",
            "{{workflow.name}}",
            "--out",
            c.ANALYTICS_DIR,
            "--argo-failures",
            "{{workflow.failures}}",
            "--argo-status",
            "{{workflow.status}}",
            # the pod writes back its run's compact only (no S3 credentials): a campaign
            # snapshot made here would be thrown away
            "--no-snapshot",
        ],  # fmt: skip
        security_context=STRICT,
        resources=TABLES,
        volumes=[tmp("4Gi")],
        retry_strategy=TRANSIENT,
        outputs=[
            S3Artifact(
                name="analytics",
                path=c.ANALYTICS_DIR,
                key=keys.campaign_analytics_prefix(CAMPAIGN_KEY),
                archive=NoneArchiveStrategy(),
            ),
            S3Artifact(
                name="compact",
                path=f"{c.STORE_DIR}/{run_compact}",
                key=run_compact,
                archive=NoneArchiveStrategy(),
            ),
        ],
    )

    # 5. The campaign's Evidence site (every run, selectable on its Runs page), stored unarchived
    #    under the campaign's report key. Then `pvbench report locate` says where: its log and the
    #    workflow outputs report-location (s3://<bucket>/…/report/, what `pvbench report serve`
    #    opens) and report-url (the chart's report.url, filled in). The bucket and the URL
    #    template come from the chart's ConfigMap pvbench-report (optional: the rendered template
    #    alone prints the key).
    report_key = keys.campaign_report_prefix(CAMPAIGN_KEY)
    report = Container(
        name="report",
        inputs=[Artifact(name="analytics", path=c.ANALYTICS_DIR)],
        image=WF("report-image"),
        image_pull_policy=PULL,
        # Evidence builds inside its project (data/, .evidence/, build/): the image's is on the
        # read-only root, so the build happens in a working copy on /tmp (an emptyDir), where the
        # image's PVBENCH_REPORT_WORKDIR says, its node_modules linked, not copied.
        # The run's values reach `locate` as arguments ("$@"), never inside the script: this
        # step runs even when validate refused them.
        command=["sh", "-c"],
        args=[
            f"set -e; pvbench report build --data {c.ANALYTICS_DIR} --out {c.SITE_DIR}; "
            'exec pvbench report locate "$@"',
            "report-locate",  # $0
            "--key",
            report_key,
            "--campaign",
            WF("campaign"),
            "--run",
            "{{workflow.name}}",
            "--namespace",
            "{{workflow.namespace}}",
            "--outputs",
            c.REPORT_OUT_DIR,
        ],  # fmt: skip
        env=[
            ConfigMapEnv(name=env, config_map_name=c.REPORT_CONFIGMAP, config_map_key=key, optional=True)
            for env, key in (("PVBENCH_REPORT_STORE", "store"), ("PVBENCH_REPORT_URL", "url"))
        ],
        security_context=STRICT,
        resources=REPORT,
        volumes=[tmp("4Gi")],
        retry_strategy=TRANSIENT,
        outputs=[
            S3Artifact(
                name="report",
                path=c.SITE_DIR,
                key=report_key,
                archive=NoneArchiveStrategy(),
            ),
            *[
                Parameter(
                    name=name, global_name=name, value_from=m.ValueFrom(path=f"{c.REPORT_OUT_DIR}/{name}", default="")
                )
                for name in (c.REPORT_LOCATION_OUTPUT, c.REPORT_URL_OUTPUT)
            ],
        ],
    )

    # Exit handler: a cell pod still pending when its deadline passed (a volume that never
    # bound) is not complete, so pod GC leaves it: delete the run's benchmark pods that remain
    # (their PVCs go with them), under an identity that may do only that.
    # Its container is Argo's own (argoexec), running with the executor's token: here the
    # cleanup identity's, the only one that may delete pods. Its resources come in by
    # podSpecPatch (a resource template has no container of its own to set them on).
    cleanup = Resource(
        name="cleanup",
        action="delete",
        service_account_name=c.CLEANUP_SERVICE_ACCOUNT,
        executor=m.ExecutorConfig(service_account_name=c.CLEANUP_SERVICE_ACCOUNT),
        pod_spec_patch=json.dumps(
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
        ),  # fmt: skip
        flags=[
            "pods",
            "--selector",
            f"workflows.argoproj.io/workflow={{{{workflow.name}}}},{c.LABEL_COMPONENT}={c.COMPONENT_BENCHMARK}",
            "--ignore-not-found",
            "--wait=false",
        ],  # fmt: skip
    )

    # Adaptive repetitions, step 1 of a round: is every cell precise enough yet? ci-check over
    # the run's results so far (fetched by Argo like aggregate's, so no S3 credentials here).
    # It exits 0 either way (--exit-zero): needing more is an answer, not a failure. Its
    # answer goes out as two output parameters: `next` (the cells to repeat, shaped like
    # `pvbench expand` items) and `more` (true/false). A cell with adaptive-max-repetitions
    # values is done, precise or not.
    adaptive_check = Container(
        name="adaptive-check",
        inputs=[Parameter(name="round"), run_results_artifact()],
        image=RUNNER,
        image_pull_policy=PULL,
        command=["pvbench"],
        args=[
            "stats",
            "ci-check",
            "--store",
            c.STORE_DIR,
            "--campaign",
            WF("campaign"),
            "--run",
            "{{workflow.name}}",
            "--target",
            WF("adaptive-target"),
            "--min-reps",
            str(c.ADAPTIVE_MIN_REPETITIONS),
            "--max-reps",
            WF("adaptive-max-repetitions"),
            "--seed",
            WF("seed"),
            "--round",
            IN("round"),
            "--exit-zero",
            "--client-volumes",
            WF("client-volumes"),
            "--outputs",
            c.CHECK_OUT_DIR,
        ],  # fmt: skip
        security_context=STRICT,
        resources=TABLES,
        volumes=[tmp("4Gi")],
        retry_strategy=TRANSIENT,
        outputs=[
            *[
                Parameter(name=name, value_from=m.ValueFrom(path=f"{c.CHECK_OUT_DIR}/{name}.json"))
                for name in NEXT_ROUND.values()
            ],
            Parameter(name="more", value_from=m.ValueFrom(path=f"{c.CHECK_OUT_DIR}/more")),
        ],
    )

    # Adaptive repetitions, one round: check -> fan out only the `next` cells (the same
    # benchmark-cell template, so a fresh PVC each) -> the next round.
    # Why recursion: Argo has no while loop. A DAG template that calls itself under a
    # `when` is Argo's documented way to repeat until a step says stop (the recursive
    # coinflip example); a retryStrategy loop can repeat one pod but not a fan-out, and
    # unrolling a fixed number of rounds would put up to 30 mostly skipped rounds in every
    # run's graph. Recursion only adds a level when a round is really needed.
    # Why it stops: the round counter. Each call passes round + 1 and keeps max-rounds
    # (adaptive-max-repetitions, an enum, so at most 30); the recursive call's `when`
    # requires round < max-rounds, so there are at most max-rounds rounds whatever
    # ci-check answers. ci-check's own cap (a cell with max-repetitions values is done)
    # normally ends it sooner: each round adds one repetition to each cell still imprecise.
    # The depth stays far below Argo's recursion limit (150 nested templates).
    more = "{{tasks.check.outputs.parameters.more}} == true"
    with DAG(
        name="adaptive",
        inputs=[Parameter(name="round"), Parameter(name="max-rounds")],
        fail_fast=False,
        parallelism=1,  # one cell at a time, as in main
    ) as adaptive:
        a_check = Task(name="check", template=adaptive_check, arguments=[Parameter(name="round", value=IN("round"))])
        a_cells = Task(
            name="benchmark",
            template=benchmark_cell,
            with_param="{{tasks.check.outputs.parameters.%s}}" % NEXT_ROUND[CELLS_FAN_OUT],
            when=more,
            arguments=cell_arguments(),
        )
        a_client_cells = Task(
            name="benchmark-clients",
            template=client_cell,
            with_param="{{tasks.check.outputs.parameters.%s}}" % NEXT_ROUND[CLIENT_CELLS_FAN_OUT],
            when=more,
            arguments=cell_arguments(clients=True),
        )
        a_shared_client_cells = Task(
            name="benchmark-shared-clients",
            template=shared_client_cell,
            with_param="{{tasks.check.outputs.parameters.%s}}" % NEXT_ROUND[SHARED_CLIENT_CELLS_FAN_OUT],
            when=more,
            arguments=cell_arguments(clients=True),
        )
        a_next = Task(
            name="next-round",
            template="adaptive",  # itself
            when=more + " && {{inputs.parameters.round}} < {{inputs.parameters.max-rounds}}",
            arguments=[
                Parameter(name="round", value="{{=asInt(inputs.parameters.round) + 1}}"),
                Parameter(name="max-rounds", value=IN("max-rounds")),
            ],
        )
        a_check >> [a_cells, a_client_cells, a_shared_client_cells]
        # The next round also follows a round in which some cells failed.
        a_next.depends = cells_done("benchmark", "benchmark-clients", "benchmark-shared-clients")

    # failFast off: one failing cell must not stop the others from being measured.
    # One cell at a time (parallelism, counted in this DAG's children: a one-pod cell, or a
    # multi-client cell's whole DAG of barrier, N clients and merge): a cell measures the storage
    # alone, and the steps around the cells are sequential anyway. Runs sharing a node selection
    # take turns (the mutex); cells of different runs never share a node (the anti-affinity).
    with DAG(name="main", fail_fast=False, parallelism=1):
        t_validate = Task(name="validate", template=validate)
        t_expand = Task(name="expand", template=expand)
        t_cells = Task(
            name="benchmark",
            template=benchmark_cell,
            with_param="{{tasks.expand.outputs.parameters.%s}}" % CELLS_FAN_OUT,
            arguments=cell_arguments(),
        )
        t_client_cells = Task(
            name="benchmark-clients",
            template=client_cell,
            with_param="{{tasks.expand.outputs.parameters.%s}}" % CLIENT_CELLS_FAN_OUT,
            arguments=cell_arguments(clients=True),
        )
        t_shared_client_cells = Task(
            name="benchmark-shared-clients",
            template=shared_client_cell,
            with_param="{{tasks.expand.outputs.parameters.%s}}" % SHARED_CLIENT_CELLS_FAN_OUT,
            arguments=cell_arguments(clients=True),
        )
        t_adaptive = Task(
            name="adaptive",
            template=adaptive,
            when="'{{workflow.parameters.adaptive-target}}' != 'off'",
            arguments=[
                Parameter(name="round", value="1"),
                Parameter(name="max-rounds", value=WF("adaptive-max-repetitions")),
            ],
        )
        t_validate >> t_expand >> [t_cells, t_client_cells, t_shared_client_cells]
        # Adapt also after a round in which some cells failed or errored.
        t_adaptive.depends = cells_done("benchmark", "benchmark-clients", "benchmark-shared-clients")

    # The exit handler: whatever the run's phase (cells failed, a stop from the UI, a
    # deadline), free what is left and tabulate and report what was measured.
    # In sequence, not cleanup beside aggregate: with the workflow's parallelism reached, Argo
    # v3.7's controller records an exit-handler task it could not start yet as a child without
    # a node, and then exits fatally ("was unable to get child node name", argo-workflows
    # #14392); one task at a time never reaches that limit.
    # aggregate ─▶ report hold the campaign's mutex: two runs of one campaign that finish together
    # (different node-values: each holds its own node's mutex) would otherwise both read the
    # campaign's compacts before either had written its own, and the tables and the report stored
    # last would lack the other run until the campaign's next run. In turn, the second reads the
    # first's compact; its tables and report are the campaign's with both runs.
    with DAG(
        name="publish",
        fail_fast=False,
        synchronization=m.Synchronization(mutexes=[m.Mutex(name=c.CAMPAIGN_MUTEX_PREFIX + CAMPAIGN_KEY)]),
    ) as publish:
        t_aggregate = Task(name="aggregate", template=aggregate)
        t_report = Task(
            name="report",
            template=report,
            when=f"'{WF('build-report')}' == 'true'",
            arguments=[Artifact(name="analytics", from_="{{tasks.aggregate.outputs.artifacts.analytics}}")],
        )
        t_aggregate >> t_report

    with DAG(name="finish", fail_fast=False):
        t_cleanup = Task(name="cleanup", template=cleanup)
        t_publish = Task(name="publish", template=publish)
        # aggregate whether or not cleanup managed (a cleanup error must not lose the report)
        t_publish.depends = "cleanup.Succeeded || cleanup.Failed || cleanup.Errored"

MANIFESTS = [wt]
