"""The volumes of the benchmark template's pods: /tmp, the API token, a cell's fresh PVC, the shared claim."""

import json

from hera.workflows import EmptyDirVolume, Parameter, Resource
from hera.workflows import models as m

from pvbench.argo import conventions as c
from pvbench.cells.matrix import POD_CELLS_KEY
from pvbench.results.volume import BLOCK

from .common import ARGO_STEP_RESOURCES, CELL_ID, CELL_INPUTS, IN, RUN, TRANSIENT, WF


def tmp(size_limit: str) -> EmptyDirVolume:
    """/tmp: the only writable path besides a cell's /data; capped, so a runaway step is evicted
    before it fills the node's disk."""
    return EmptyDirVolume(name="tmp", mount_path="/tmp", size_limit=size_limit)


# The cell's one Kubernetes call: before fio, it reads its own pod, claim and PV, to record how
# long the volume took to become usable. Its container alone gets a short-lived token of
# pvbench-workflow (a projected volume; the pod mounts none), whose Role may only get those
# objects (the chart's rbac.yaml).
KUBE_API_VOLUME = "kube-api"
KUBE_API = m.Volume(
    name=KUBE_API_VOLUME,
    projected=m.ProjectedVolumeSource(
        sources=[
            m.VolumeProjection(
                service_account_token=m.ServiceAccountTokenProjection(path="token", expiration_seconds=600)
            ),
            m.VolumeProjection(
                config_map=m.ConfigMapProjection(
                    name="kube-root-ca.crt", items=[m.KeyToPath(key="ca.crt", path="ca.crt")]
                )
            ),
        ]
    ),
)

# A fresh volume of the class for each pod (a one-pod cell, or a client pod with its own): a
# template-level ephemeral volume, so each pod gets its own PVC of the cell's class
# ({{inputs.parameters.storage-class}} is substituted in its string fields) and the PVC goes with
# the pod. Its size cannot be written as {{…}} there (Argo parses templates into Kubernetes types,
# and a quantity is no string): the literal below is replaced by the run's volume-size through
# podSpecPatch, a string Argo substitutes and merges into the pod (volumes merge by name).
VOLUME_SIZE_PATCH = {
    "volumes": [
        {
            "name": "target",
            "ephemeral": {"volumeClaimTemplate": {"spec": {"resources": {"requests": {"storage": WF("volume-size")}}}}},
        }
    ]
}


def fresh_volume(volume_mode: str | None = None) -> dict:
    """The pod's fresh PVC of the cell's class and access mode (``volume_mode`` Block: a raw block
    volume, which the container gets as a device, not a mount)."""
    return dict(
        pod_spec_patch=json.dumps(VOLUME_SIZE_PATCH, separators=(",", ":")),
        volumes=[
            tmp("256Mi"),
            KUBE_API,
            m.Volume(
                name="target",
                ephemeral=m.EphemeralVolumeSource(
                    volume_claim_template=m.PersistentVolumeClaimTemplate(
                        metadata=m.ObjectMeta(labels={c.LABEL_WORKFLOW: RUN}),
                        spec=m.PersistentVolumeClaimSpec(
                            access_modes=[IN("access-mode")],
                            storage_class_name=IN("storage-class"),
                            volume_mode=volume_mode,
                            # replaced by volume-size (podSpecPatch above)
                            resources=m.VolumeResourceRequirements(requests={"storage": "1Gi"}),
                        ),
                    )
                ),
            ),
        ],
    )


FRESH_VOLUME = fresh_volume()
FRESH_BLOCK_VOLUME = fresh_volume(BLOCK)


