"""Adaptive repetitions in pvbench-benchmark: the recursive `adaptive` DAG, run for real.

No Argo controller runs here, so the loop is driven the way the rendered template states
it: main's `adaptive` task (its `when`, its arguments), then per round the `check` task's
container (`pvbench stats ci-check` over the run's results, fetched from a real MinIO like
Argo's input artifact), its output parameters read from the paths the template declares,
the fan-out's `when` and `withParam` over them, each cell's benchmark-cell container (real
fio), its result uploaded under the key the item carries, then `next-round`'s `depends`,
`when` and arguments (round + 1) for the next level. The `when`s are evaluated like Argo's
(argo_helpers.evaluate_when), never re-stated here.
"""

from __future__ import annotations

import copy
import json
import os
import re

import pytest

from argo_helpers import (
    ALL_ON_VALUES,
    TEMPLATES,
    PodPaths,
    benchmark_template,
    dag_tasks,
    download_prefix,
    evaluate_when,
    helm_template,
    load_yaml_docs,
    run_container,
    step_context,
    substitute,
    task_inputs,
    templates_by_name,
    upload_dir,
    workflow_context,
)
from pvbench.argo import conventions as c
from pvbench.argo.references import check_documents, check_files
from pvbench.results import ResultDocument
from pvbench.store.layout import CellKey, results_prefix

RUN = "pvbench-benchmark-q4t8z"
PARAMS = {
    "campaign": "Thesis-A",  # upper case on purpose: keys hold its slug
    "occasion": "weekday-night",
    "storage-classes": '["fast-ssd","slow-hdd"]',
    "profile": "dbench",
    "tests": "randread-iops",
    "repetitions": "3",
    "seed": "7",
    # short fio timing keeps a cell near a second; the UI's enums are for real runs
    "ramp": "200ms",
    "runtime": "500ms",
    "size": "8M",
    "volume-size": "1Gi",
    "adaptive-target": "0.02",
    # Below the UI's smallest cap (10) to keep the test short. With the minimum of 5 equal to
    # the cap, the end is certain whatever fio measures: rounds for reps 4 and 5, then the
    # third check finds every cell done.
    "adaptive-max-repetitions": "5",
}
CLASSES = json.loads(PARAMS["storage-classes"])


def item_fields(task: dict) -> set[str]:
    """The {{item.x}} keys a fan-out task's arguments use."""
    return {m for p in task["arguments"]["parameters"] for m in re.findall(r"{{item\.([\w\-]+)}}", p["value"])}


def depends_met(depends: str, phases: dict[str, str]) -> bool:
    """Argo's enhanced depends over known task phases (a bare name: Succeeded, Skipped or Daemoned)."""
    def phase(m: re.Match) -> str:
        name, result = m.group(1), m.group(2)
        ok = {result} if result else {"Succeeded", "Skipped", "Daemoned"}
        return "true" if phases[name] in ok else "false"

    return evaluate_when(re.sub(r"([A-Za-z0-9\-]+)(?:\.(Succeeded|Failed|Errored|Skipped|Omitted|Daemoned))?",
                                phase, depends))


@pytest.fixture(scope="module")
def wt():
    return benchmark_template()


@pytest.fixture(scope="module")
def ctx(wt):
    return workflow_context(wt, PARAMS, RUN)


