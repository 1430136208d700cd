#!/usr/bin/env python3
"""Argo CustomResourceDefinitions generated from the schemas kubeconform validates with.

    .venv/bin/python ci/cluster/crds.py OUT.yaml

Argo's own CRD manifests cannot be downloaded here, so the node gets CRDs whose
openAPIV3Schema is derived from exactly the JSON schemas of ci/schemas/generate.py
(Hera's pydantic models, Argo Workflows v4 / Argo Events): the API server then accepts
or rejects the chart's WorkflowTemplate, CronWorkflow, EventSource and Sensor with the
same types, enums and required fields. The translation to a *structural* schema:

* `$ref` is inlined; a definition that recurses into itself (Template -> DAGTask.inline
  -> Template) is cut at the second occurrence, where it keeps its unknown fields;
* `anyOf: [X, null]` (pydantic's Optional) becomes X with `nullable: true`;
  `anyOf: [string, integer]` and Quantity become `x-kubernetes-int-or-string`;
* untyped values (Argo's Item, a parameter's `value`) keep unknown fields;
* `additionalProperties: false` cannot sit next to `properties` in a CRD; unknown fields
  are instead pruned by the API server, and refused when the client asks for strict field
  validation (`kubectl --validate=strict`, `?fieldValidation=Strict`, helm's dry-run
  checks); the tests use the strict mode;
* titles, descriptions and defaults are dropped (size; defaults would alter objects).

WorkflowTaskResult (what Argo's executor writes, Argo >= 3.4) has no Hera model; its
small schema is written here by hand after Argo's types (NodeResult), loosely.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "schemas"))

import generate  # noqa: E402  ci/schemas/generate.py: the same schemas kubeconform uses

GROUP = "argoproj.io"
VERSION = "v1alpha1"
KEEP = {"x-kubernetes-preserve-unknown-fields": True}
# as controller-gen writes IntOrString: the anyOf makes the API server check the type
INT_OR_STRING = {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}

# kind -> (plural, scope, shortNames)
KINDS = {
    "Workflow": ("workflows", "Namespaced", ["wf"]),
    "WorkflowTemplate": ("workflowtemplates", "Namespaced", ["wftmpl"]),
    "ClusterWorkflowTemplate": ("clusterworkflowtemplates", "Cluster", ["clusterwftmpl", "cwft"]),
    "CronWorkflow": ("cronworkflows", "Namespaced", ["cwf", "cronwf"]),
    "EventSource": ("eventsources", "Namespaced", ["es"]),
    "Sensor": ("sensors", "Namespaced", ["sn"]),
}


class Converter:
    def __init__(self, defs: dict):
        self.defs = defs

    def convert(self, node: dict, stack: tuple[str, ...] = ()) -> dict:
        if "$ref" in node:
            name = node["$ref"].split("/")[-1]
            if name in stack:  # recursion: stop here, keep whatever is below
                return {"type": "object", **KEEP}
            if name.startswith("wf__WorkflowStatus") or name == "WorkflowStatus":
                return {"type": "object", **KEEP}  # a Workflow's status: the controller's
            if name == "Quantity":
                return dict(INT_OR_STRING)
            return self.convert(self.defs[name], stack + (name,))

        variants = node.get("anyOf") or node.get("oneOf")
        if variants:
            nullable = any(v.get("type") == "null" for v in variants)
            rest = [v for v in variants if v.get("type") != "null"]
            types = {v.get("type") for v in rest}
            if len(rest) == 1:
                out = self.convert(rest[0], stack)
            elif types == {"string", "integer"}:
                out = dict(INT_OR_STRING)
            elif types <= {"string", "integer", "number"}:
                out = {"x-kubernetes-int-or-string": True}  # a number or a string: not checked further
            else:
                out = dict(KEEP)
            if nullable:
                out["nullable"] = True
            return out

        t = node.get("type")
        if isinstance(t, list):  # ["string", "integer"] from generate.py's fixes
            nullable = "null" in t
            t = [x for x in t if x != "null"]
            out = (dict(INT_OR_STRING) if set(t) == {"string", "integer"} else {"x-kubernetes-int-or-string": True}) \
                if set(t) <= {"string", "integer", "number"} and len(t) > 1 \
                else self.convert({**node, "type": t[0]}, stack) if len(t) == 1 else dict(KEEP)
            if nullable:
                out["nullable"] = True
            return out

        if t is None and "properties" not in node:
            return dict(KEEP)  # any JSON value (Argo's Item, Amount, ...)

        out: dict = {}
        if t == "number" and node.get("title") == "Amount":
            return {"x-kubernetes-int-or-string": True}
        out["type"] = t or "object"
        for key in ("enum", "format", "pattern", "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems"):
            if key in node:
                out[key] = node[key]
        if out.get("format") not in (None, "date-time", "int32", "int64", "byte", "double", "float", "date"):
            out.pop("format")
        if out.get("format") == "base64":
            out["format"] = "byte"
        if out["type"] == "object":
            props = node.get("properties")
            if props:
                out["properties"] = {k: self.convert(v, stack) for k, v in props.items()}
                if node.get("required"):
                    out["required"] = list(node["required"])
            elif isinstance(node.get("additionalProperties"), dict):
                out["additionalProperties"] = self.convert(node["additionalProperties"], stack)
            else:
                out.update(KEEP)  # a free-form object
        elif out["type"] == "array":
            out["items"] = self.convert(node.get("items") or {}, stack)
        return out


def openapi_schema(model_schema: dict) -> dict:
    conv = Converter(model_schema.get("$defs", {}))
    body = {k: v for k, v in model_schema.items() if k != "$defs"}
    schema = conv.convert(body)
    # metadata is the API server's business: a CRD may only say it is an object.
    schema["properties"]["metadata"] = {"type": "object"}
    schema["properties"]["apiVersion"] = {"type": "string"}
    schema["properties"]["kind"] = {"type": "string"}
    if "status" in schema["properties"]:  # written by the controller, not by the chart
        schema["properties"]["status"] = {"type": "object", **KEEP}
    return schema


def crd(kind: str, schema: dict) -> dict:
    plural, scope, short = KINDS.get(kind) or (kind.lower() + "s", "Namespaced", [])
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.{GROUP}",
            "labels": {"app.kubernetes.io/part-of": "pvbench-ci", "pvbench.io/generated-from": "hera-models"},
        },
        "spec": {
            "group": GROUP,
            "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower(),
                      **({"shortNames": short} if short else {})},
            "scope": scope,
            "versions": [{"name": VERSION, "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}],
        },
    }


def task_result_crd() -> dict:
    schema = {
        "type": "object",
        "required": ["metadata"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "phase": {"type": "string"},
            "message": {"type": "string"},
            "progress": {"type": "string"},
            "outputs": {"type": "object", **KEEP},
        },
    }
    doc = crd("WorkflowTaskResult", schema)
    doc["metadata"]["name"] = f"workflowtaskresults.{GROUP}"
    doc["metadata"]["labels"]["pvbench.io/generated-from"] = "hand-written"
    doc["spec"]["names"]["plural"] = "workflowtaskresults"
    return doc


def argo_model_schemas() -> dict[str, dict]:
    """The same per-kind schemas generate.argo_schemas writes for kubeconform."""
    import tempfile

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        names = generate.argo_schemas(Path(tmp))
        for name in names:
            doc = json.loads((Path(tmp) / name).read_text())
            kind = doc["properties"]["kind"]["enum"][0]
            out[kind] = doc
    return out


def all_crds() -> list[dict]:
    docs = [crd(kind, openapi_schema(schema)) for kind, schema in argo_model_schemas().items()]
    docs.append(task_result_crd())
    return docs


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    docs = all_crds()
    Path(sys.argv[1]).write_text("".join("---\n" + json.dumps(d) + "\n" for d in docs))
    for d in docs:
        print(f"{d['metadata']['name']}: {len(json.dumps(d)) // 1024} KiB")


if __name__ == "__main__":
    main()
