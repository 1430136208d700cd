"""Every named workload profile, declared once as data.

The numbers are those of the published studies (see ../../../README.md, "Profiles"):
- ``dbench``: the thesis's dbench suite, nine fio tests, ramp 2 s + 15 s measured.
- ``vshn``:   VSHN's kubestr/fio runs: 4k IOPS and 128k bandwidth, writes with fsync none/1/32/128.
- ``sweep``:  the NVMe/TCP vendor evaluation: 4 groups × bs 4k/8k/64k/128k × QD1, QD32,
              QD1×32 jobs and the depth/jobs reaching 80% of the QD32 maximum.
- ``scaling``: 1, 2, 4 and 8 clients at once (4k random read / write IOPS): where the total stops growing.
- ``latency-slo``: latency-bounded IOPS — the highest IOPS at which a latency percentile stays
              under a target (p99 ≤ 1 ms for 4k random reads, p99 fdatasync ≤ 10 ms for etcd's
              WAL writes), found by a rate search on the storage under test (cells/slo.py).
- ``soak``:   4k random and 128k sequential writes for up to 20 minutes, ended once fio's
              steadystate criterion holds; read for its per-second series.
"""

from __future__ import annotations

from pvbench.profiles.model import FioTest, LatencySlo, Profile, SteadyState, Timing

DBENCH = Profile(
    name="dbench",
    description="dbench's nine fio tests, as run by the cloud-native storage thesis (4 occasions × 5 repetitions)",
    source="dbench (LogDNA) as used in the thesis on AKS/EKS, 2023",
    timing=Timing(ramp_s=2, runtime_s=15, size="2G"),
    tests=(
        FioTest(name="randread-iops", title="Random read IOPS", rw="randread", bs="4k", iodepth=64, group="iops"),
        FioTest(name="randwrite-iops", title="Random write IOPS", rw="randwrite", bs="4k", iodepth=64, group="iops"),
        FioTest(name="randread-bw", title="Random read bandwidth", rw="randread", bs="128k", iodepth=64, group="bw"),
        FioTest(name="randwrite-bw", title="Random write bandwidth", rw="randwrite", bs="128k", iodepth=64, group="bw"),
        FioTest(name="randread-lat", title="Read latency", rw="randread", bs="4k", iodepth=4, group="latency"),
        FioTest(name="randwrite-lat", title="Write latency", rw="randwrite", bs="4k", iodepth=4, group="latency"),
        FioTest(name="seqread", title="Sequential read", rw="read", bs="1M", iodepth=16, numjobs=4, group="sequential"),
        FioTest(
            name="seqwrite", title="Sequential write", rw="write", bs="1M", iodepth=16, numjobs=4, group="sequential"
        ),
        FioTest(
            name="mixed-randrw",
            title="Mixed random 75/25 IOPS",
            rw="randrw",
            bs="4k",
            iodepth=64,
            rwmixread=75,
            group="mixed",
        ),
    ),
)


def _vshn_tests() -> tuple[FioTest, ...]:
    tests = [
        FioTest(name="read-iops", title="Read IOPS", rw="randread", bs="4k", iodepth=64, group="iops", load="read"),
        FioTest(name="read-bw", title="Read bandwidth", rw="randread", bs="128k", iodepth=64, group="bw", load="read"),
    ]
    for kind, bs, group in (("iops", "4k", "iops"), ("bw", "128k", "bw")):
        for fsync in (0, 1, 32, 128):
            label = "none" if fsync == 0 else str(fsync)
            tests.append(
                FioTest(
                    name=f"write-{kind}-fsync-{label}",
                    title=f"Write {'IOPS' if kind == 'iops' else 'bandwidth'}, fsync={label}",
                    rw="randwrite",
                    bs=bs,
                    iodepth=64,
                    fsync=fsync,
                    group=group,
                    load=f"fsync-{label}",
                )
            )
    return tuple(tests)


