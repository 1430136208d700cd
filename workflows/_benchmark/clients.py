"""A multi-client cell (docs/multi-client.md): N client pods, each with its own fresh PVC of the
class (or all on the cell's one shared claim), released together by the cell's start barrier,
then one merge step.

    client-cell:         barrier (daemon) ─▶ fio-client × N ─▶ merge-clients
    shared-client-cell:  barrier, shared-volume ─▶ fio-client-shared × N ─▶ merge-clients ─▶ release-volume
"""

from hera.workflows import DAG, Container, Parameter, Resource, S3Artifact, Task
from hera.workflows import models as m
from hera.workflows.archive import NoneArchiveStrategy

from pvbench.argo import conventions as c
from pvbench.fio.pod_barrier import DEFAULT_PORT as BARRIER_PORT
from pvbench.store.layout import CLIENTS_DIR

from .common import (
    CELL_ARGS,
    CELL_ID,
    CELL_INPUTS,
    CELL_KEY,
    CELL_TIMEOUT,
    HOSTNAME,
    IN,
    LABEL_ARGS,
    PVBENCH_STEP,
    SMALL,
    TRANSIENT,
    options,
)
from .fio import FIO_POD, RESULT
from .volumes import FRESH_VOLUME, SHARED_VOLUME, tmp


def cell_barrier() -> Container:
    """An Argo daemon step (`pvbench barrier`, a TCP server). Argo starts the clients once its
    readiness probe passes and hands them its pod IP ({{tasks.barrier.ip}}): no pod needs
    Kubernetes rights for it, and it is stopped when the cell's clients and merge are done."""
    return Container(
        name="cell-barrier",
        inputs=[Parameter(name="clients")],
        daemon=True,
        args=["barrier", *options(clients=IN("clients"), timeout=CELL_TIMEOUT, port=str(BARRIER_PORT), linger=True)],
        ports=[m.ContainerPort(name="barrier", container_port=BARRIER_PORT)],
        readiness_probe=m.Probe(tcp_socket=m.TCPSocketAction(port=BARRIER_PORT), period_seconds=1),
        labels={c.LABEL_COMPONENT: c.COMPONENT_BARRIER},
        resources=SMALL,
        volumes=[tmp("16Mi")],
        **PVBENCH_STEP,
    )


# The client pods of one cell may share a node (they carry the cell's id), never with another
# cell's benchmark pods; they prefer distinct nodes, so that N clients load the storage from N
# nodes where there are N nodes.
CLIENT_AFFINITY = m.Affinity(
    pod_anti_affinity=m.PodAntiAffinity(
        required_during_scheduling_ignored_during_execution=[
            m.PodAffinityTerm(
                label_selector=m.LabelSelector(
                    match_expressions=[
                        m.LabelSelectorRequirement(
                            key=c.LABEL_COMPONENT, operator="In", values=[c.COMPONENT_BENCHMARK]
                        ),
                        m.LabelSelectorRequirement(key=c.LABEL_CELL, operator="NotIn", values=[CELL_ID]),
                    ]
                ),
                topology_key=HOSTNAME,
            )
        ],
        preferred_during_scheduling_ignored_during_execution=[
            m.WeightedPodAffinityTerm(
                weight=100,
                pod_affinity_term=m.PodAffinityTerm(
                    label_selector=m.LabelSelector(match_labels={c.LABEL_CELL: CELL_ID}), topology_key=HOSTNAME
                ),
            )
        ],
    )
)


