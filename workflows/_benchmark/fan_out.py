"""The cells' fan-outs: one task per kind of cell, over a list of fan-out items (main's from
`pvbench expand`, each adaptive round's from ci-check's `next`)."""

from typing import Callable, NamedTuple

from hera.workflows import DAG, Container, Task

from pvbench.cells.matrix import (
    BLOCK_CELLS_FAN_OUT,
    CELL_PODS_FAN_OUT,
    CELLS_FAN_OUT,
    CLIENT_CELLS_FAN_OUT,
    SHARED_CLIENT_CELLS_FAN_OUT,
)

from .common import cell_arguments, cells_done


class Cells(NamedTuple):
    """The templates a fan-out item runs: a one-pod cell (on a Filesystem or a Block volume), a pod
    of several cells, a multi-client cell (own or shared volumes)."""

    one_pod: Container
    block: Container
    pods: Container
    clients: DAG
    shared_clients: DAG


# task name, the template that runs an item, the fan-out it reads, its items' arguments
FAN_OUT_TASKS = (
    ("benchmark", "one_pod", CELLS_FAN_OUT, cell_arguments()),
    ("benchmark-block", "block", BLOCK_CELLS_FAN_OUT, cell_arguments()),
    ("benchmark-pods", "pods", CELL_PODS_FAN_OUT, cell_arguments(pod=True)),
    ("benchmark-clients", "clients", CLIENT_CELLS_FAN_OUT, cell_arguments(clients=True)),
    ("benchmark-shared-clients", "shared_clients", SHARED_CLIENT_CELLS_FAN_OUT, cell_arguments(clients=True)),
)
# A `depends` that holds once every fan-out ended, whatever became of its cells.
ALL_CELLS_DONE = cells_done(*(name for name, *_ in FAN_OUT_TASKS))


def cell_tasks(cells: Cells, items: Callable[[str], str], when: str | None = None) -> list[Task]:
    """One task per fan-out, each over ``items(fan-out)`` (a withParam), in the current DAG."""
    return [
        Task(
            name=name,
            template=getattr(cells, template),
            with_param=items(fan_out),
            when=when,
            arguments=arguments,
        )
        for name, template, fan_out, arguments in FAN_OUT_TASKS
    ]