VSHN = Profile(
    name="vshn",
    description="VSHN's kubestr/fio storage benchmarks: read/write IOPS and bandwidth, writes with fsync none/1/32/128",
    source="VSHN storage cluster benchmarks on Exoscale (kubestr driving fio), 10 iterations, mean ± sd",
    # VSHN ran with gtod_reduce=1; pvbench keeps latency measurement on (it reports latency).
    timing=Timing(ramp_s=5, runtime_s=30, size="2G"),
    global_options={"randrepeat": "0", "verify": "0"},
    tests=_vshn_tests(),
)

SWEEP_GROUPS = (
    ("randread", "Random read", "randread", None),
    ("randwrite", "Random write", "randwrite", None),
    ("mix70", "Database mix 70/30", "randrw", 70),
    ("mix50", "Balanced mix 50/50", "randrw", 50),
)
SWEEP_BLOCK_SIZES = ("4k", "8k", "64k", "128k")
# (load label, title, iodepth, numjobs, target share of the QD32 maximum)
SWEEP_LOADS = (
    ("qd1", "QD1", 1, 1, None),
    ("qd32", "QD32", 32, 1, None),
    ("qd1x32", "QD1 × 32 jobs", 1, 32, None),
    ("p80", "80% of QD32 max", 32, 1, 0.8),
)


def _sweep_tests() -> tuple[FioTest, ...]:
    tests = []
    for group, group_title, rw, mix in SWEEP_GROUPS:
        for bs in SWEEP_BLOCK_SIZES:
            for load, load_title, depth, jobs, target in SWEEP_LOADS:
                tests.append(
                    FioTest(
                        name=f"{group}-{bs}-{load}",
                        title=f"{group_title}, {bs}, {load_title}",
                        rw=rw,
                        bs=bs,
                        iodepth=depth,
                        numjobs=jobs,
                        rwmixread=mix,
                        group=group,
                        load=load,
                        load_target=target,
                    )
                )
    return tuple(tests)


SWEEP = Profile(
    name="sweep",
    description="Block size × queue depth sweep of the NVMe/TCP vendor evaluation (64 tests)",
    source="Vendor evaluation of an NVMe/TCP data plane on AWS, 2024",
    timing=Timing(ramp_s=10, runtime_s=120, size="4G"),
    tests=_sweep_tests(),
)

# The client counts of the scaling profile: where does the backend's total stop growing?
SCALING_CLIENTS = (1, 2, 4, 8)
SCALING_GROUPS = (("randread", "Random read 4k IOPS", "randread"), ("randwrite", "Random write 4k IOPS", "randwrite"))


def _scaling_tests() -> tuple[FioTest, ...]:
    return tuple(
        FioTest(
            name=f"{group}-iops-x{n}",
            title=f"{title}, {n} client{'s' if n > 1 else ''}",
            rw=rw,
            bs="4k",
            iodepth=16,
            clients=n,
            group=group,
            load=f"x{n}",
        )
        for group, title, rw in SCALING_GROUPS
        for n in SCALING_CLIENTS
    )


SCALING = Profile(
    name="scaling",
    description="Multi-client scaling: 1, 2, 4 and 8 fio clients at once (4k random read and write IOPS, QD16 "
    "each), released together behind a barrier; the total shows where the backend stops growing",
    source="Longhorn PR #7616's 1 → 3 → 6 pods; kubestr #67/#90, PerfKitBenchmarker #875 (issue 14)",
    timing=Timing(ramp_s=5, runtime_s=30, size="1G"),
    tests=_scaling_tests(),
)