def fio_client(shared: bool = False) -> Container:
    """A client pod: the cell's job on its volume (its own fresh one, or the cell's one shared
    claim: input `claim`); its fio lays out its files, then waits for the barrier's GO. Its
    client.json goes under the cell's key (clients/<n>/) for the merge."""
    return Container(
        name="fio-client-shared" if shared else "fio-client",
        inputs=[
            *CELL_INPUTS,
            Parameter(name="client"),
            Parameter(name="barrier"),
            *([Parameter(name="claim")] if shared else []),
        ],
        args=[
            "fio-step",
            *options(target=c.TARGET_DIR),
            *CELL_ARGS,
            *options(
                client=IN("client"),
                barrier=IN("barrier"),
                shared_volume=shared,
                out=c.CLIENT_OUT_DIR,
                cleanup=True,
            ),
        ],
        labels={c.LABEL_COMPONENT: c.COMPONENT_BENCHMARK, c.LABEL_CELL: CELL_ID},
        affinity=CLIENT_AFFINITY,
        outputs=[
            S3Artifact(
                name="client",
                path=c.CLIENT_OUT_DIR,
                key=f"{CELL_KEY}/{CLIENTS_DIR}/{IN('client')}",
                archive=NoneArchiveStrategy(),
            )
        ],
        **FIO_POD,
        **(SHARED_VOLUME if shared else FRESH_VOLUME),
    )


def merge_clients() -> Container:
    """The N client outputs (fetched by Argo from under the cell's key) -> the cell's one
    result.json and fio.json, under the cell's key, as a one-pod cell stores them."""
    return Container(
        name="merge-clients",
        inputs=[*CELL_INPUTS, S3Artifact(name="clients", path=c.CLIENTS_IN_DIR, key=f"{CELL_KEY}/{CLIENTS_DIR}")],
        args=["fio-step", *CELL_ARGS, *options(merge=c.CLIENTS_IN_DIR, out=c.CELL_OUT_DIR, key=CELL_KEY), *LABEL_ARGS],
        resources=SMALL,
        volumes=[tmp("256Mi")],
        retry_strategy=TRANSIENT,
        outputs=[RESULT],
        **PVBENCH_STEP,
    )


# ------------------------------------------------------------------ the cell's DAGs
CLIENT_CELL_INPUTS = [*CELL_INPUTS, Parameter(name="clients")]
PASSED_ON = [Parameter(name=p.name, value=IN(p.name)) for p in CELL_INPUTS]
BARRIER_ARGUMENTS = [Parameter(name="clients", value=IN("clients"))]
EACH_CLIENT = m.Sequence(start="1", count=IN("clients"))
CLAIM = "{{tasks.volume.outputs.parameters.claim}}"


def client_arguments(*extra: Parameter) -> list[Parameter]:
    return [
        *PASSED_ON,
        Parameter(name="client", value="{{item}}"),
        Parameter(name="barrier", value="{{tasks.barrier.ip}}:" + str(BARRIER_PORT)),
        *extra,
    ]


def client_cell(barrier: Container, client: Container, merge: Container) -> DAG:
    with DAG(name="client-cell", inputs=CLIENT_CELL_INPUTS) as dag:
        t_barrier = Task(name="barrier", template=barrier, arguments=BARRIER_ARGUMENTS)
        t_client = Task(name="client", template=client, with_sequence=EACH_CLIENT, arguments=client_arguments())
        t_merge = Task(name="merge", template=merge, arguments=PASSED_ON)
        t_barrier >> t_client >> t_merge
    return dag


def shared_client_cell(
    barrier: Container, volume: Resource, client: Container, merge: Container, release: Resource
) -> DAG:
    """The claim is released whatever became of the clients and the merge. failFast off, or a
    failed client would stop the release; the DAG's targets are the merge and the release, so a
    failed client (merge omitted) still fails the cell."""
    with DAG(name="shared-client-cell", inputs=CLIENT_CELL_INPUTS, fail_fast=False, target="merge release") as dag:
        s_barrier = Task(name="barrier", template=barrier, arguments=BARRIER_ARGUMENTS)
        s_volume = Task(name="volume", template=volume, arguments=PASSED_ON)
        s_client = Task(
            name="client",
            template=client,
            with_sequence=EACH_CLIENT,
            arguments=client_arguments(Parameter(name="claim", value=CLAIM)),
        )
        s_merge = Task(name="merge", template=merge, arguments=PASSED_ON)
        s_release = Task(name="release", template=release, arguments=[Parameter(name="claim", value=CLAIM)])
        [s_barrier, s_volume] >> s_client >> s_merge
        s_release.depends = "volume.Succeeded && (merge.Succeeded || merge.Failed || merge.Errored || merge.Omitted)"
    return dag
