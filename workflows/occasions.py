"""CronWorkflows ``pvbench-<occasion>``: the thesis's occasions as schedules.

When a benchmark runs is a factor of its own (neighbours busy in office hours, backups
and batch jobs at night, quiet weekends). Each CronWorkflow submits ``pvbench-benchmark``
with its occasion label, so results keep occasion apart from repetition; it stops by
itself after N successful occasions. The chart can override schedules, timezone, N and
the run parameters per occasion (values.yaml ``occasions``).
"""

from hera.workflows import CronWorkflow, Parameter
from hera.workflows import models as m

from pvbench.argo import conventions as c

TIMEZONE = "Europe/Zurich"
STOP_AFTER = 20  # successful occasions per schedule
SCHEDULES = {
    "weekday-office": ["0 10,15 * * 1-5"],  # Mon-Fri, 10:00 and 15:00
    "weekday-night": ["0 1 * * 2-6"],  # the nights after Mon-Fri, 01:00
    "weekend": ["0 11,23 * * 0,6"],  # Sat and Sun, 11:00 and 23:00
}
assert tuple(SCHEDULES) == c.OCCASIONS

MANIFESTS = []
for occasion, schedules in SCHEDULES.items():
    labels = {c.LABEL_OCCASION: occasion, "app.kubernetes.io/name": "pvbench"}
    MANIFESTS.append(
        CronWorkflow(
            name=f"pvbench-{occasion}",
            labels=labels,
            annotations={"workflows.argoproj.io/description": f"pvbench occasion {occasion}: {', '.join(schedules)}"},
            schedules=schedules,
            timezone=TIMEZONE,
            concurrency_policy="Forbid",  # never two occasions at once: they would disturb each other
            starting_deadline_seconds=900,  # a slot missed by more than 15 min is skipped, not run late
            stop_strategy=m.StopStrategy(expression=f"cronworkflow.succeeded >= {STOP_AFTER}"),
            successful_jobs_history_limit=5,
            failed_jobs_history_limit=5,
            workflow_metadata=m.WorkflowMetadata(labels={**labels, "pvbench.io/trigger": "cron"}),
            workflow_template_ref=m.WorkflowTemplateRef(name=c.BENCHMARK_TEMPLATE),
            arguments=[
                Parameter(name="occasion", value=occasion),
                Parameter(name="trigger", value="cron"),
                Parameter(name="campaign", value="occasions"),
            ],
        )
    )
