"""Walk every reference in Argo manifests and report the ones that point nowhere.

Hera checks types only, and Argo itself only notices a dangling ``{{inputs.parameters.x}}``
when a pod is about to start (or never: it stays a literal string). This walker reads the
rendered YAML (templates/*.yaml, or ``helm template`` output) and checks:

* ``entrypoint``, ``onExit``, every task/step ``template`` and ``workflowTemplateRef``;
* task ``depends``/``dependencies`` names, and that ``tasks.X.…`` is only used downstream of X;
* ``{{inputs.parameters.x}}``, ``{{inputs.artifacts.x}}``, ``{{workflow.parameters.x}}``,
  ``{{item}}``/``{{item.x}}`` (only under withParam/withItems, keys checked when known),
  ``{{tasks.x.outputs.result|parameters.p|artifacts.a}}``, ``{{steps.…}}``, also inside
  ``{{=expression}}`` tags;
* task arguments against the called template's inputs (missing and unknown names), and
  artifact ``from`` references;
* arguments that CronWorkflows and Sensors pass to a WorkflowTemplate (names, enums, and
  Sensor ``dest: spec.arguments.parameters.N.value`` indexes);
* recursion (a task or step that calls a template which leads back to its own): the call
  needs a ``when`` over an input parameter that the call itself changes (a counter), else
  nothing could ever stop it. Whether the bound is reached is for the tests to show.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

import yaml

TAG = re.compile(r"{{\s*(.*?)\s*}}")
# References inside an expression tag ({{=…}}): dotted identifiers we know how to check.
EXPR_REF = re.compile(r"\b((?:inputs|workflow|tasks|steps)\.[A-Za-z0-9_.\-]+|item(?:\.[A-Za-z0-9_\-]+)?)")
WORKFLOW_VARS = {
    "name", "namespace", "uid", "serviceAccountName", "creationTimestamp", "duration", "priority",
    "status", "failures", "mainEntrypoint", "labels", "annotations", "outputs",
}  # fmt: skip
GLOBAL_VARS = {"pod.name", "node.name", "retries", "lastRetry.exitCode", "lastRetry.status", "lastRetry.duration",
               "lastRetry.message", "cronworkflow.name", "cronworkflow.namespace"}  # fmt: skip


@dataclass
class Problem:
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


@dataclass
class Scope:
    where: str
    inputs_params: set[str]
    inputs_artifacts: set[str]
    globals_: set[str]
    item: bool = False
    item_keys: set[str] | None = None
    tasks: dict[str, dict] = field(default_factory=dict)  # visible upstream tasks/steps -> called template
    step_kind: str = "tasks"


def strings(node: Any, skip: tuple[str, ...] = ()) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in skip:
                continue
            if isinstance(key, str):
                yield key  # map keys can hold placeholders too (nodeSelector)
            yield from strings(value, skip)
    elif isinstance(node, list):
        for value in node:
            yield from strings(value, skip)


def _outputs(template: dict) -> tuple[set[str], set[str], bool]:
    out = template.get("outputs") or {}
    params = {p["name"] for p in out.get("parameters") or []}
    arts = {a["name"] for a in out.get("artifacts") or []}
    has_result = any(k in template for k in ("container", "script", "containerSet", "data", "http", "plugin"))
    return params, arts, has_result


class Checker:
    def __init__(self, docs: Iterable[dict], item_keys: dict[str, set[str]] | None = None):
        self.docs = [d for d in docs if isinstance(d, dict) and d.get("kind")]
        self.item_keys = item_keys or {}
        self.problems: list[Problem] = []
        self.calls: dict[str, set[str]] = {}  # template -> templates its tasks/steps call (current spec)
        self.workflow_templates = {
            d["metadata"]["name"]: d for d in self.docs if d["kind"] in ("WorkflowTemplate", "ClusterWorkflowTemplate")
        }

    def fail(self, where: str, message: str) -> None:
        self.problems.append(Problem(where, message))

    # ------------------------------------------------------------------ tags
    def check_string(self, text: str, scope: Scope) -> None:
        for tag in TAG.findall(text):
            if tag.startswith("="):
                for ref in EXPR_REF.findall(tag):
                    self.check_ref(ref, scope, text)
            else:
                self.check_ref(tag, scope, text)

    def check_ref(self, ref: str, scope: Scope, text: str) -> None:
        where = scope.where
        parts = ref.split(".")
        head = parts[0]
        if head == "inputs":
            if len(parts) != 3 or parts[1] not in ("parameters", "artifacts"):
                self.fail(where, f"malformed reference {{{{{ref}}}}}")
            elif parts[1] == "parameters" and parts[2] not in scope.inputs_params:
                self.fail(where, f"{{{{{ref}}}}} but the template has no input parameter {parts[2]!r}")
            elif parts[1] == "artifacts" and parts[2] not in scope.inputs_artifacts:
                self.fail(where, f"{{{{{ref}}}}} but the template has no input artifact {parts[2]!r}")
        elif head == "workflow":
            if len(parts) >= 3 and parts[1] == "parameters":
                if parts[2] not in scope.globals_:
                    self.fail(where, f"{{{{{ref}}}}} but the workflow has no parameter {parts[2]!r}")
            elif len(parts) < 2 or parts[1] not in WORKFLOW_VARS:
                self.fail(where, f"unknown workflow variable {{{{{ref}}}}}")
        elif head == "item":
            if not scope.item:
                self.fail(where, f"{{{{{ref}}}}} outside withParam/withItems")
            elif len(parts) > 1 and scope.item_keys is not None and parts[1] not in scope.item_keys:
                self.fail(where, f"{{{{{ref}}}}} but the items have no key {parts[1]!r} "
                                 f"(they have {sorted(scope.item_keys)})")  # fmt: skip
        elif head in ("tasks", "steps"):
            self.check_output_ref(ref, parts, scope)
        elif ref in GLOBAL_VARS or head in ("cronworkflow",):
            pass
        else:
            self.fail(where, f"unknown reference {{{{{ref}}}}}")

    def check_output_ref(self, ref: str, parts: list[str], scope: Scope) -> None:
        where = scope.where
        if len(parts) < 3 or parts[2] != "outputs" and parts[2] not in ("status", "exitCode", "startedAt",
                                                                            "finishedAt", "id", "ip", "hostNodeName"):
            self.fail(where, f"malformed reference {{{{{ref}}}}}")
            return
        name = parts[1]
        if parts[0] != scope.step_kind or name not in scope.tasks:
            self.fail(where, f"{{{{{ref}}}}} but {name!r} is not an upstream {scope.step_kind[:-1]} here")
            return
        if parts[2] != "outputs":
            return
        params, arts, has_result = _outputs(scope.tasks[name])
        kind = parts[3] if len(parts) > 3 else ""
        if kind == "result":
            if not has_result:
                self.fail(where, f"{{{{{ref}}}}} but {name!r} runs a template without a result")
        elif kind == "parameters" and len(parts) == 5:
            if parts[4] not in params:
                self.fail(where, f"{{{{{ref}}}}} but {name!r} has no output parameter {parts[4]!r}")
        elif kind == "artifacts" and len(parts) == 5:
            if parts[4] not in arts:
                self.fail(where, f"{{{{{ref}}}}} but {name!r} has no output artifact {parts[4]!r}")
        else:
            self.fail(where, f"malformed reference {{{{{ref}}}}}")

    # ------------------------------------------------------------------ workflows
    def check_all(self) -> list[Problem]:
        for doc in self.docs:
            kind, name = doc["kind"], doc.get("metadata", {}).get("name", "?")
            label = f"{kind}/{name}"
            if kind in ("Workflow", "WorkflowTemplate", "ClusterWorkflowTemplate"):
                self.check_workflow_spec(doc.get("spec") or {}, label)
            elif kind == "CronWorkflow":
                self.check_workflow_spec(doc["spec"].get("workflowSpec") or {}, label)
            elif kind == "Sensor":
                self.check_sensor(doc, label)
        return self.problems

    def global_params(self, spec: dict, label: str) -> tuple[set[str], dict]:
        own = {p["name"]: p for p in (spec.get("arguments") or {}).get("parameters") or []}
        ref = spec.get("workflowTemplateRef")
        if not ref:
            return set(own), {}
        target = self.workflow_templates.get(ref.get("name"))
        if target is None:
            self.fail(label, f"workflowTemplateRef {ref.get('name')!r} is not among the checked manifests")
            return set(own), {}
        theirs = {p["name"]: p for p in (target["spec"].get("arguments") or {}).get("parameters") or []}
        self.check_arguments_against(own, theirs, label, ref.get("name"))
        return set(own) | set(theirs), target["spec"]

    def check_arguments_against(self, given: dict, theirs: dict, label: str, target: str) -> None:
        for pname, p in given.items():
            if pname not in theirs:
                self.fail(label, f"passes parameter {pname!r} that WorkflowTemplate {target} does not take")
            elif theirs[pname].get("enum") and "value" in p and "{{" not in str(p["value"]) \
                    and str(p["value"]) not in theirs[pname]["enum"]:
                self.fail(label, f"parameter {pname}={p['value']!r} is not in {theirs[pname]['enum']}")

    def check_workflow_spec(self, spec: dict, label: str) -> None:
        globals_, ref_spec = self.global_params(spec, label)
        templates = {t["name"]: t for t in spec.get("templates") or []}
        if not templates and not ref_spec:
            self.fail(label, "no templates and no workflowTemplateRef")
        for key in ("entrypoint", "onExit"):
            if spec.get(key) and spec[key] not in templates:
                self.fail(label, f"{key} {spec[key]!r} is not a template")
        self.calls = {name: self.called_templates(t) for name, t in templates.items()}
        for tname, template in templates.items():
            self.check_template(template, templates, globals_, f"{label} template {tname}")
        # The rest of the spec (e.g. workflowMetadata expressions) sees only workflow-level names.
        top = Scope(label, set(), set(), globals_)
        for text in strings({k: v for k, v in spec.items() if k not in ("templates", "arguments")}):
            self.check_string(text, top)

    @staticmethod
    def called_templates(template: dict) -> set[str]:
        tasks = list((template.get("dag") or {}).get("tasks") or [])
        tasks += [s for group in template.get("steps") or [] for s in group or []]
        return {t["template"] for t in tasks if t.get("template")}

    def reaches(self, start: str, goal: str) -> bool:
        """Whether calling template `start` can lead (through DAG tasks and steps) to template `goal`."""
        seen, todo = set(), [start]
        while todo:
            name = todo.pop()
            if name == goal:
                return True
            if name not in seen:
                seen.add(name)
                todo.extend(self.calls.get(name, ()))
        return False

    def check_recursion(self, task: dict, caller: str, where: str) -> None:
        """A call that leads back to its caller must be guarded by a `when` over a counter it changes."""
        if not task.get("template") or not self.reaches(task["template"], caller):
            return
        when = task.get("when") or ""
        if not when:
            self.fail(where, f"recursion into {task['template']!r} without a `when`: nothing can stop it")
            return
        args = {p["name"]: str(p.get("value", "")) for p in (task.get("arguments") or {}).get("parameters") or []}
        guards = set(re.findall(r"{{\s*inputs\.parameters\.([A-Za-z0-9_\-]+)\s*}}", when))
        progress = [g for g in guards if g in args and args[g] != f"{{{{inputs.parameters.{g}}}}}"]
        if not progress:
            self.fail(where, f"recursion into {task['template']!r}: its `when` ({when}) tests no input parameter "
                             "that the call changes, so every level would decide the same")

    def check_template(self, template: dict, templates: dict, globals_: set[str], where: str) -> None:
        inputs = template.get("inputs") or {}
        in_params = {p["name"] for p in inputs.get("parameters") or []}
        in_arts = {a["name"] for a in inputs.get("artifacts") or []}
        scope = Scope(where, in_params, in_arts, globals_)
        for text in strings(template, skip=("dag", "steps")):
            self.check_string(text, scope)
        if "dag" in template:
            tasks = {t["name"]: t for t in template["dag"].get("tasks") or []}
            for task in tasks.values():
                self.check_task(task, tasks, templates, scope, f"{where} task {task['name']}", "tasks")
                self.check_recursion(task, template["name"], f"{where} task {task['name']}")
        if "steps" in template:
            seen: dict[str, dict] = {}
            for group in template["steps"] or []:
                group_steps = {s["name"]: s for s in group}
                for step in group:
                    self.check_task(step, seen, templates, scope, f"{where} step {step['name']}", "steps")
                    self.check_recursion(step, template["name"], f"{where} step {step['name']}")
                seen.update(group_steps)

    def upstream(self, task: dict, tasks: dict) -> set[str]:
        names = set(task.get("dependencies") or [])
        names |= set(re.findall(r"[A-Za-z0-9_\-]+", re.sub(r"\.(Succeeded|Failed|Errored|Skipped|Omitted|Daemoned|"
                                                               r"AnySucceeded|AllFailed)\b", "", task.get("depends") or "")))
        names -= {"Succeeded", "Failed"}
        closure, todo = set(), list(names)
        while todo:
            n = todo.pop()
            if n in closure or n not in tasks:
                continue
            closure.add(n)
            todo.extend(self.upstream(tasks[n], tasks))
        return closure | names

    def check_task(self, task: dict, tasks: dict, templates: dict, parent: Scope, where: str, kind: str) -> None:
        called = templates.get(task.get("template", ""))
        if "templateRef" in task:
            called = None  # another WorkflowTemplate's template: checked where that one is defined
        elif called is None:
            self.fail(where, f"template {task.get('template')!r} does not exist")
        if kind == "tasks":
            deps = self.upstream(task, tasks)
            for dep in deps:
                if dep not in tasks:
                    self.fail(where, f"depends on {dep!r}, which is not a task of this DAG")
            visible = {n: templates.get(tasks[n].get("template", ""), {}) for n in deps if n in tasks}
        else:
            visible = {n: templates.get(s.get("template", ""), {}) for n, s in tasks.items()}
        with_param = task.get("withParam")
        item_keys = None
        if "withItems" in task:
            items = task["withItems"]
            if items and all(isinstance(i, dict) for i in items):
                item_keys = set.intersection(*(set(i) for i in items))
        elif with_param is not None:
            item_keys = self.item_keys.get(with_param)
        scope = Scope(where, parent.inputs_params, parent.inputs_artifacts, parent.globals_,
                      item=with_param is not None or "withItems" in task or "withSequence" in task,
                      item_keys=item_keys, tasks=visible, step_kind=kind)
        for text in strings(task):
            self.check_string(text, scope)
        if called is None:
            return
        args = task.get("arguments") or {}
        given = {p["name"] for p in args.get("parameters") or []}
        c_inputs = called.get("inputs") or {}
        wanted = {p["name"]: p for p in c_inputs.get("parameters") or []}
        for name in given - set(wanted):
            self.fail(where, f"passes parameter {name!r} that template {called['name']} does not take")
        for name, p in wanted.items():
            if name not in given and "value" not in p and "default" not in p and "valueFrom" not in p:
                self.fail(where, f"does not pass parameter {name!r} that template {called['name']} needs")
        given_arts = {a["name"]: a for a in args.get("artifacts") or []}
        wanted_arts = {a["name"]: a for a in c_inputs.get("artifacts") or []}
        for name in set(given_arts) - set(wanted_arts):
            self.fail(where, f"passes artifact {name!r} that template {called['name']} does not take")
        for name, a in wanted_arts.items():
            has_source = any(k in a for k in ("s3", "http", "git", "raw", "gcs", "oss", "azure", "hdfs",
                                              "artifactory", "from", "optional"))  # fmt: skip
            if name not in given_arts and not has_source:
                self.fail(where, f"does not pass artifact {name!r} that template {called['name']} needs")

    # ------------------------------------------------------------------ sensors
    def check_sensor(self, doc: dict, label: str) -> None:
        spec = doc.get("spec") or {}
        deps = {d["name"] for d in spec.get("dependencies") or []}
        for trig in spec.get("triggers") or []:
            t = trig.get("template") or {}
            where = f"{label} trigger {t.get('name')}"
            for dep in re.findall(r"[A-Za-z0-9_\-]+", t.get("conditions") or ""):
                if dep not in deps:
                    self.fail(where, f"condition names dependency {dep!r}, which the Sensor does not have")
            k8s = t.get("k8s") or t.get("argoWorkflow")
            if not k8s:
                continue
            resource = ((k8s.get("source") or {}).get("resource")) or {}
            for p in k8s.get("parameters") or []:
                dep = (p.get("src") or {}).get("dependencyName")
                if dep not in deps:
                    self.fail(where, f"parameter takes from dependency {dep!r}, which the Sensor does not have")
                self.check_dest(resource, p.get("dest", ""), where)
            if resource.get("kind") == "Workflow":
                self.check_workflow_spec(resource.get("spec") or {}, where)

    def check_dest(self, resource: dict, dest: str, where: str) -> None:
        node: Any = resource
        for part in dest.split("."):
            if isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            elif isinstance(node, dict) and part in node:
                node = node[part]
            else:
                self.fail(where, f"dest {dest!r} does not exist in the trigger's resource (at {part!r})")
                return


def load_documents(paths: Iterable[Path]) -> list[dict]:
    docs: list[dict] = []
    for path in paths:
        docs.extend(d for d in yaml.safe_load_all(Path(path).read_text()) if d)
    return docs


def check_documents(docs: Iterable[dict], item_keys: dict[str, set[str]] | None = None) -> list[Problem]:
    return Checker(docs, item_keys).check_all()


def check_files(paths: Iterable[Path], item_keys: dict[str, set[str]] | None = None) -> list[Problem]:
    return check_documents(load_documents(paths), item_keys)