class Driver:
    """Runs the steps of the rendered template for real, as Argo would around each pod."""

    def __init__(self, wt, ctx, root, client, bucket):
        self.wt, self.ctx, self.root, self.client, self.bucket = wt, ctx, root, client, bucket
        self.tpl = templates_by_name(wt)
        self.env = {**os.environ, "PVBENCH_NODE_NAME": "worker-1"}
        self.pods = 0

    def paths(self, template: dict) -> PodPaths:
        self.pods += 1
        return PodPaths(template, self.root / f"{self.pods:03d}-{template['name']}")

    def cell(self, task: dict, scope: dict, item: dict) -> dict:
        template = self.tpl[task["template"]]
        local = step_context(template, self.ctx, task_inputs(task, scope, item))
        paths = self.paths(template)
        proc = run_container(template, local, paths, self.env)
        assert proc.returncode == 0, proc.stderr
        [art] = template["outputs"]["artifacts"]
        key = substitute(art["s3"]["key"], local)
        upload_dir(self.client, self.bucket, paths.local(art["path"]), key)
        return {"item": item, "key": key, "mutex": substitute(template["synchronization"]["mutexes"][0]["name"], local)}

    def container(self, task: dict, scope: dict) -> tuple[dict, dict, PodPaths, object, list[str]]:
        template = self.tpl[task["template"]]
        local = step_context(template, self.ctx, task_inputs(task, scope))
        paths = self.paths(template)
        fetched = []
        for art in (template.get("inputs") or {}).get("artifacts") or []:
            fetched += download_prefix(self.client, self.bucket, substitute(art["s3"]["key"], local),
                                       paths.local(substitute(art["path"], local)))
        proc = run_container(template, local, paths, self.env)
        return template, local, paths, proc, fetched

    def adaptive_round(self, call: dict, inputs: dict) -> dict:
        """One level of the recursive DAG; returns what happened and the next level's inputs (or None)."""
        template = self.tpl[call["template"]]
        dag_ctx = step_context(template, self.ctx, inputs)
        tasks = {t["name"]: t for t in template["dag"]["tasks"]}
        check_tpl, _, paths, proc, fetched = self.container(tasks["check"], dag_ctx)
        assert proc.returncode == 0, proc.stderr
        # as Argo's executor saves an output parameter: the file, less one trailing newline
        outputs = {p["name"]: paths.local(p["valueFrom"]["path"]).read_text().removesuffix("\n")
                   for p in check_tpl["outputs"]["parameters"]}
        scope = {**dag_ctx, **{f"tasks.check.outputs.parameters.{k}": v for k, v in outputs.items()}}
        fan_out = tasks["benchmark"]
        phases = {"check": "Succeeded"}
        cells = []
        if evaluate_when(substitute(fan_out["when"], scope)):
            for item in json.loads(substitute(fan_out["withParam"], scope)):
                cells.append(self.cell(fan_out, scope, item))
            phases["benchmark"] = "Succeeded"
        else:
            phases["benchmark"] = "Skipped"
        again = tasks["next-round"]
        recurse = depends_met(again["depends"], phases) and evaluate_when(substitute(again["when"], scope))
        return {"inputs": inputs, "report": json.loads(proc.stdout), "outputs": outputs, "fetched": fetched,
                "cells": cells, "next_call": again, "next_inputs": task_inputs(again, dag_ctx) if recurse else None}


@pytest.fixture(scope="module")
def loop(wt, ctx, tmp_path_factory, minio_server):
    """expand -> the first fan-out -> adaptive rounds until the template stops calling itself."""
    from minio import Minio

    bucket = "argo-adaptive"
    minio_server.make_bucket(bucket)
    client = Minio(minio_server.endpoint, access_key=minio_server.access_key, secret_key=minio_server.secret_key,
                   secure=False)
    d = Driver(wt, ctx, tmp_path_factory.mktemp("adaptive"), client, bucket)
    main = dag_tasks(wt)

    _, _, _, proc, _ = d.container(main["expand"], ctx)
    assert proc.returncode == 0, proc.stderr
    planned = [d.cell(main["benchmark"], ctx, item) for item in json.loads(proc.stdout)]
    assert len(planned) == len(CLASSES) * int(PARAMS["repetitions"])

    call = main["adaptive"]
    assert depends_met(call["depends"], {"benchmark": "Succeeded"})
    assert evaluate_when(substitute(call["when"], ctx)), "adaptive-target 0.02 runs the loop"
    rounds, inputs = [], task_inputs(call, ctx)
    while inputs is not None:
        assert len(rounds) < 50, "runaway loop"
        rounds.append(d.adaptive_round(call, inputs))
        call, inputs = rounds[-1]["next_call"], rounds[-1]["next_inputs"]
    phases = {"adaptive": "Succeeded"}
    assert depends_met(main["aggregate"]["depends"], phases)
    return {"planned": planned, "rounds": rounds, "client": client, "bucket": bucket}


# ---------------------------------------------------------------- the check step, for real
@pytest.mark.slow
def test_check_step_gives_next_items_with_every_key_the_fan_out_uses(wt, loop):
    first = loop["rounds"][0]
    nxt = json.loads(first["outputs"]["next"])
    assert first["outputs"]["more"] == "true" and first["report"]["precise"] is False
    assert nxt == first["report"]["next"], "next.json is the report's next list"
    # the check saw exactly the run's results so far (Argo's input artifact)
    assert len([k for k in first["fetched"] if k.endswith("/result.json")]) == len(loop["planned"])
    fan_out = dag_tasks(wt, "adaptive")["benchmark"]
    used = item_fields(fan_out)
    assert used == item_fields(dag_tasks(wt)["benchmark"]), "both fan-outs read the same item keys"
    assert {"storage_class", "profile", "workload", "rep", "order", "key"} <= used
    for item in nxt:
        assert used <= set(item), (used - set(item), item)
    # one more repetition of each cell (3 < the minimum of 5), placed after the run's six cells
    assert sorted(i["storage_class"] for i in nxt) == CLASSES
    assert {i["rep"] for i in nxt} == {4}
    assert sorted(i["order"] for i in nxt) == [6, 7]
    for item in nxt:
        assert item["key"] == CellKey(PARAMS["campaign"], RUN, PARAMS["occasion"], item["storage_class"],
                                      PARAMS["profile"], item["workload"], item["rep"]).prefix()


