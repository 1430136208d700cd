"""The run's parameters (the Argo UI's form): names, defaults, choices, from pvbench's profile catalog."""

from hera.workflows import Parameter

from pvbench.argo import conventions as c
from pvbench.cells.guards import GUARD_LIST
from pvbench.cells.matrix import CLIENT_VOLUMES, MAX_CELLS_PER_POD
from pvbench.cells.run import max_jobs
from pvbench.profiles import DEFAULT_PROFILE_NAME, PROFILES, Profile, parse_size
from pvbench.results.volume import BLOCK, DEFAULT_ACCESS_MODE, DEFAULT_VOLUME_MODE, READ_WRITE_MANY

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


PARAMETERS = [
    Parameter(
        name="storage-classes",
        value='["standard"]',
        description='Storage classes to compare, as a JSON list, e.g. ["gp3","io2"]. Each cell gets a fresh PVC of its class.',
    ),
    Parameter(
        name="profile",
        value=DEFAULT_PROFILE_NAME,
        enum=list(PROFILES),
        description=f"Workload profile: {_or([_profile_choice(p) for p in PROFILES.values()])}.",
    ),
    Parameter(
        name="tests",
        value="",
        description="Only these tests of the profile, comma-separated (empty: all), e.g. randread-iops,seqwrite-bw.",
    ),
    Parameter(
        name="repetitions",
        value="3",
        enum=["1", "2", "3", "5", "10"],
        description="Repetitions of every cell. Three or more give confidence intervals.",
    ),
    Parameter(
        name="adaptive-target",
        value="off",
        enum=list(c.ADAPTIVE_TARGETS),
        description=(
            "Adaptive repetitions: after the planned ones, repeat only the cells whose 95% CI of the mean is "
            "wider than this share of the mean either side (0.05 = +/-5%), round by round, until all are "
            f"within it or capped. Every cell then gets at least {c.ADAPTIVE_MIN_REPETITIONS}. "
            "off: exactly `repetitions` per cell."
        ),
    ),
    Parameter(
        name="adaptive-max-repetitions",
        value="20",
        enum=list(c.ADAPTIVE_MAX_REPETITIONS),
        description="Adaptive repetitions: at most this many per cell, and at most this many extra rounds.",
    ),
    Parameter(
        name="seed", value="1", description="Seed of the randomized cell order; the same seed repeats the same order."
    ),
    Parameter(
        name="ramp",
        value=c.PROFILE_DEFAULT,
        enum=_timing_enum("ramp_s", RAMP_CHOICES_S),
        description=(
            "fio ramp time before measuring. profile: the profile's own "
            f"{_each_profiles(lambda t: _seconds(t.ramp_s))}."
        ),
    ),
    Parameter(
        name="runtime",
        value=c.PROFILE_DEFAULT,
        enum=_timing_enum("runtime_s", RUNTIME_CHOICES_S),
        description=(
            "fio measured runtime per test. profile: the profile's own "
            f"{_each_profiles(lambda t: _seconds(t.runtime_s))}."
        ),
    ),
    Parameter(
        name="size",
        value=c.PROFILE_DEFAULT,
        description=(
            "fio file size per job, e.g. 1G. profile: the profile's own "
            f"{_each_profiles(lambda t: t.size)}. Checked against volume-size before anything starts."
        ),
    ),
    Parameter(
        name="volume-size",
        value=VOLUME_SIZE,
        description="Size of each fresh PVC, e.g. 10Gi (cloud disks: size sets speed).",
    ),
    Parameter(
        name="cells-per-pod",
        value="1",
        enum=[str(n) for n in range(1, MAX_CELLS_PER_POD + 1)],
        description=(
            "Cells run one after another in one pod, each on its own fresh PVC of its class, in the same "
            "random order. 1: a pod per cell. More: Argo's cost per step (~10 s at its default requeue time, "
            "plus the pod's start) is paid once per pod, so short cells run at fio speed; that many PVCs "
            "exist at once (mind quotas and per-node volume attach limits). Multi-client cells: always "
            "their own pods."
        ),
    ),
    Parameter(
        name="volume-modes",
        value=DEFAULT_VOLUME_MODE,
        enum=[DEFAULT_VOLUME_MODE, BLOCK, f"{DEFAULT_VOLUME_MODE} {BLOCK}"],
        description=(
            "The cells' volume mode (a PVC's volumeMode): Filesystem = fio's files on the volume's filesystem; "
            "Block = a raw block volume, fio on the device itself (no filesystem, no page cache; the class must "
            "offer Block volumes, and the node's container runtime must give non-root containers its devices: "
            "containerd's device_ownership_from_security_context). Both = each cell twice, the class's two "
            "shapes reported as two rows."
        ),
    ),
    Parameter(
        name="access-modes",
        value=DEFAULT_ACCESS_MODE,
        enum=[DEFAULT_ACCESS_MODE, READ_WRITE_MANY, f"{DEFAULT_ACCESS_MODE} {READ_WRITE_MANY}"],
        description=(
            "The cells' access mode (a PVC's accessModes): ReadWriteOnce, or ReadWriteMany (NFS, CephFS, "
            "Longhorn RWX: often another data path than the class's RWO volumes, reported as a row of its own). "
            "client-volumes=shared needs ReadWriteMany."
        ),
    ),
    Parameter(
        name="client-volumes",
        value="own",
        enum=list(CLIENT_VOLUMES),
        description=(
            "Multi-client tests (the scaling profile): own = each client pod gets its own fresh PVC of the "
            "class (ReadWriteOnce); shared = all N client pods of a cell mount one fresh ReadWriteMany PVC of "
            "the class, each writing in its own directory (CephFS, NFS): the class must offer RWX, and access-modes be ReadWriteMany."
        ),
    ),
    Parameter(
        name="volume-timeout",
        value="10m",
        description=(
            "How long a cell may wait for its fresh volume (provisioned, attached, mounted) before it fails: "
            "a cell pod still unscheduled after it (its volume never bound) is failed then by the chart's guard; "
            "the cell's whole deadline is this plus its fio time, so no volume can hold the node."
        ),
    ),
    Parameter(
        name="keep-flagged",
        value="",
        description=(
            "Guard rules whose flagged cells still count in this run's statistics, comma-separated: "
            + ", ".join(f"{g.rule} ({g.title.lower()})" for g in GUARD_LIST if g.excluded)
            + ". Empty: a flagged cell is marked and left out of rankings and verdicts. Checked by validate."
        ),
    ),
    Parameter(
        name="campaign",
        value="default",
        description="Campaign label: groups runs that are compared together (letters, digits, . _ -).",
    ),
    Parameter(
        name="occasion",
        value="adhoc",
        description="Occasion label: when the run happens (weekday-office, weekday-night, weekend, adhoc).",
    ),
    Parameter(
        name="role",
        value="adhoc",
        enum=["adhoc", "baseline", "candidate"],
        description="Role of this run in a comparison: candidate = after a storage change (set by the Sensor).",
    ),
    Parameter(
        name="trigger", value="manual", description="What started the run: manual, cron, storageclass, csi-image, ci."
    ),
    Parameter(name="old-image", value="", description="CSI driver image before the change (set by the Sensor)."),
    Parameter(name="new-image", value="", description="CSI driver image after the change (set by the Sensor)."),
    Parameter(
        name="changed", value="", description="The object whose change triggered the run, e.g. StorageClass/fast."
    ),
    Parameter(
        name="node-label",
        value="kubernetes.io/os",
        description="Benchmark pods run only on nodes with node-label=node-value. Use kubernetes.io/hostname to pin one node.",
    ),
    Parameter(
        name="node-value",
        value="linux",
        description="Value of node-label. Runs with the same value take turns (mutex pvbench-node-<value>).",
    ),
    Parameter(name="image", value=c.RUNNER_IMAGE, description="Runner image (fio + pvbench)."),
    Parameter(name="report-image", value=c.REPORT_IMAGE, description="Report image (Evidence + pvbench)."),
    Parameter(
        name="build-report",
        value="true",
        enum=["true", "false"],
        description=(
            "true = after aggregate, build the campaign's report (Evidence: 1-2 min of CPU, under the node's "
            "mutex). false = the campaign's tables only; the next run that builds the report shows this run too."
        ),
    ),
]
