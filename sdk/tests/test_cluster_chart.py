"""The chart installed with `helm upgrade --install` next to the real Argo engines, and what
those engines make of it: every CronWorkflow passes the controller's validation against the
installed WorkflowTemplate, and the Argo Events controller starts a pod for every
EventSource and for the Sensor (it refuses an EventSource it cannot run, e.g. one that mixes
resource and webhook sources, and then starts nothing).
"""

from __future__ import annotations

import pytest
import yaml
from argo_helpers import CHART, load_yaml_docs

from pvbench.testing.cluster import (
    ARGO_WORKFLOWS_VERSION,
    NAMESPACE,
    RELEASE,
    argo,
    helm,
    installed_release,
    require_kube,
    wait_until,
)

pytestmark = [pytest.mark.cluster]

ARGO_KINDS = {"WorkflowTemplate", "CronWorkflow", "EventSource", "Sensor"}


@pytest.fixture(scope="module")
def manifest() -> list[dict]:
    installed_release()
    return load_yaml_docs(helm("get", "manifest", RELEASE, "--namespace", NAMESPACE).stdout)


@pytest.mark.argo_v3
def test_the_real_engines_run_in_the_namespace():
    """Argo Workflows v4.0.5, or v3.7.18 in the second pass (controller, argo-server), and Argo
    Events v1.9.11, from upstream's namespace-install manifests; the EventBus on JetStream."""
    k = require_kube()
    images = {}
    for deploy in ("workflow-controller", "argo-server", "controller-manager"):
        d = k.json("get", "deployment", deploy)
        assert d["status"].get("availableReplicas") == 1, (deploy, d["status"])
        images[deploy] = d["spec"]["template"]["spec"]["containers"][0]["image"]
    assert images == {
        "workflow-controller": f"quay.io/argoproj/workflow-controller:{ARGO_WORKFLOWS_VERSION}",
        "argo-server": f"quay.io/argoproj/argocli:{ARGO_WORKFLOWS_VERSION}",
        "controller-manager": "quay.io/argoproj/argo-events:v1.9.11",
    }
    bus = k.json("get", "eventbus", "default")
    assert bus["spec"]["jetstreamExotic"]["url"].startswith("nats://")
    crds = {c["metadata"]["name"] for c in k.items("crd", namespace=None)}
    assert {
        "workflows.argoproj.io",
        "workflowtemplates.argoproj.io",
        "cronworkflows.argoproj.io",
        "eventsources.argoproj.io",
        "sensors.argoproj.io",
        "eventbus.argoproj.io",
    } <= crds


@pytest.mark.argo_v3
def test_helm_install_created_every_object_of_the_chart(manifest):
    k = require_kube()
    kinds = {d["kind"] for d in manifest}
    assert ARGO_KINDS <= kinds, kinds
    assert len([d for d in manifest if d["kind"] == "CronWorkflow"]) == 3
    assert sorted(d["metadata"]["name"] for d in manifest if d["kind"] == "EventSource") == [
        "pvbench-resources",
        "pvbench-webhook",
    ]
    for doc in manifest:
        ns = doc["metadata"].get("namespace", NAMESPACE)
        assert k.get(doc["kind"], doc["metadata"]["name"], namespace=ns), f"{doc['kind']}/{doc['metadata']['name']}"
    assert "unknown field" not in installed_release()["helm_stdout"]


def test_every_cron_workflow_passes_the_controllers_validation_against_the_installed_template(manifest, tmp_path):
    """`argo cron lint` in Kubernetes mode: the validation the controller runs on a CronWorkflow,
    with the workflowTemplateRef resolved from the cluster. (Whether the controller schedules
    one for real is test_cluster_failures: the weekend occasion runs.)"""
    crons = [d for d in manifest if d["kind"] == "CronWorkflow"]
    for doc in crons:
        f = tmp_path / f"{doc['metadata']['name']}.yaml"
        f.write_text(yaml.safe_dump(doc))
    proc = argo("cron", "lint", *[str(p) for p in sorted(tmp_path.glob("*.yaml"))], check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no linting errors found" in (proc.stdout + proc.stderr).lower(), proc.stdout + proc.stderr


def test_events_controller_runs_every_event_source_and_the_sensor(manifest):
    k = require_kube()
    wanted = [("eventsource-name", d["metadata"]["name"]) for d in manifest if d["kind"] == "EventSource"]
    wanted += [("sensor-name", d["metadata"]["name"]) for d in manifest if d["kind"] == "Sensor"]
    for label, name in wanted:

        def ready():
            pods = k.items("pod", f"{label}={name}")
            return pods and all(c.get("ready") for p in pods for c in p["status"].get("containerStatuses") or [{}])

        wait_until(f"a ready pod of {label}={name}", ready, 120)


def test_the_webhook_token_secret_is_made_once(manifest):
    """authSecret.create: a random token on install, the same one after an upgrade."""
    k = require_kube()
    first = k.json("get", "secret", "pvbench-webhook")["data"]["token"]
    assert len(first) > 20
    values = installed_release()["values"]
    helm("upgrade", RELEASE, str(CHART), "--namespace", NAMESPACE, "-f", str(values), "--wait", "--timeout", "3m")
    assert k.json("get", "secret", "pvbench-webhook")["data"]["token"] == first


def test_the_executor_tokens_are_filled_in(manifest):
    """The step containers get no token; Argo's executor mounts <sa>.service-account-token, which
    the chart makes and Kubernetes' token controller fills in (every step pod needs it)."""
    k = require_kube()
    for sa in ("pvbench-executor", "pvbench-cleanup", "pvbench-volumes"):
        wait_until(
            f"the token of {sa}",
            lambda: (k.json("get", "secret", f"{sa}.service-account-token").get("data") or {}).get("token"),
            60,
        )
