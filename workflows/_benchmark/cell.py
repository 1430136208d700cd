"""benchmark-cell: one cell, fio on a fresh PVC of the cell's storage class, in one pod;
benchmark-pod: several such cells in one pod, one after another, a fresh PVC each."""

from hera.workflows import Container, Parameter, S3Artifact
from hera.workflows import models as m
from hera.workflows.archive import NoneArchiveStrategy

from pvbench.argo import conventions as c
from pvbench.argo import keys
from pvbench.cells.matrix import POD_CELLS_KEY

from .common import (
    CAMPAIGN_KEY,
    CELL_ARGS,
    CELL_INPUTS,
    CELL_KEY,
    HOSTNAME,
    LABEL_ARGS,
    POD_ARGS,
    POD_TIMEOUT,
    RUN,
    options,
)
from .fio import FIO_POD, KUBE_API_MOUNT, RESULT
from .volumes import FRESH_BLOCK_VOLUME, FRESH_VOLUME, POD_VOLUMES

BENCHMARK_PODS = m.LabelSelector(match_labels={c.LABEL_COMPONENT: c.COMPONENT_BENCHMARK})


ONE_AT_A_TIME = m.Affinity(
    pod_anti_affinity=m.PodAntiAffinity(
        required_during_scheduling_ignored_during_execution=[
            m.PodAffinityTerm(label_selector=BENCHMARK_PODS, topology_key=HOSTNAME)
        ]
    )
)


def benchmark_cell(block: bool = False) -> Container:
    """Not retried: a retried pod template loses Argo's deadline for pods still pending, and a
    cell that measures only on its second try hides a problem. A failed cell is named in the
    report; `argo retry` reruns exactly the failed cells, under the same keys.

    ``block``: benchmark-block-cell, on a raw Block volume of the class: the container gets the
    fresh volume as the device /dev/pvbench-target (volumeDevices) and fio runs on it, no
    filesystem between. The device is the cell's own fresh volume: fio may overwrite it."""
    target = c.TARGET_DEVICE if block else c.TARGET_DIR
    mounts = {"volume_devices": [m.VolumeDevice(name="target", device_path=target)]} if block else {}
    return Container(
        name="benchmark-block-cell" if block else "benchmark-cell",
        inputs=CELL_INPUTS,
        args=[
            "fio-step",
            *options(target=target),
            *CELL_ARGS,
            *options(out=c.CELL_OUT_DIR, key=CELL_KEY, cleanup=not block),
            *LABEL_ARGS,
        ],
        labels={c.LABEL_COMPONENT: c.COMPONENT_BENCHMARK},
        affinity=ONE_AT_A_TIME,
        outputs=[RESULT],
        # a Block volume is never mounted: only the API token is
        **({**FIO_POD, "volume_mounts": [KUBE_API_MOUNT], **mounts} if block else FIO_POD),
        **(FRESH_BLOCK_VOLUME if block else FRESH_VOLUME),
    )


def benchmark_pod() -> Container:
    """cells-per-pod > 1: the pod's cells one after another (`pvbench fio-pod`), cell i on its own
    fresh volume of its class at /data/i (POD_VOLUMES). Argo's cost per step (the controller
    looks at a workflow every DEFAULT_REQUEUE_TIME, 10 s by default, the pod and its start) is
    paid once per pod instead of once per cell (docs/kubernetes.md, "Cells per pod").
    Its cells' result files go out as one directory under the run's results prefix, each under
    its own key (the same keys as benchmark-cell's), also when some cells failed (optional: when
    all did). The UI shows the cells done as the node's progress (3/8); a failed cell does not
    stop the others, and the pod's message names each failed one. Not retried, as benchmark-cell;
    `argo retry` reruns the pod's cells, the failed and the measured."""
    return Container(
        name="benchmark-pod",
        inputs=[Parameter(name=POD_CELLS_KEY)],
        args=[
            "fio-pod",
            *options(targets=c.TARGET_DIR, cells="{{inputs.parameters.%s}}" % POD_CELLS_KEY),
            *POD_ARGS,
            *options(out=c.POD_OUT_DIR, key=RUN_RESULTS_KEY, cleanup=True),
            *LABEL_ARGS,
        ],
        labels={c.LABEL_COMPONENT: c.COMPONENT_BENCHMARK},
        affinity=ONE_AT_A_TIME,
        outputs=[
            S3Artifact(
                name="results", path=c.POD_OUT_DIR, key=RUN_RESULTS_KEY, archive=NoneArchiveStrategy(), optional=True
            )
        ],
        **{**FIO_POD, "timeout": POD_TIMEOUT, "volume_mounts": [KUBE_API_MOUNT]},  # + a mount per cell (POD_VOLUMES)
        **POD_VOLUMES,
    )


RUN_RESULTS_KEY = keys.run_results_prefix(CAMPAIGN_KEY, RUN)
