"""benchmark-cell: one cell, fio on a fresh PVC of the cell's storage class, in one pod."""

from hera.workflows import Container
from hera.workflows import models as m

from pvbench.argo import conventions as c

from .common import CELL_ARGS, CELL_INPUTS, CELL_KEY, HOSTNAME, LABEL_ARGS, options
from .fio import FIO_POD, RESULT
from .volumes import FRESH_VOLUME

BENCHMARK_PODS = m.LabelSelector(match_labels={c.LABEL_COMPONENT: c.COMPONENT_BENCHMARK})


def benchmark_cell() -> Container:
    """Not retried: a retried pod template loses Argo's deadline for pods still pending, and a
    cell that measures only on its second try hides a problem. A failed cell is named in the
    report; `argo retry` reruns exactly the failed cells, under the same keys."""
    return Container(
        name="benchmark-cell",
        inputs=CELL_INPUTS,
        args=[
            "fio-step",
            *options(target=c.TARGET_DIR),
            *CELL_ARGS,
            *options(out=c.CELL_OUT_DIR, key=CELL_KEY, cleanup=True),
            *LABEL_ARGS,
        ],
        labels={c.LABEL_COMPONENT: c.COMPONENT_BENCHMARK},
        affinity=m.Affinity(
            pod_anti_affinity=m.PodAntiAffinity(
                required_during_scheduling_ignored_during_execution=[
                    m.PodAffinityTerm(label_selector=BENCHMARK_PODS, topology_key=HOSTNAME)
                ]
            )
        ),
        outputs=[RESULT],
        **FIO_POD,
        **FRESH_VOLUME,
    )
