"""Every reference in the rendered templates and the chart points somewhere; broken ones are caught."""

from __future__ import annotations

import copy
import json
import subprocess

import pytest

from argo_helpers import (
    ALL_ON_VALUES,
    FIXTURES,
    PVBENCH,
    TEMPLATES,
    benchmark_template,
    dag_tasks,
    helm_template,
    load_yaml_docs,
    templates_by_name,
)
from pvbench.argo.references import check_documents, check_files


@pytest.fixture(scope="module")
def item_keys() -> dict[str, set[str]]:
    """The keys `pvbench expand` really emits: what {{item.x}} in the fan-out may use."""
    proc = subprocess.run([PVBENCH, "expand", "--campaign", "c", "--run", "r", "--occasion", "o",
                           "--storage-classes", '["a"]', "--profiles", "dbench"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    cells = json.loads(proc.stdout)
    return {"{{tasks.expand.outputs.result}}": set.intersection(*(set(c) for c in cells))}


def all_docs():
    return [d for p in sorted(TEMPLATES.glob("*.yaml")) for d in load_yaml_docs(p)]


def test_rendered_templates_have_no_dangling_reference(item_keys):
    assert [str(p) for p in check_files(sorted(TEMPLATES.glob("*.yaml")), item_keys)] == []


@pytest.mark.parametrize("values", [None, ALL_ON_VALUES], ids=["defaults", "all-on"])
def test_chart_output_has_no_dangling_reference(values, item_keys):
    docs = load_yaml_docs(helm_template(*([values] if values else [])))
    assert [str(p) for p in check_documents(docs, item_keys)] == []


def test_fan_out_uses_only_keys_that_expand_emits(item_keys):
    task = dag_tasks(benchmark_template())["benchmark"]
    used = {v["value"][len("{{item."):-2] for v in task["arguments"]["parameters"] if v["value"].startswith("{{item.")}
    assert used and used <= item_keys["{{tasks.expand.outputs.result}}"]


def test_lint_cli_passes_on_the_repository():
    proc = subprocess.run([PVBENCH, "argo", "lint"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_the_broken_fixture_fails_with_every_problem():
    problems = "\n".join(map(str, check_files([FIXTURES / "broken-reference.yaml"])))
    for expected in [
        "onExit 'cleanup-that-does-not-exist' is not a template",
        "no input parameter 'storage-clas'",
        "no parameter 'storage_classes'",
        "{{item}} outside withParam/withItems",
        "template 'stepp' does not exist",
        "depends on 'firstt'",
        "'second' is not an upstream task here",
    ]:
        assert expected in problems, f"{expected!r} not reported:\n{problems}"


def _broken(mutate) -> list[str]:
    docs = copy.deepcopy(all_docs())
    wt = next(d for d in docs if d["kind"] == "WorkflowTemplate")
    mutate(wt, docs)
    return [str(p) for p in check_documents(docs)]


def _tpl(wt, name):
    return templates_by_name(wt)[name]


def _task(wt, name):
    return dag_tasks(wt)[name]


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda wt, _: _tpl(wt, "benchmark-cell")["container"]["args"].append("{{inputs.parameters.nodee}}"),
         "no input parameter 'nodee'"),
        (lambda wt, _: _tpl(wt, "benchmark-cell")["synchronization"]["mutexes"][0].update(
            name="pvbench-{{inputs.parameters.node}}"), "no input parameter 'node'"),
        (lambda wt, _: _tpl(wt, "validate")["container"]["args"].append("{{workflow.parameters.reps}}"),
         "no parameter 'reps'"),
        (lambda wt, _: _task(wt, "benchmark").update(template="benchmark-cel"), "'benchmark-cel' does not exist"),
        (lambda wt, _: _task(wt, "benchmark").update(withParam="{{tasks.expnd.outputs.result}}"),
         "'expnd' is not an upstream task"),
        (lambda wt, _: _task(wt, "benchmark")["arguments"]["parameters"].pop(), "does not pass parameter 'node-value'"),
        (lambda wt, _: _task(wt, "aggregate")["arguments"]["parameters"].append({"name": "x", "value": "1"}),
         "passes parameter 'x'"),
        (lambda wt, _: _task(wt, "report")["arguments"]["artifacts"][0].update(
            **{"from": "{{tasks.aggregate.outputs.artifacts.tables}}"}), "no output artifact 'tables'"),
        (lambda wt, _: _task(wt, "report").update(depends="expand"), "'aggregate' is not an upstream task"),
        (lambda wt, _: _task(wt, "aggregate")["arguments"]["parameters"][1].update(
            value="{{=lower(workflow.parameters.campain)}}"), "no parameter 'campain'"),
        (lambda wt, docs: next(d for d in docs if d["kind"] == "CronWorkflow")["spec"]["workflowSpec"]["arguments"][
            "parameters"].append({"name": "occassion", "value": "x"}), "passes parameter 'occassion'"),
        (lambda wt, docs: next(d for d in docs if d["kind"] == "CronWorkflow")["spec"]["workflowSpec"]["arguments"][
            "parameters"].append({"name": "repetitions", "value": "4"}), "'4' is not in"),
        (lambda wt, docs: next(d for d in docs if d["kind"] == "CronWorkflow")["spec"]["workflowSpec"][
            "workflowTemplateRef"].update(name="pvbench"), "workflowTemplateRef 'pvbench'"),
    ],
    ids=["input-param", "mutex-param", "workflow-param", "template-ref", "task-output", "missing-arg",
         "unknown-arg", "artifact-ref", "not-upstream", "expression", "cron-param", "cron-enum", "cron-ref"],
)
def test_a_broken_reference_is_caught(mutate, expected):
    problems = _broken(mutate)
    assert any(expected in p for p in problems), problems


def test_unknown_item_key_is_caught(item_keys):
    docs = copy.deepcopy(all_docs())
    wt = next(d for d in docs if d["kind"] == "WorkflowTemplate")
    dag_tasks(wt)["benchmark"]["arguments"]["parameters"][0]["value"] = "{{item.storageclass}}"
    problems = [str(p) for p in check_documents(docs, item_keys)]
    assert any("no key 'storageclass'" in p for p in problems), problems


def test_sensor_dest_and_dependencies_are_checked(item_keys):
    docs = load_yaml_docs(helm_template(ALL_ON_VALUES))
    sensor = next(d for d in docs if d["kind"] == "Sensor")
    trigger = sensor["spec"]["triggers"][0]["template"]
    trigger["k8s"]["parameters"][0]["dest"] = "spec.arguments.parameters.40.value"
    trigger["conditions"] = "storage-class"
    trigger["k8s"]["source"]["resource"]["spec"]["arguments"]["parameters"].append({"name": "rolee", "value": ""})
    problems = "\n".join(map(str, check_documents(docs, item_keys)))
    assert "dest 'spec.arguments.parameters.40.value' does not exist" in problems
    assert "dependency 'storage-class'" in problems
    assert "passes parameter 'rolee'" in problems
