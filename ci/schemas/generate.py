#!/usr/bin/env python3
"""Generate strict JSON schemas for kubeconform, offline.

    .venv/bin/python ci/schemas/generate.py OUT_DIR

* Kubernetes: the strict schemas shipped in the `kubernetes-validate` package (v1.31),
  with each file's `$id` stripped and refs rewritten to the local `_definitions.json`.
* Argo Workflows (Workflow, WorkflowTemplate, CronWorkflow, ClusterWorkflowTemplate) and
  Argo Events (EventSource, Sensor): generated from Hera's pydantic models, with
  `additionalProperties: false` on every object that lists its properties, so an
  unknown field is an error (the CRDs the controllers install are looser than that).

File names follow kubeconform's default `{kind}{-group-first-segment}-{version}.json`, so
`kubeconform -schema-location 'OUT_DIR/{{ .ResourceKind }}{{ .KindSuffix }}.json'` finds them.
Both the Kubernetes version and Hera's models are pinned in sdk/pyproject.toml, so the
output is reproducible; it is generated at test time (~3 s) rather than committed (~5 MB).
"""

from __future__ import annotations

import copy
import json
import shutil
import sys
from pathlib import Path

K8S_VERSION = "v1.31.0"


def kubernetes_schemas(out: Path) -> int:
    import kubernetes_validate

    src = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" / f"{K8S_VERSION}-local-strict"
    count = 0
    for path in src.glob("*.json"):
        text = path.read_text()
        text = text.replace('"/api/_definitions.json#', '"_definitions.json#')
        doc = json.loads(text)
        doc.pop("$id", None)
        (out / path.name).write_text(json.dumps(doc))
        count += 1
    return count


def strict(schema: dict) -> dict:
    """additionalProperties: false wherever an object lists its properties and says nothing else."""

    def walk(node):
        if isinstance(node, dict):
            if "properties" in node and "additionalProperties" not in node:
                node["additionalProperties"] = False
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return schema


def inline(defs: dict, holder: str, field: str, embedded: str) -> None:
    """Go's `json:",inline"` embedding, which the OpenAPI generator renders as a named field."""
    target = defs[holder]
    target["properties"].pop(field, None)
    target["properties"].update(copy.deepcopy(defs[embedded]["properties"]))


def model_schema(model, kind: str, api_version: str, fixes=()) -> dict:
    schema = model.model_json_schema(by_alias=True, ref_template="#/$defs/{model}")
    defs = schema.get("$defs", {})
    for fix in fixes:
        fix(defs)
    props = schema["properties"]
    props["apiVersion"] = {"type": "string", "enum": [api_version]}
    props["kind"] = {"type": "string", "enum": [kind]}
    schema["required"] = sorted(set(schema.get("required", [])) | {"apiVersion", "kind", "metadata"})
    return strict(schema)


def argo_schemas(out: Path) -> list[str]:
    from hera.events import models as ev
    from hera.workflows import models as wf

    written = []

    def events_fixes(defs: dict) -> None:
        if "ResourceEventSource" in defs:
            defs["ResourceEventSource"]["properties"].pop("groupVersionResource", None)
            for name in ("group", "version", "resource"):
                defs["ResourceEventSource"]["properties"][name] = {"type": "string"}
        # Go types with their own JSON form, rendered by the generator as their struct fields.
        if "Int64OrString" in defs:
            defs["Int64OrString"] = {"type": ["string", "integer"]}
        if "Amount" in defs:
            defs["Amount"] = {"type": ["number", "string"]}
        if "WebhookEventSource" in defs and "WebhookContext" in defs:
            inline(defs, "WebhookEventSource", "webhookContext", "WebhookContext")

    def embedded_workflow(defs: dict) -> None:
        """A trigger's `source.resource` is free-form in the Go types (K8SResource wraps raw
        bytes); pvbench's triggers create Workflows, so validate it as a strict Workflow."""
        if "K8SResource" not in defs:
            return
        workflow = model_schema(wf.Workflow, "Workflow", "argoproj.io/v1alpha1")
        text = json.dumps(workflow.pop("$defs", {}))
        body = json.dumps(workflow)
        text = text.replace('"#/$defs/', '"#/$defs/wf__')
        body = body.replace('"#/$defs/', '"#/$defs/wf__')
        for name, schema in json.loads(text).items():
            defs[f"wf__{name}"] = schema
        defs["K8SResource"] = json.loads(body)

    for kind, model, fixes in [
        ("Workflow", wf.Workflow, ()),
        ("WorkflowTemplate", wf.WorkflowTemplate, ()),
        ("ClusterWorkflowTemplate", wf.ClusterWorkflowTemplate, ()),
        ("CronWorkflow", wf.CronWorkflow, ()),
        ("EventSource", ev.EventSource, (events_fixes,)),
        ("Sensor", ev.Sensor, (events_fixes, embedded_workflow)),
    ]:
        name = f"{kind.lower()}-argoproj-v1alpha1.json"
        (out / name).write_text(json.dumps(model_schema(model, kind, "argoproj.io/v1alpha1", fixes)))
        written.append(name)
    return written


def generate(out: Path) -> Path:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    n = kubernetes_schemas(out)
    argo = argo_schemas(out)
    (out / "README").write_text(f"Generated by ci/schemas/generate.py: {n} Kubernetes {K8S_VERSION} schemas, {argo}\n")
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print(generate(Path(sys.argv[1])))
