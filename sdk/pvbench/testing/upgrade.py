"""The upgrade scenario on the CI node (sdk/tests/test_cluster_upgrade.py): pvbench-qos's driver,
a DaemonSet the chart watches (events.csi.workloads qos-csi), at versions that really differ.

    1.0    no limit: the class runs at its loop device's speed
    2.0    write QoS of QOS_WRITE_IOPS on the class's device (pvbench.testing.qos_driver)
    2.0.1  a retag of 2.0: the same limit

Each version is an image reference of its own (tags of the runner image in containerd: the node
has no registry) and its argument, changed together as an operator's `helm upgrade` of a driver
changes both. The baseline history (BASELINE_OCCASIONS runs at 1.0) starts with the session
(conftest), beside the other cluster tests' runs; LATER_OCCASIONS cron-like runs of another
campaign (NIGHTLY_CAMPAIGN, as the chart's CronWorkflows have) follow the candidates, so that the
class's history, which spans campaigns, has 4 occasions at each level: the fewest with which the
history's permutation test can find a step (4 + 4 occasions: p ≈ 2/70, pvbench.stats.changepoints).
"""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path

from pvbench.testing.cluster import (
    CSI_NAMESPACE,
    QOS_CLASS,
    QOS_DAEMONSET,
    QOS_RUNS,
    RUNNER_IMAGE,
    STATE,
    installed_release,
    require_kube,
    submit,
    wait_until,
)

# The node's 4k random writes on this medium: ~20,000-80,000 IOPS, and queue-depth-4 latency of
# 0.1-3 ms when make test loads the machine. 200 IOPS puts it at ~20 ms: a slowdown no load hides.
QOS_WRITE_IOPS = 200
VERSIONS = {"1.0": 0, "2.0": QOS_WRITE_IOPS, "2.0.1": QOS_WRITE_IOPS}
DRIVER_IMAGE = "registry.pvbench.test/qos-csi-driver"
BASELINE_OCCASIONS = 4
LATER_OCCASIONS = 2  # with the two candidates (2.0, 2.0.1): 4 occasions at the new level
NIGHTLY_CAMPAIGN = "ci-nightly"
CTR_SOCK = Path("/run/pvbench-cluster/containerd.sock")  # the first node's (QOS_RUNS run there)
MEDIUM = STATE / "media" / "qos"
SCRIPT = Path(__file__).with_name("qos_driver.py")


def image(version: str) -> str:
    return f"{DRIVER_IMAGE}:{version}"


def tag_images() -> None:
    """The versions' image references, all the runner image (python3 runs the driver's script)."""
    for version in VERSIONS:
        subprocess.run(
            ["ctr", "-a", str(CTR_SOCK), "-n", "k8s.io", "images", "tag", "--force", RUNNER_IMAGE, image(version)],
            check=True,
            capture_output=True,
        )


def driver(version: str) -> list[dict]:
    """The driver's DaemonSet at ``version``, and the ConfigMap holding its script."""
    script = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": QOS_DAEMONSET, "namespace": CSI_NAMESPACE},
        "data": {"qos_driver.py": SCRIPT.read_text()},
    }
    labels = {"app": QOS_DAEMONSET}
    daemonset = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": QOS_DAEMONSET, "namespace": CSI_NAMESPACE},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    # the first node's: its pods' blkio cgroups and the images tagged above are there
                    "nodeSelector": {QOS_RUNS["node-label"]: QOS_RUNS["node-value"]},
                    "terminationGracePeriodSeconds": 2,
                    "containers": [
                        {
                            "name": "node-plugin",
                            "image": image(version),
                            "imagePullPolicy": "Never",
                            "command": ["python3", "-u", "/driver/qos_driver.py"],
                            "args": ["/medium", str(VERSIONS[version]), "/host/blkio/kubepods"],
                            "securityContext": {"privileged": True, "runAsUser": 0},
                            "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
                            "volumeMounts": [
                                {"name": "driver", "mountPath": "/driver"},
                                {"name": "medium", "mountPath": "/medium", "readOnly": True},
                                {"name": "blkio", "mountPath": "/host/blkio"},
                            ],
                        }
                    ],
                    "volumes": [
                        {"name": "driver", "configMap": {"name": QOS_DAEMONSET}},
                        {"name": "medium", "hostPath": {"path": str(MEDIUM), "type": "Directory"}},
                        {"name": "blkio", "hostPath": {"path": "/sys/fs/cgroup/blkio", "type": "Directory"}},
                    ],
                },
            },
        },
    }
    return [script, daemonset]


def driver_pod(version: str) -> dict | None:
    """The driver's pod of ``version`` once it runs (as its status says) and has set its limit (its
    log says so), else None. Both: the kubelet reports a container running up to a relist after it
    started, so a pod read before its log can still say it is being created."""
    k = require_kube()
    for pod in k.items("pod", f"app={QOS_DAEMONSET}", namespace=CSI_NAMESPACE):
        if pod["spec"]["containers"][0]["image"] != image(version) or pod["metadata"].get("deletionTimestamp"):
            continue
        statuses = pod["status"].get("containerStatuses") or [{}]
        if "running" not in (statuses[0].get("state") or {}):
            continue
        logs = k.run("logs", pod["metadata"]["name"], namespace=CSI_NAMESPACE, check=False).stdout
        if "qos-driver: set in" in logs:
            return pod
    return None


def roll_out(version: str, timeout: float = 180) -> dict:
    """Apply ``version`` as an operator would (kubectl apply of the new spec); its pod, once running."""
    tag_images()
    require_kube().apply(*driver(version))
    return wait_until(f"the {QOS_DAEMONSET} pod of {version}", lambda: driver_pod(version), timeout)


def baseline_parameters(occasion: int) -> dict[str, str]:
    return {
        **QOS_RUNS,
        "storage-classes": json.dumps([QOS_CLASS]),
        "role": "baseline",
        "occasion": f"before-{occasion}",
        "build-report": "false",  # the candidate's run builds the campaign's report
    }


def later_parameters(occasion: int) -> dict[str, str]:
    """A nightly run after the change, as the chart's CronWorkflows start them (their campaign)."""
    return {
        **QOS_RUNS,
        "campaign": NIGHTLY_CAMPAIGN,
        "storage-classes": json.dumps([QOS_CLASS]),
        "trigger": "cron",
        "occasion": f"after-{occasion}",
        "build-report": "false",
    }


def later_runs() -> tuple[str, ...]:
    return tuple(submit(later_parameters(i), "pvbench-qos-later-") for i in range(LATER_OCCASIONS))


@functools.lru_cache(maxsize=1)
def baseline_runs() -> tuple[str, ...]:
    """Driver 1.0 in place, then the baseline history: BASELINE_OCCASIONS runs, one occasion each,
    queued at once on their node selection's mutex (they run one after the other)."""
    installed_release()
    # a new DaemonSet (ADD) starts no run, a changed one (UPDATE) does: start from none
    require_kube().delete("daemonset", QOS_DAEMONSET, namespace=CSI_NAMESPACE)
    roll_out("1.0")
    return tuple(submit(baseline_parameters(i), "pvbench-qos-baseline-") for i in range(BASELINE_OCCASIONS))
