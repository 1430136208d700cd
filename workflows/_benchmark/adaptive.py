"""Adaptive repetitions: after the planned cells, repeat only the imprecise ones, round by round.

adaptive, one round:  check (ci-check) ─▶ the fan-outs over `next` ─▶ adaptive (round + 1)
"""

from hera.workflows import DAG, Container, Parameter, Task
from hera.workflows import models as m

from pvbench.argo import conventions as c
from pvbench.cells.matrix import NEXT_ROUND

from .common import IN, KEEP_FLAGGED, PVBENCH_STEP, RUN, TABLES, TRANSIENT, WF, options, run_results_artifact
from .fan_out import ALL_CELLS_DONE, Cells, cell_tasks
from .volumes import tmp


def adaptive_check() -> Container:
    """Step 1 of a round: is every cell precise enough yet? ci-check over the run's results so far
    (fetched by Argo like aggregate's, so no S3 credentials here). It exits 0 either way
    (--exit-zero): needing more is an answer, not a failure. Its answer goes out as output
    parameters: `next` (the cells to repeat, shaped like `pvbench expand` items) and `more`
    (true/false). A cell with adaptive-max-repetitions values is done, precise or not."""
    return Container(
        name="adaptive-check",
        inputs=[Parameter(name="round"), run_results_artifact()],
        args=[
            "stats",
            "ci-check",
            *options(
                store=c.STORE_DIR,
                campaign=WF("campaign"),
                run=RUN,
                target=WF("adaptive-target"),
                min_reps=str(c.ADAPTIVE_MIN_REPETITIONS),
                max_reps=WF("adaptive-max-repetitions"),
                seed=WF("seed"),
                round=IN("round"),
                exit_zero=True,
                client_volumes=WF("client-volumes"),
                cells_per_pod=WF("cells-per-pod"),
                outputs=c.CHECK_OUT_DIR,
            ),
        ],
        env=[KEEP_FLAGGED],
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
        **PVBENCH_STEP,
    )


def adaptive(check: Container, cells: Cells) -> DAG:
    """One round: check -> fan out only the `next` cells (the same cell templates, so a fresh PVC
    each) -> the next round.

    Why recursion: Argo has no while loop. A DAG template that calls itself under a `when` is
    Argo's documented way to repeat until a step says stop (the recursive coinflip example); a
    retryStrategy loop can repeat one pod but not a fan-out, and unrolling a fixed number of
    rounds would put up to 30 mostly skipped rounds in every run's graph. Recursion only adds a
    level when a round is really needed.
    Why it stops: the round counter. Each call passes round + 1 and keeps max-rounds
    (adaptive-max-repetitions, an enum, so at most 30); the recursive call's `when` requires
    round < max-rounds, so there are at most max-rounds rounds whatever ci-check answers.
    ci-check's own cap (a cell with max-repetitions values is done) normally ends it sooner: each
    round adds one repetition to each cell still imprecise. The depth stays far below Argo's
    recursion limit (150 nested templates).
    """
    more = "{{tasks.check.outputs.parameters.more}} == true"
    with DAG(
        name="adaptive",
        inputs=[Parameter(name="round"), Parameter(name="max-rounds")],
        fail_fast=False,
        parallelism=1,  # one cell at a time, as in main
    ) as dag:
        t_check = Task(name="check", template=check, arguments=[Parameter(name="round", value=IN("round"))])
        t_cells = cell_tasks(cells, lambda fan_out: "{{tasks.check.outputs.parameters.%s}}" % NEXT_ROUND[fan_out], more)
        t_next = Task(
            name="next-round",
            template="adaptive",  # itself
            when=more + " && {{inputs.parameters.round}} < {{inputs.parameters.max-rounds}}",
            arguments=[
                Parameter(name="round", value="{{=asInt(inputs.parameters.round) + 1}}"),
                Parameter(name="max-rounds", value=IN("max-rounds")),
            ],
        )
        t_check >> t_cells
        # The next round also follows a round in which some cells failed.
        t_next.depends = ALL_CELLS_DONE
    return dag
