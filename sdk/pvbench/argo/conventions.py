"""Names shared by the Hera definitions (workflows/*.py), the Helm chart and the tests.

The chart patches a few of these at install time (service account, artifact repository,
parameter defaults); everything else is fixed so that templates, chart and docs agree.
"""

from __future__ import annotations

from pvbench.cells.cell import FAN_OUT_ITEM_KEYS
from pvbench.profiles import PROFILE_DEFAULT

__all__ = ["FAN_OUT_ITEM_KEYS", "PROFILE_DEFAULT"]  # defined where they belong, named here for the templates

# Objects.
BENCHMARK_TEMPLATE = "pvbench-benchmark"
SERVICE_ACCOUNT = "pvbench-workflow"
CLEANUP_SERVICE_ACCOUNT = "pvbench-cleanup"  # the exit handler's: may delete the run's leftover pods
# Argo's executor (init/wait containers) reports outputs through WorkflowTaskResults with this
# identity's token (a Secret named <name>.service-account-token, which the chart makes); the
# step containers themselves get no token (automountServiceAccountToken: false).
EXECUTOR_SERVICE_ACCOUNT = "pvbench-executor"
# Multi-client cells with client-volumes=shared: the steps that create the cell's one
# ReadWriteMany claim and delete it afterwards (the chart's benchmark.sharedClientVolumes).
VOLUMES_SERVICE_ACCOUNT = "pvbench-volumes"
# Limits the chart sets (values benchmark.maxStorageClasses): read by `pvbench validate` from
# this ConfigMap through an environment variable, so a submitted parameter cannot raise them.
LIMITS_CONFIGMAP = "pvbench-limits"
MAX_STORAGE_CLASSES_KEY = "max-storage-classes"
MAX_STORAGE_CLASSES_ENV = "PVBENCH_MAX_STORAGE_CLASSES"
DEFAULT_MAX_STORAGE_CLASSES = 8
ARTIFACT_REPOSITORY_CONFIGMAP = "pvbench-artifact-repository"
ARTIFACT_REPOSITORY_KEY = "default"

# Images (the chart sets repository:tag from its values).
RUNNER_IMAGE = "ghcr.io/pvbench/pvbench-runner:0.1.0"
REPORT_IMAGE = "ghcr.io/pvbench/pvbench-report:0.1.0"

# The non-root user of both images (ci/images/*/Dockerfile create it with this uid).
RUN_AS_USER = 10001

# Labels.
# Argo mutexes (namespace-wide). A run holds its node selection's for all of its life: runs on
# the same nodes take turns. Its exit handler's aggregate ─▶ report holds its campaign's: runs of
# one campaign on different nodes add themselves to the campaign's tables one after the other.
NODE_MUTEX_PREFIX = "pvbench-node-"  # + the node-value
CAMPAIGN_MUTEX_PREFIX = "pvbench-campaign-"  # + the campaign's key (its lowercase slug)

LABEL_PREFIX = "pvbench.io"
LABEL_ROLE = f"{LABEL_PREFIX}/role"  # baseline | candidate | adhoc
LABEL_OCCASION = f"{LABEL_PREFIX}/occasion"  # weekday-office | weekday-night | weekend | adhoc
LABEL_CAMPAIGN = f"{LABEL_PREFIX}/campaign"  # the campaign label (report links use it)
LABEL_COMPONENT = f"{LABEL_PREFIX}/component"  # benchmark (the fio pods, for anti-affinity)
COMPONENT_BENCHMARK = "benchmark"
COMPONENT_BARRIER = "barrier"  # a multi-client cell's start barrier (an Argo daemon step)
# A multi-client cell's id on its client pods: they may share a node with each other, not with
# another cell's benchmark pods (the anti-affinity of the node mutex).
LABEL_CELL = f"{LABEL_PREFIX}/cell"
LABEL_WORKFLOW = f"{LABEL_PREFIX}/workflow"  # the workflow that created a PVC (exit-handler cleanup)

# Paths inside the step pods.
TARGET_DIR = "/data"  # the fresh PVC under test
TARGET_DEVICE = "/dev/pvbench-target"  # ... a Block one: its raw device (volumeDevices)
CELL_OUT_DIR = "/tmp/pvbench/out"
POD_OUT_DIR = "/tmp/pvbench/pod-out"  # `pvbench fio-pod --out`: its cells' results, under their keys in the run
STORE_DIR = "/tmp/pvbench/store"
ANALYTICS_DIR = "/tmp/pvbench/analytics"
SITE_DIR = "/tmp/pvbench/site"
CHECK_OUT_DIR = "/tmp/pvbench/check"  # `pvbench stats ci-check --outputs`: next.json, next-clients.json, more
EXPAND_OUT_DIR = "/tmp/pvbench/expand"  # `pvbench expand --outputs`: cells, client-cells
CLIENT_OUT_DIR = "/tmp/pvbench/client"  # `pvbench fio-step --client`: client.json
CLIENTS_IN_DIR = "/tmp/pvbench/clients"  # `pvbench fio-step --merge`: every client pod's client.json
VALIDATE_OUT_DIR = "/tmp/pvbench/validate"  # `pvbench validate --outputs`: cell-timeout
REPORT_OUT_DIR = "/tmp/pvbench/report-out"  # `pvbench report locate --outputs`: report-location, report-url

# `pvbench validate` derives every cell's deadline from the workload; the template reads it
# as a workflow-wide output parameter of this name.
CELL_TIMEOUT_OUTPUT = "cell-timeout"
# ... and the deadline of a pod of cells-per-pod cells (one volume wait, then each cell in turn).
POD_TIMEOUT_OUTPUT = "pod-timeout"
# ... and volume-timeout in whole seconds, which every cell pod carries as an annotation: the
# guard fails a pod still unscheduled past it (its volume never bound), not at the full deadline.
VOLUME_WAIT_OUTPUT = "volume-wait"
ANNOTATION_VOLUME_WAIT = f"{LABEL_PREFIX}/volume-wait-s"
# A pod of several cells: cell i's fresh volume is mounted at TARGET_DIR/i, volume POD_VOLUME_PREFIX + i.
POD_VOLUME_PREFIX = "target-"
# The report step says where the run's report is stored (s3://<bucket>/analytics/…/report/) and,
# with the chart's report.url, where it opens: workflow-wide outputs of these names.
REPORT_LOCATION_OUTPUT = "report-location"
REPORT_URL_OUTPUT = "report-url"
# The chart's ConfigMap the report step reads them from (optional: without the chart, the step
# prints the key only): store = s3://<artifact repository bucket>, url = the report.url value.
REPORT_CONFIGMAP = "pvbench-report"

# Adaptive repetitions: every cell gets at least this many values before its CI is trusted
# (docs/statistics.md, "Why min 5"); the workflow's cap choices are all at or above it.
ADAPTIVE_MIN_REPETITIONS = 5
ADAPTIVE_TARGETS = ("off", "0.10", "0.05", "0.02")
ADAPTIVE_MAX_REPETITIONS = ("10", "20", "30")
# Argo's controller refuses templates nested deeper than this (docs/scaling.md, "Maximum
# recursion depth"); each adaptive round is one level, so the cap must stay well below it.
ARGO_MAX_RECURSION_DEPTH = 150

# Occasions of the thesis: when a benchmark runs is a factor of its own (noisy neighbours
# during office hours, backups at night, quiet weekends), kept apart from repetition.
OCCASIONS = ("weekday-office", "weekday-night", "weekend")
