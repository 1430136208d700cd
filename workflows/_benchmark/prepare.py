"""The steps before the cells: validate the run's parameters, expand them into the cells."""

from hera.workflows import ConfigMapEnv, Container, Parameter
from hera.workflows import models as m

from pvbench.argo import conventions as c
from pvbench.cells.matrix import FAN_OUTS

from .common import KEEP_FLAGGED, MATRIX_ARGS, PVBENCH_STEP, SMALL, TIMING_ARGS, TRANSIENT, WF, options
from .volumes import tmp


def validate() -> Container:
    """Bad input fails here, with pvbench's message, before any PVC exists. It also derives each
    cell's deadline from the workload, a pod's of cells-per-pod cells, and volume-timeout in seconds
    (workflow-wide outputs)."""
    return Container(
        name="validate",
        args=[
            "validate",
            *MATRIX_ARGS,
            *TIMING_ARGS,
            *options(
                volume_size=WF("volume-size"),
                volume_timeout=WF("volume-timeout"),
                client_volumes=WF("client-volumes"),
                cells_per_pod=WF("cells-per-pod"),
                outputs=c.VALIDATE_OUT_DIR,
            ),
        ],
        # The chart's limit (benchmark.maxStorageClasses), from its ConfigMap: a parameter of the
        # run cannot raise it. Optional: the rendered template alone uses pvbench's default.
        env=[
            ConfigMapEnv(
                name=c.MAX_STORAGE_CLASSES_ENV,
                config_map_name=c.LIMITS_CONFIGMAP,
                config_map_key=c.MAX_STORAGE_CLASSES_KEY,
                optional=True,
            ),
            KEEP_FLAGGED,
        ],
        resources=SMALL,
        volumes=[tmp("64Mi")],
        retry_strategy=TRANSIENT,
        outputs=[
            Parameter(name=name, global_name=name, value_from=m.ValueFrom(path=f"{c.VALIDATE_OUT_DIR}/{name}"))
            for name in (c.CELL_TIMEOUT_OUTPUT, c.POD_TIMEOUT_OUTPUT, c.VOLUME_WAIT_OUTPUT)
        ],
        **PVBENCH_STEP,
    )


def expand() -> Container:
    """The cells in the seeded random order, as fan-outs (output parameters): `cells`, one pod
    each, or `cell-pods`, cells-per-pod of them to a pod, and `client-cells` /
    `shared-client-cells`, N client pods each (a profile with a multi-client test)."""
    return Container(
        name="expand",
        args=[
            "expand",
            *MATRIX_ARGS,
            *options(client_volumes=WF("client-volumes"), cells_per_pod=WF("cells-per-pod"), outputs=c.EXPAND_OUT_DIR),
        ],
        resources=SMALL,
        volumes=[tmp("64Mi")],
        retry_strategy=TRANSIENT,
        outputs=[Parameter(name=name, value_from=m.ValueFrom(path=f"{c.EXPAND_OUT_DIR}/{name}")) for name in FAN_OUTS],
        **PVBENCH_STEP,
    )
