"""main, the entrypoint: validate ─▶ expand ─▶ the cells' fan-outs ─▶ adaptive (if adaptive-target is set)."""

from hera.workflows import DAG, Container, Parameter, Task

from .common import WF
from .fan_out import ALL_CELLS_DONE, Cells, cell_tasks


def main(validate: Container, expand: Container, cells: Cells, adaptive: DAG) -> DAG:
    """failFast off: one failing cell must not stop the others from being measured.
    One cell at a time (parallelism, counted in this DAG's children: a one-pod cell, or a
    multi-client cell's whole DAG of barrier, N clients and merge): a cell measures the storage
    alone, and the steps around the cells are sequential anyway. Runs sharing a node selection
    take turns (the mutex); cells of different runs never share a node (the anti-affinity)."""
    with DAG(name="main", fail_fast=False, parallelism=1) as dag:
        t_validate = Task(name="validate", template=validate)
        t_expand = Task(name="expand", template=expand)
        t_cells = cell_tasks(cells, "{{tasks.expand.outputs.parameters.%s}}".__mod__)
        t_adaptive = Task(
            name="adaptive",
            template=adaptive,
            when="'{{workflow.parameters.adaptive-target}}' != 'off'",
            arguments=[
                Parameter(name="round", value="1"),
                Parameter(name="max-rounds", value=WF("adaptive-max-repetitions")),
            ],
        )
        t_validate >> t_expand >> t_cells
        # Adapt also after a round in which some cells failed or errored.
        t_adaptive.depends = ALL_CELLS_DONE
    return dag