@pytest.mark.slow
def test_later_rounds_land_under_the_same_key_layout(loop):
    client, bucket = loop["client"], loop["bucket"]
    later = [cell for r in loop["rounds"] for cell in r["cells"]]
    assert later, "the loop ran cells"
    for cell in later:
        item = cell["item"]
        assert cell["key"] == item["key"], "the artifact key is the item's, never rebuilt"
        doc = ResultDocument.from_json(client.get_object(bucket, f"{item['key']}/result.json").read())
        assert doc.identity.rep == item["rep"] and doc.identity.order == item["order"]
        assert doc.identity.storage_class == item["storage_class"] and doc.identity.run == RUN
        assert cell["mutex"] == "pvbench-node-linux", "later rounds keep the one-pod-per-node mutex"
    listed = {o.object_name for o in client.list_objects(bucket, prefix=results_prefix(PARAMS["campaign"], RUN) + "/",
                                                         recursive=True) if o.object_name.endswith("/result.json")}
    expected = {CellKey(PARAMS["campaign"], RUN, PARAMS["occasion"], sc, "dbench", "randread-iops", rep).result_key()
                for sc in CLASSES for rep in range(1, 6)}
    assert listed == expected, sorted(listed ^ expected)
    orders = [c["item"]["order"] for c in loop["planned"] + later]
    assert sorted(orders) == list(range(len(orders))), "one order for every cell of the run"


@pytest.mark.slow
def test_loop_stops_when_every_cell_is_precise_or_capped(loop):
    rounds = loop["rounds"]
    assert [r["inputs"]["round"] for r in rounds] == ["1", "2", "3"]
    assert [len(r["cells"]) for r in rounds] == [2, 2, 0]
    last = rounds[-1]
    assert last["outputs"] == {"next": "[]", "more": "false"}
    assert last["next_inputs"] is None, "no further level once ci-check says done"
    assert all(r["inputs"]["max-rounds"] == PARAMS["adaptive-max-repetitions"] for r in rounds)


@pytest.mark.slow
def test_reference_walker_accepts_the_new_templates(wt, loop):
    """With the item keys both producers really emit: `pvbench expand` and ci-check's next."""
    item_keys = {
        dag_tasks(wt)["benchmark"]["withParam"]: set.intersection(*(set(c["item"]) for c in loop["planned"])),
        dag_tasks(wt, "adaptive")["benchmark"]["withParam"]: set.intersection(
            *(set(i) for i in json.loads(loop["rounds"][0]["outputs"]["next"]))),
    }
    assert [str(p) for p in check_files(sorted(TEMPLATES.glob("*.yaml")), item_keys)] == []
    assert [str(p) for p in check_documents(load_yaml_docs(helm_template(ALL_ON_VALUES)), item_keys)] == []
    docs = copy.deepcopy(load_yaml_docs(TEMPLATES / "benchmark.yaml"))
    dag_tasks(docs[0], "adaptive")["benchmark"]["arguments"]["parameters"][3]["value"] = "{{item.repetition}}"
    problems = [str(p) for p in check_documents(docs, item_keys)]
    assert any("no key 'repetition'" in p for p in problems), problems


# ---------------------------------------------------------------- it always ends
def _worst_case_rounds(wt, params: dict) -> int:
    """How many rounds the template allows if ci-check never said done (more always true)."""
    ctx = workflow_context(wt, params, RUN)
    tpl = templates_by_name(wt)
    call = dag_tasks(wt)["adaptive"]
    if not evaluate_when(substitute(call["when"], ctx)):
        return 0
    inputs, rounds = task_inputs(call, ctx), 0
    while inputs is not None:
        rounds += 1
        assert rounds <= c.ARGO_MAX_RECURSION_DEPTH, "no cap: the template would recurse until Argo stops it"
        template = tpl[call["template"]]
        dag_ctx = step_context(template, ctx, inputs)
        call = {t["name"]: t for t in template["dag"]["tasks"]}["next-round"]
        scope = {**dag_ctx, "tasks.check.outputs.parameters.more": "true",
                 "tasks.check.outputs.parameters.next": "[]"}
        inputs = task_inputs(call, dag_ctx) if evaluate_when(substitute(call["when"], scope)) else None
    return rounds


