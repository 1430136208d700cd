"""The chart installed for real: `helm upgrade --install` into the node's API server, whose
Argo CRDs are generated (ci/cluster/crds.py) from the same schemas kubeconform uses.

Helm creates objects without strict field validation: an unknown field is *pruned* by the
API server with only a warning, and the object is stored without it (a typo'd field
silently vanishes). So the checks here are: every object the chart renders is stored
field for field as rendered; helm reported no "unknown field"; and the API server itself
rejects, with strict field validation, what kubeconform rejects.
"""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from argo_helpers import kubeconform, load_yaml_docs
from cluster_helpers import NAMESPACE, RELEASE, helm, installed_release, require_kube

pytestmark = [pytest.mark.cluster]

ARGO_KINDS = {"WorkflowTemplate", "CronWorkflow", "EventSource", "Sensor"}


@pytest.fixture(scope="module")
def manifest() -> list[dict]:
    installed_release()
    return load_yaml_docs(helm("get", "manifest", RELEASE, "--namespace", NAMESPACE).stdout)


def test_helm_install_created_every_object_of_the_chart(manifest):
    k = require_kube()
    kinds = {d["kind"] for d in manifest}
    assert ARGO_KINDS <= kinds, kinds  # all-on values: occasions and events too
    assert len([d for d in manifest if d["kind"] == "CronWorkflow"]) == 3
    for doc in manifest:
        ns = doc["metadata"].get("namespace", NAMESPACE)
        assert k.get(doc["kind"], doc["metadata"]["name"], namespace=ns), f"{doc['kind']}/{doc['metadata']['name']}"
    assert "unknown field" not in installed_release()["helm_stdout"]


def test_api_server_kept_every_field_the_chart_rendered(manifest):
    """Pruning would drop a field the CRD schema does not know: nothing was dropped."""
    k = require_kube()
    for doc in manifest:
        if doc["kind"] not in ARGO_KINDS:
            continue
        stored = k.get(doc["kind"], doc["metadata"]["name"])
        assert stored["spec"] == doc["spec"], f"{doc['kind']}/{doc['metadata']['name']} differs after storing"


def test_api_server_accepts_the_charts_objects_with_strict_validation(manifest):
    k = require_kube()
    docs = [d for d in manifest if d["kind"] in ARGO_KINDS]
    proc = k.run("apply", "--server-side", "--force-conflicts", "--dry-run=server", "--validate=strict",
                 "--field-manager", "pvbench-ci", "-f", "-", input="".join("---\n" + json.dumps(d) + "\n" for d in docs))
    assert "Warning" not in proc.stderr, proc.stderr


def _mutations(manifest: list[dict]):
    """Mistakes in the chart's objects, each one the API server and kubeconform must refuse."""
    by_kind = {d["kind"]: d for d in manifest}
    wt, cron, sensor, es = (by_kind[k] for k in ("WorkflowTemplate", "CronWorkflow", "Sensor", "EventSource"))

    def mutate(doc, fn, name):
        doc = copy.deepcopy(doc)
        doc["metadata"] = {"name": f"bad-{name}", "namespace": NAMESPACE}
        fn(doc)
        return name, doc

    def typo(d):  # a misspelt field in a step's container
        d["spec"]["templates"][0]["container"]["imagePullPolicey"] = "Always"

    def wrong_type(d):  # retryStrategy.limit must be int-or-string
        d["spec"]["templates"][0]["retryStrategy"]["limit"] = {"max": 2}

    def wrong_scalar_type(d):  # parallelism is an integer
        d["spec"]["parallelism"] = "two"

    def missing_required(d):  # every template parameter needs a name
        d["spec"]["arguments"]["parameters"][0].pop("name")

    def cron_schedules_string(d):  # schedules is a list
        d["spec"]["schedules"] = "0 1 * * *"

    def sensor_trigger_typo(d):  # the Workflow a Sensor creates, with a misspelt field
        tpl = d["spec"]["triggers"][0]["template"]
        trig = (tpl.get("k8s") or tpl.get("argoWorkflow"))["source"]["resource"]
        trig["spec"]["workflowTemplateReff"] = trig["spec"].pop("workflowTemplateRef")

    def eventsource_wrong_type(d):
        key = next(k for k in ("resource", "webhook") if k in d["spec"])
        first = next(iter(d["spec"][key]))
        d["spec"][key][first] = "not-an-object"

    return [mutate(wt, typo, "typo"), mutate(wt, wrong_type, "wrong-type"),
            mutate(wt, wrong_scalar_type, "parallelism-string"), mutate(wt, missing_required, "missing-name"), mutate(cron, cron_schedules_string, "cron-schedules"),
            mutate(sensor, sensor_trigger_typo, "sensor-typo"), mutate(es, eventsource_wrong_type, "es-type")]


@pytest.mark.parametrize("index", range(7))
def test_api_server_rejects_what_kubeconform_rejects(manifest, index):
    name, doc = _mutations(manifest)[index]
    k = require_kube()
    api = k.create(doc, dry_run=True, check=False)
    assert api.returncode != 0, f"{name}: the API server accepted it:\n{api.stdout}"
    schema = kubeconform(stdin=yaml.safe_dump(doc))
    assert schema.returncode != 0, f"{name}: kubeconform accepted it:\n{schema.stdout}"
    print(f"\n{name}: API server: {api.stderr.strip()[:300]}")


def test_the_unmutated_objects_pass_the_same_checks(manifest):
    """The control of the test above: the same path with the chart's own objects succeeds."""
    k = require_kube()
    for doc in manifest:
        if doc["kind"] not in ARGO_KINDS:
            continue
        doc = copy.deepcopy(doc)
        doc["metadata"] = {"name": f"ok-{doc['metadata']['name']}"[:63], "namespace": NAMESPACE}
        api = k.create(doc, dry_run=True, check=False)
        assert api.returncode == 0 and "Warning" not in api.stderr, api.stderr
