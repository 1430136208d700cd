"""publish (in the exit handler): aggregate ─▶ report, under the campaign's mutex."""

from hera.workflows import DAG, Artifact, ConfigMapEnv, Container, Parameter, S3Artifact, Task
from hera.workflows import models as m
from hera.workflows.archive import NoneArchiveStrategy

from pvbench.argo import conventions as c
from pvbench.argo import keys
from pvbench.store import layout

from .common import (
    CAMPAIGN_KEY,
    KEEP_FLAGGED,
    PULL,
    PVBENCH_STEP,
    REPORT,
    RUN,
    STRICT,
    TABLES,
    TRANSIENT,
    WF,
    options,
    run_results_artifact,
)
from .volumes import tmp


def aggregate() -> Container:
    """DuckDB over the run's results (fetched from the artifact repository by Argo, so the pod
    holds no S3 credentials) and the compacts of the campaign's earlier runs: the run is
    compacted once (its compact goes back under compact/), and the campaign's tables, every run
    pooled, go back under analytics/…/run=all. Part of the exit handler: it runs however the
    cells went (failed, errored, stopped), with Argo's list of failed nodes, so the report names
    every cell that has no result."""
    run_compact = keys.run_compact_prefix(CAMPAIGN_KEY, RUN)
    compacts = keys.campaign_compacts_prefix(CAMPAIGN_KEY)
    histories = keys.histories_prefix()
    return Container(
        name="aggregate",
        inputs=[
            run_results_artifact(optional=True),
            # the first run of a campaign has no compacts yet
            S3Artifact(name="compacts", path=f"{c.STORE_DIR}/{compacts}", key=compacts, optional=True),
            # every campaign's occasion_history (one small file each): a class's history spans
            # campaigns (pvbench.stats.history); none before the store's first aggregation
            S3Artifact(name="histories", path=f"{c.STORE_DIR}/{histories}", key=histories, optional=True),
        ],
        args=[
            "aggregate",
            *options(
                store=c.STORE_DIR,
                campaign=WF("campaign"),
                run=RUN,
                out=c.ANALYTICS_DIR,
                argo_failures="{{workflow.failures}}",
                argo_status="{{workflow.status}}",
                # the pod writes back its run's compact only (no S3 credentials): a campaign
                # snapshot made here would be thrown away
                no_snapshot=True,
            ),
        ],
        env=[KEEP_FLAGGED],
        resources=TABLES,
        volumes=[tmp("4Gi")],
        retry_strategy=TRANSIENT,
        outputs=[
            S3Artifact(
                name="analytics",
                path=c.ANALYTICS_DIR,
                key=keys.campaign_analytics_prefix(CAMPAIGN_KEY),
                archive=NoneArchiveStrategy(),
            ),
            S3Artifact(
                name="compact",
                path=f"{c.STORE_DIR}/{run_compact}",
                key=run_compact,
                archive=NoneArchiveStrategy(),
            ),
            # the campaign's history, where the other campaigns' aggregations read it
            S3Artifact(
                name="history",
                path=f"{c.ANALYTICS_DIR}/{layout.HISTORY_FILE}",
                key=keys.campaign_history_key(CAMPAIGN_KEY),
                archive=NoneArchiveStrategy(),
            ),
        ],
        **PVBENCH_STEP,
    )


def report() -> Container:
    """The campaign's Evidence site (every run, selectable on its Runs page), stored unarchived
    under the campaign's report key. Then `pvbench report locate` says where: its log and the
    workflow outputs report-location (s3://<bucket>/…/report/, what `pvbench report serve` opens)
    and report-url (the chart's report.url, filled in). The bucket and the URL template come from
    the chart's ConfigMap pvbench-report (optional: the rendered template alone prints the key)."""
    report_key = keys.campaign_report_prefix(CAMPAIGN_KEY)
    return Container(
        name="report",
        inputs=[Artifact(name="analytics", path=c.ANALYTICS_DIR)],
        image=WF("report-image"),
        image_pull_policy=PULL,
        # Evidence builds inside its project (data/, .evidence/, build/): the image's is on the
        # read-only root, so the build happens in a working copy on /tmp (an emptyDir), where the
        # image's PVBENCH_REPORT_WORKDIR says, its node_modules linked, not copied.
        # The run's values reach `locate` as arguments ("$@"), never inside the script: this
        # step runs even when validate refused them.
        command=["sh", "-c"],
        args=[
            f"set -e; pvbench report build --data {c.ANALYTICS_DIR} --out {c.SITE_DIR}; "
            'exec pvbench report locate "$@"',
            "report-locate",  # $0
            *options(
                key=report_key,
                campaign=WF("campaign"),
                run=RUN,
                namespace="{{workflow.namespace}}",
                outputs=c.REPORT_OUT_DIR,
            ),
        ],
        env=[
            ConfigMapEnv(name=env, config_map_name=c.REPORT_CONFIGMAP, config_map_key=key, optional=True)
            for env, key in (("PVBENCH_REPORT_STORE", "store"), ("PVBENCH_REPORT_URL", "url"))
        ],
        security_context=STRICT,
        resources=REPORT,
        volumes=[tmp("4Gi")],
        retry_strategy=TRANSIENT,
        outputs=[
            S3Artifact(
                name="report",
                path=c.SITE_DIR,
                key=report_key,
                archive=NoneArchiveStrategy(),
            ),
            *[
                Parameter(
                    name=name, global_name=name, value_from=m.ValueFrom(path=f"{c.REPORT_OUT_DIR}/{name}", default="")
                )
                for name in (c.REPORT_LOCATION_OUTPUT, c.REPORT_URL_OUTPUT)
            ],
        ],
    )


def publish(aggregate: Container, report: Container) -> DAG:
    """aggregate ─▶ report hold the campaign's mutex: two runs of one campaign that finish together
    (different node-values: each holds its own node's mutex) would otherwise both read the
    campaign's compacts before either had written its own, and the tables and the report stored
    last would lack the other run until the campaign's next run. In turn, the second reads the
    first's compact; its tables and report are the campaign's with both runs."""
    with DAG(
        name="publish",
        fail_fast=False,
        synchronization=m.Synchronization(mutexes=[m.Mutex(name=c.CAMPAIGN_MUTEX_PREFIX + CAMPAIGN_KEY)]),
    ) as dag:
        t_aggregate = Task(name="aggregate", template=aggregate)
        t_report = Task(
            name="report",
            template=report,
            when=f"'{WF('build-report')}' == 'true'",
            arguments=[Artifact(name="analytics", from_="{{tasks.aggregate.outputs.artifacts.analytics}}")],
        )
        t_aggregate >> t_report
    return dag
