"""WorkflowTemplate ``pvbench-benchmark``: one benchmark run, submitted from the Argo UI or CLI.

    validate ─▶ expand ─┬▶ benchmark-cell × cells (withParam, one pod each)     ─┬▶ adaptive (if adaptive-target is set)
                        ├▶ benchmark-block-cell × block-cells (volume mode Block: fio on the device) ─┤
                        ├▶ benchmark-pod × cell-pods (cells-per-pod > 1: several cells a pod) ─┤
                        ├▶ client-cell × client-cells (a profile with multi-client tests) ─┤
                        └▶ shared-client-cell × shared-client-cells (client-volumes=shared) ─┘
    client-cell:  barrier (daemon) ─▶ fio-client × N (withSequence, own PVC each) ─▶ merge-clients
    shared-client-cell: barrier, shared-volume ─▶ fio-client-shared × N ─▶ merge-clients ─▶ release-volume
    exit handler, whatever happened: cleanup (stuck cell pods) ─▶ publish, under the campaign's mutex:
                                     aggregate ─▶ report (unless build-report is false)

    adaptive, one round:  check (ci-check) ─▶ benchmark-cell × next (or benchmark-pod × next-pods),
                          client-cell × next-clients ─▶ adaptive (round + 1)

One cell runs at a time (the main and adaptive DAGs' parallelism: a one-pod cell, or a
multi-client cell's whole DAG, is one child).

Every step is a ``pvbench`` command; the templates are declared in workflows/_benchmark/ (one
module per template or small group, see its __init__), and this file composes them.
Rendered to templates/benchmark.yaml by ``pvbench render`` (never edit that file).
"""

# The templates are declared in workflows/_benchmark/, one module each (or per small group);
# render imports that package by path before it runs this file (pvbench.argo.render.load_parts).
from _benchmark import adaptive, cell, clients, finish, main, prepare, publish, volumes
from _benchmark.common import POD_SECURITY, WF
from _benchmark.fan_out import Cells
from _benchmark.parameters import PARAMETERS
from hera.workflows import WorkflowTemplate
from hera.workflows import models as m

from pvbench.argo import conventions as c

with WorkflowTemplate(
    name=c.BENCHMARK_TEMPLATE,
    labels={"app.kubernetes.io/name": "pvbench", "app.kubernetes.io/component": "benchmark"},
    annotations={
        "workflows.argoproj.io/title": "pvbench: benchmark storage classes with fio",
        "workflows.argoproj.io/description": (
            "Validates the parameters, expands storage classes x profile tests x repetitions in a seeded "
            "random order, runs each cell on a fresh PVC of its class (one at a time per node selection), "
            "then aggregates whatever was measured to Parquet and builds the report, naming the cells that "
            "failed. Results, tables and report land in the artifact repository under the pvbench key layout."
        ),
    },
    entrypoint="main",
    on_exit="finish",
    service_account_name=c.SERVICE_ACCOUNT,
    # No step command talks to the Kubernetes API: their containers get no token. Argo's
    # executor (the init and wait containers) still needs one, to report outputs through
    # WorkflowTaskResults: it mounts the executor identity's token Secret (the chart's
    # pvbench-executor.service-account-token), in those containers only.
    automount_service_account_token=False,
    executor=m.ExecutorConfig(service_account_name=c.EXECUTOR_SERVICE_ACCOUNT),
    artifact_repository_ref=m.ArtifactRepositoryRef(
        config_map=c.ARTIFACT_REPOSITORY_CONFIGMAP, key=c.ARTIFACT_REPOSITORY_KEY
    ),
    security_context=POD_SECURITY,
    # One run at a time per node selection: runs with the same node-value (every CronWorkflow
    # occasion, every Sensor candidate, the UI's runs) queue for this mutex, so no two runs
    # disturb each other's numbers. Waiting for it counts against no deadline.
    synchronization=m.Synchronization(mutexes=[m.Mutex(name=c.NODE_MUTEX_PREFIX + WF("node-value"))]),
    # A finished cell's pod goes at once, and its ephemeral PVC (owned by the pod) with it: the
    # volume is freed, and a cloud disk stops being billed, while the run goes on. Its log
    # stays in the artifact repository (archiveLogs), where the Argo UI shows it.
    pod_gc=m.PodGC(
        strategy="OnPodCompletion",
        label_selector=m.LabelSelector(match_labels={c.LABEL_COMPONENT: c.COMPONENT_BENCHMARK}),
    ),
    # A run is labelled with what it is, so the UI and the Sensor's runs can be filtered.
    workflow_metadata=m.WorkflowMetadata(
        labels_from={
            c.LABEL_ROLE: m.LabelValueFrom(expression="workflow.parameters.role"),
            c.LABEL_OCCASION: m.LabelValueFrom(expression="workflow.parameters.occasion"),
            c.LABEL_CAMPAIGN: m.LabelValueFrom(expression="workflow.parameters.campaign"),
        }
    ),
    arguments=PARAMETERS,
) as wt:
    # Each call declares one template; the WorkflowTemplate lists them in this order.
    validate = prepare.validate()
    expand = prepare.expand()
    benchmark_cell = cell.benchmark_cell()
    benchmark_block_cell = cell.benchmark_cell(block=True)
    benchmark_pod = cell.benchmark_pod()
    barrier = clients.cell_barrier()
    fio_client = clients.fio_client()
    fio_client_shared = clients.fio_client(shared=True)
    merge = clients.merge_clients()
    shared_volume = volumes.shared_volume()
    release_volume = volumes.release_volume()
    client_cell = clients.client_cell(barrier, fio_client, merge)
    shared_client_cell = clients.shared_client_cell(barrier, shared_volume, fio_client_shared, merge, release_volume)
    aggregate = publish.aggregate()
    report = publish.report()
    cleanup = finish.cleanup()
    check = adaptive.adaptive_check()
    cells = Cells(benchmark_cell, benchmark_block_cell, benchmark_pod, client_cell, shared_client_cell)
    rounds = adaptive.adaptive(check, cells)
    main.main(validate, expand, cells, rounds)
    finish.finish(cleanup, publish.publish(aggregate, report))

MANIFESTS = [wt]
