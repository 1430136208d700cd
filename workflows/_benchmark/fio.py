"""What every fio pod of a cell shares (a one-pod cell, a multi-client cell's client pods)."""

from hera.workflows import FieldEnv, S3Artifact
from hera.workflows import models as m
from hera.workflows.archive import NoneArchiveStrategy

from pvbench.argo import conventions as c
from pvbench.kube import lifecycle
from pvbench.kube.api import SA_DIR

from .common import CELL, CELL_KEY, CELL_TIMEOUT, PVBENCH_STEP, VOLUME_WAIT, WF
from .volumes import KUBE_API_VOLUME

KUBE_API_MOUNT = m.VolumeMount(name=KUBE_API_VOLUME, mount_path=SA_DIR, read_only=True)
# The node selection, the deadline, the token to read its own lifecycle, the volume under test
# at /data; only one cell's fio pods run on a node at a time.
# The deadline (`timeout`, from validate): volume-timeout plus the cell's fio time. It counts
# from when the cell's pod is made, pending included, so a PVC that never binds fails the cell
# instead of holding the node forever; the guard fails a pod still unscheduled at volume-timeout
# (the annotation), sooner.
FIO_POD = dict(
    **PVBENCH_STEP,
    annotations={c.ANNOTATION_VOLUME_WAIT: VOLUME_WAIT},
    env=[
        FieldEnv(name="PVBENCH_NODE_NAME", field_path="spec.nodeName"),  # recorded in each result
        # the cell reads its own pod, claim and volume: the volume lifecycle (pvbench.kube.lifecycle)
        FieldEnv(name=lifecycle.POD_NAME_ENV, field_path="metadata.name"),
        FieldEnv(name=lifecycle.POD_NAMESPACE_ENV, field_path="metadata.namespace"),
    ],
    resources=CELL,
    timeout=CELL_TIMEOUT,
    volume_mounts=[m.VolumeMount(name="target", mount_path=c.TARGET_DIR), KUBE_API_MOUNT],
    # The node selector picks the node(s); the anti-affinity keeps two cells' benchmark pods
    # off one node even when runs select nodes differently (different node-values).
    node_selector={WF("node-label"): WF("node-value")},
)
# A cell's result.json and fio.json, under the cell's key (one pod's, or the merge's of N clients).
RESULT = S3Artifact(
    name="result",
    path=c.CELL_OUT_DIR,
    key=CELL_KEY,  # the store's key layout, with placeholders; fio-step checks it against the layout
    archive=NoneArchiveStrategy(),
)