LATENCY_SLO = Profile(
    name="latency-slo",
    description="Latency-bounded IOPS: the highest IOPS at which p99 latency stays under a target, "
    "found by a rate search on the storage under test",
    source="etcd's disk guidance (p99 WAL fdatasync < 10 ms; etcd #10577), database p99 ≤ 1 ms read objectives, "
    "PerfKitBenchmarker's fio_latency_sla",
    timing=Timing(ramp_s=2, runtime_s=30, size="2G"),
    tests=(
        FioTest(
            name="randread-4k-p99-1ms",
            title="Random read 4k IOPS at p99 ≤ 1 ms",
            rw="randread",
            bs="4k",
            iodepth=32,
            group="slo",
            slo=LatencySlo(percentile=99, target_us=1000),
        ),
        FioTest(
            name="randwrite-4k-p99-2ms",
            title="Random write 4k IOPS at p99 ≤ 2 ms",
            rw="randwrite",
            bs="4k",
            iodepth=32,
            group="slo",
            slo=LatencySlo(percentile=99, target_us=2000),
        ),
        # etcd's WAL: small sequential appends, each followed by fdatasync, buffered (2300 bytes
        # cannot be O_DIRECT), one writer — the fio job etcd's docs give to vet a disk.
        FioTest(
            name="etcd-fsync-p99-10ms",
            title="etcd WAL writes (2300 B + fdatasync) at p99 fdatasync ≤ 10 ms",
            rw="write",
            bs="2300",
            iodepth=1,
            group="slo",
            slo=LatencySlo(percentile=99, target_us=10_000, latency="sync"),
            extra={"ioengine": "sync", "direct": "0", "fdatasync": "1"},
        ),
    ),
)

# Soak: sustained writes, watched second by second (the result's series) until fio sees them steady.
# Writes, because that is what drifts: an SSD's write cache fills, a thin or burstable cloud volume
# runs out of credits. 20 minutes at most: fio can judge from ss_ramp + window = 6 minutes on, and
# 14 more minutes leave room for a late cliff while a cell (2 tests) stays under 45 minutes a
# repetition. A burst bucket that outlasts 20 minutes can look steady: read the series, not just
# the verdict. The window is 5 minutes (SNIA's PTS judges 5 rounds); a slope under 0.03% of the
# mean per second moves the fitted line by at most 9% over it (the PTS allows 10%).
SOAK_STEADY_STATE = {"window_s": 300, "ramp_s": 60}
SOAK = Profile(
    name="soak",
    description="Sustained writes for up to 20 minutes, ended early once fio sees them steady over 5 minutes; "
    "the per-second series shows write caches filling, burst credits running out and drift",
    source="SNIA Solid State Storage Performance Test Specification (steady state over a 5-round window), "
    "fio's steadystate option",
    timing=Timing(ramp_s=10, runtime_s=1200, size="4G"),
    tests=(
        FioTest(
            name="randwrite-4k-soak",
            title="Random write 4k IOPS, sustained",
            rw="randwrite",
            bs="4k",
            iodepth=32,
            group="iops",
            steady_state=SteadyState(criterion="iops_slope:0.03%", **SOAK_STEADY_STATE),
        ),
        FioTest(
            name="seqwrite-128k-soak",
            title="Sequential write 128k bandwidth, sustained",
            rw="write",
            bs="128k",
            iodepth=16,
            group="sequential",
            steady_state=SteadyState(criterion="bw_slope:0.03%", **SOAK_STEADY_STATE),
        ),
    ),
)

PROFILES: dict[str, Profile] = {p.name: p for p in (DBENCH, VSHN, SWEEP, SCALING, LATENCY_SLO, SOAK)}
# What a run measures when it names no profile (the Argo template's default, `pvbench expand`'s).
DEFAULT_PROFILE_NAME = DBENCH.name

# The catalog as the analytics get it (DuckDB types), as the metric catalog is (``metric_catalog``):
# installed before the models run (analytics.inputs.install_profiles), so that the models and the
# report tables ask which profiles are read as curves (``is_sweep``) and never name one.
PROFILE_TABLE = "profile_catalog"
PROFILE_COLUMNS: dict[str, str] = {"profile": "VARCHAR", "is_sweep": "BOOLEAN"}


def profile_rows() -> list[dict]:
    """The catalog as rows of PROFILE_COLUMNS."""
    return [{"profile": p.name, "is_sweep": p is SWEEP} for p in PROFILES.values()]


def sweep_labels() -> dict[str, dict[str, str]]:
    """The sweep's group and load-level titles by label, in the profile's order: what the report's
    curves are titled and ordered by (rendered into reports/components/profiles.js)."""
    return {
        "groups": {group: title for group, title, _, _ in SWEEP_GROUPS},
        "loads": {load: title for load, title, _, _, _ in SWEEP_LOADS},
    }