def test_recursion_is_capped_even_if_the_check_never_says_done(wt):
    params = {p["name"]: p for p in wt["spec"]["arguments"]["parameters"]}
    caps = params["adaptive-max-repetitions"]["enum"]
    assert caps == list(c.ADAPTIVE_MAX_REPETITIONS) and params["adaptive-max-repetitions"]["value"] in caps
    for target in params["adaptive-target"]["enum"]:
        for cap in caps:
            rounds = _worst_case_rounds(wt, {"adaptive-target": target, "adaptive-max-repetitions": cap})
            assert rounds == (0 if target == "off" else int(cap)), (target, cap, rounds)
    # a cap is never below the minimum ci-check is told to reach, and stays far from Argo's limit
    check = templates_by_name(wt)["adaptive-check"]["container"]["args"]
    assert int(check[check.index("--min-reps") + 1]) <= min(map(int, caps))
    assert max(map(int, caps)) + 2 < c.ARGO_MAX_RECURSION_DEPTH


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda t: t.pop("when"), "without a `when`"),
        (lambda t: t["arguments"]["parameters"][2].update(value="{{inputs.parameters.round}}"),
         "tests no input parameter that the call changes"),
        (lambda t: t.update(when="{{tasks.check.outputs.parameters.more}} == true"),
         "tests no input parameter that the call changes"),
    ],
    ids=["no-when", "round-not-incremented", "no-counter-in-when"],
)
def test_walker_rejects_a_recursion_that_could_never_stop(mutate, expected):
    docs = copy.deepcopy(load_yaml_docs(TEMPLATES / "benchmark.yaml"))
    again = dag_tasks(docs[0], "adaptive")["next-round"]
    assert again["template"] == "adaptive" and again["arguments"]["parameters"][2]["name"] == "round"
    mutate(again)
    problems = [str(p) for p in check_documents(docs)]
    assert any(expected in p for p in problems), problems


# ---------------------------------------------------------------- off is today's workflow
def test_off_skips_the_adaptive_round_and_aggregates_as_before(wt):
    params = {p["name"]: p for p in wt["spec"]["arguments"]["parameters"]}
    assert params["adaptive-target"]["value"] == "off" and params["adaptive-target"]["enum"][0] == "off"
    ctx = workflow_context(wt, {}, RUN)
    main = dag_tasks(wt)
    assert not evaluate_when(substitute(main["adaptive"]["when"], ctx))
    # skipped right after the cells, in both outcomes aggregate followed them in before
    for cells in ("Succeeded", "Failed"):
        assert depends_met(main["adaptive"]["depends"], {"benchmark": cells})
        assert depends_met(main["aggregate"]["depends"], {"adaptive": "Skipped"})
    # and when the cells errored (adaptive omitted), aggregate is omitted as before
    assert not depends_met(main["adaptive"]["depends"], {"benchmark": "Errored"})
    assert not depends_met(main["aggregate"]["depends"], {"adaptive": "Omitted"})
    # nothing else reads the new parameters
    tpl = templates_by_name(wt)
    for name in ("validate", "expand", "benchmark-cell", "aggregate", "report", "cleanup"):
        assert "adaptive" not in json.dumps(tpl[name]), name


def test_check_step_is_built_like_aggregate(wt):
    tpl = templates_by_name(wt)
    check, aggregate = tpl["adaptive-check"], tpl["aggregate"]
    # the run's results come from the artifact repository: same key and path as aggregate's
    assert check["inputs"]["artifacts"] == aggregate["inputs"]["artifacts"]
    assert not check["container"].get("env"), "no credentials in the pod"
    assert check["container"]["securityContext"] == aggregate["container"]["securityContext"]
    args = check["container"]["args"]
    assert args[:2] == ["stats", "ci-check"] and "--exit-zero" in args, "needing more is an answer, not a failure"
    out = args[args.index("--outputs") + 1]
    assert {p["name"]: p["valueFrom"]["path"] for p in check["outputs"]["parameters"]} == {
        "next": f"{out}/next.json", "more": f"{out}/more"}
    # the later fan-out is the same benchmark-cell (fresh PVC, mutex, anti-affinity) as the first
    assert dag_tasks(wt, "adaptive")["benchmark"]["template"] == dag_tasks(wt)["benchmark"]["template"]
    assert dag_tasks(wt, "adaptive")["benchmark"]["arguments"] == dag_tasks(wt)["benchmark"]["arguments"]