def _expr(value) -> str:
    """A Python value as an Argo expression literal (expr-lang): strings single-quoted (the
    template reaches the controller JSON-encoded, and it evaluates podSpecPatch's expression
    without undoing escaped double quotes), Expr values as written."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_expr(k)}: {_expr(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_expr(v) for v in value) + "]"
    if isinstance(value, str) and "'" not in value and "\\" not in value:
        return f"'{value}'"
    raise ValueError(f"no expression literal for {value!r}")


class Expr(str):
    """Expression text, written into an expression as it is."""


# A pod of several cells (benchmark-pod): a fresh volume for each of its cells, of that cell's
# class, mounted at /data/<i>. Their number and classes come with the pod's `cells` input
# ('class:workload:rep:order …'), so the template cannot list them: its podSpecPatch is an
# expression that builds them from that input (Argo evaluates it when it makes the pod; each
# ephemeral volume's PVC is then made by Kubernetes, owned by the pod, gone with it). Spaces
# keep `{ {` and `} }` apart: `}}` would end Argo's {{=…}} early.
# Each of the pod's cells as its fields (FAN_OUT_ITEM_KEYS: [0] its class, [2] its access mode).
POD_CELLS = Expr(f"map(split(inputs.parameters.{POD_CELLS_KEY}, ' '), split(#, ':'))")
POD_VOLUME = {
    "name": Expr(f"'{c.POD_VOLUME_PREFIX}' + string(#index)"),
    "ephemeral": {
        "volumeClaimTemplate": {
            "metadata": {"labels": {c.LABEL_WORKFLOW: Expr("workflow.name")}},
            "spec": {
                "accessModes": [Expr(f"#[{c.FAN_OUT_ITEM_KEYS.index('access_mode')}]")],
                "storageClassName": Expr(f"#[{c.FAN_OUT_ITEM_KEYS.index('storage_class')}]"),
                "resources": {"requests": {"storage": Expr("workflow.parameters['volume-size']")}},
            },
        }
    },
}
POD_MOUNT = {"name": POD_VOLUME["name"], "mountPath": Expr(f"'{c.TARGET_DIR}/' + string(#index)")}
POD_VOLUMES_PATCH = (
    "{{="
    + "toJson("
    + _expr(
        {
            "containers": [{"name": "main", "volumeMounts": Expr(f"map({POD_CELLS}, {{ {_expr(POD_MOUNT)} }})")}],
            "volumes": Expr(f"map({POD_CELLS}, {{ {_expr(POD_VOLUME)} }})"),
        }
    )
    + ")}}"
)
assert "}}" not in POD_VOLUMES_PATCH[:-2] and "{{" not in POD_VOLUMES_PATCH[2:], POD_VOLUMES_PATCH
POD_VOLUMES = dict(pod_spec_patch=POD_VOLUMES_PATCH, volumes=[tmp("256Mi"), KUBE_API])

# client-volumes=shared: a client pod mounts the cell's one claim (input `claim`).
SHARED_VOLUME = dict(
    volumes=[
        tmp("256Mi"),
        KUBE_API,
        m.Volume(name="target", persistent_volume_claim=m.PersistentVolumeClaimVolumeSource(claim_name=IN("claim"))),
    ]
)

# client-volumes=shared: the cell's one ReadWriteMany claim of the class, made before the
# clients and deleted after the merge, by the only identity that may (pvbench-volumes, the
# chart's benchmark.sharedClientVolumes). The workflow owns it too, so a claim a stopped run
# left behind goes when the workflow is deleted. Argo's own container runs these steps: their
# resources come in by podSpecPatch.
SHARED_CLAIM = {
    "apiVersion": "v1",
    "kind": "PersistentVolumeClaim",
    "metadata": {"generateName": "pvbench-shared-", "labels": {c.LABEL_WORKFLOW: RUN, c.LABEL_CELL: CELL_ID}},
    "spec": {
        "accessModes": ["ReadWriteMany"],
        "storageClassName": IN("storage-class"),
        "resources": {"requests": {"storage": WF("volume-size")}},
    },
}
VOLUMES_STEP = dict(
    service_account_name=c.VOLUMES_SERVICE_ACCOUNT,
    executor=m.ExecutorConfig(service_account_name=c.VOLUMES_SERVICE_ACCOUNT),
    pod_spec_patch=ARGO_STEP_RESOURCES,
    retry_strategy=TRANSIENT,
)


def shared_volume() -> Resource:
    return Resource(
        name="shared-volume",
        inputs=CELL_INPUTS,
        action="create",
        set_owner_reference=True,
        manifest=json.dumps(SHARED_CLAIM, indent=1),
        outputs=[Parameter(name="claim", value_from=m.ValueFrom(json_path="{.metadata.name}"))],
        **VOLUMES_STEP,
    )


def release_volume() -> Resource:
    return Resource(
        name="release-volume",
        inputs=[Parameter(name="claim")],
        action="delete",
        flags=["persistentvolumeclaim", IN("claim"), "--ignore-not-found", "--wait=false"],
        **VOLUMES_STEP,
    )
