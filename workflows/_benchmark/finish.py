"""finish, the exit handler: cleanup (stuck cell pods) ─▶ publish, whatever the run's phase."""

from hera.workflows import DAG, Resource, Task
from hera.workflows import models as m

from pvbench.argo import conventions as c

from .common import ARGO_STEP_RESOURCES, RUN


def cleanup() -> Resource:
    """A cell pod still pending when its deadline passed (a volume that never bound) is not
    complete, so pod GC leaves it: delete the run's benchmark pods that remain (their PVCs go with
    them), under an identity that may do only that.
    Its container is Argo's own (argoexec), running with the executor's token: here the cleanup
    identity's, the only one that may delete pods. Its resources come in by podSpecPatch (a
    resource template has no container of its own to set them on)."""
    return Resource(
        name="cleanup",
        action="delete",
        service_account_name=c.CLEANUP_SERVICE_ACCOUNT,
        executor=m.ExecutorConfig(service_account_name=c.CLEANUP_SERVICE_ACCOUNT),
        pod_spec_patch=ARGO_STEP_RESOURCES,
        flags=[
            "pods",
            "--selector",
            f"workflows.argoproj.io/workflow={RUN},{c.LABEL_COMPONENT}={c.COMPONENT_BENCHMARK}",
            "--ignore-not-found",
            "--wait=false",
        ],
    )


def finish(cleanup: Resource, publish: DAG) -> DAG:
    """Whatever the run's phase (cells failed, a stop from the UI, a deadline), free what is left
    and tabulate and report what was measured.
    In sequence, not cleanup beside aggregate: with the workflow's parallelism reached, Argo
    v3.7's controller records an exit-handler task it could not start yet as a child without a
    node, and then exits fatally ("was unable to get child node name", argo-workflows #14392);
    one task at a time never reaches that limit."""
    with DAG(name="finish", fail_fast=False) as dag:
        Task(name="cleanup", template=cleanup)
        t_publish = Task(name="publish", template=publish)
        # aggregate whether or not cleanup managed (a cleanup error must not lose the report)
        t_publish.depends = "cleanup.Succeeded || cleanup.Failed || cleanup.Errored"
    return dag
