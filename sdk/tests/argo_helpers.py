"""Helpers for the Argo tests: the rendered templates as data, strict schemas, the tools,
and a small stand-in for what Argo does around a step (substitute placeholders, fetch
input artifacts, upload output artifacts) so that the steps' own commands run for real.
"""

from __future__ import annotations

import copy
import functools
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
TEMPLATES = REPO / "templates"
CHART = REPO / "charts" / "pvbench"
ALL_ON_VALUES = CHART / "ci" / "all-on-values.yaml"
FIXTURES = Path(__file__).parent / "fixtures" / "argo"
PVBENCH = str(Path(sys.executable).parent / "pvbench")


def tool_path(name: str) -> str:
    from conftest import tool  # the shared lookup: $PVBENCH_TOOLS/bin, .tools/bin, PATH

    return tool(name)


def load_yaml_docs(path_or_text: Path | str) -> list[dict]:
    text = path_or_text.read_text() if isinstance(path_or_text, Path) else path_or_text
    return [d for d in yaml.safe_load_all(text) if d]


def benchmark_template() -> dict:
    [doc] = [d for d in load_yaml_docs(TEMPLATES / "benchmark.yaml") if d["kind"] == "WorkflowTemplate"]
    return doc


def templates_by_name(doc: dict) -> dict[str, dict]:
    return {t["name"]: t for t in doc["spec"]["templates"]}


def dag_tasks(doc: dict, dag: str = "main") -> dict[str, dict]:
    return {t["name"]: t for t in templates_by_name(doc)[dag]["dag"]["tasks"]}


# ---------------------------------------------------------------- schemas and tools
@functools.lru_cache(maxsize=1)
def schema_dir() -> Path:
    """Strict schemas generated once per test session (ci/schemas/generate.py, ~3 s)."""
    out = Path(tempfile.mkdtemp(prefix="pvbench-schemas-")) / "schemas"
    subprocess.run([sys.executable, str(REPO / "ci" / "schemas" / "generate.py"), str(out)], check=True,
                   capture_output=True, text=True)
    return out


def kubeconform(*paths: Path | str, stdin: str | None = None) -> subprocess.CompletedProcess:
    location = str(schema_dir()) + "/{{ .ResourceKind }}{{ .KindSuffix }}.json"
    args = [tool_path("kubeconform"), "-strict", "-summary", "-output", "text", "-schema-location", location]
    args += [str(p) for p in paths] if paths else ["-"]
    return subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=120)


def helm(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([tool_path("helm"), *args], capture_output=True, text=True, timeout=120)


def helm_template(*values_files: Path, sets: tuple[str, ...] = ()) -> str:
    args = ["template", "pvbench", str(CHART), "--namespace", "pvbench"]
    for f in values_files:
        args += ["-f", str(f)]
    for s in sets:
        args += ["--set", s]
    proc = helm(*args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# ---------------------------------------------------------------- what Argo does around a step
TAG = re.compile(r"{{\s*(.*?)\s*}}")


class Unresolved(KeyError):
    pass


def substitute(text: str, ctx: dict[str, str]) -> str:
    """Argo's simple tags, plus the expressions the templates use (lower(x), asInt(x) + n); an
    unknown tag is an error, never left in place (Argo would pass it on as a literal string)."""

    def one(match: re.Match) -> str:
        tag = match.group(1)
        expr = re.fullmatch(r"=\s*lower\(\s*([\w.\-]+)\s*\)", tag)
        if expr:
            return substitute("{{" + expr.group(1) + "}}", ctx).lower()
        expr = re.fullmatch(r"=\s*asInt\(\s*([\w.\-]+)\s*\)\s*\+\s*(\d+)", tag)
        if expr:  # expr-lang: int + int, printed with %v
            return str(int(substitute("{{" + expr.group(1) + "}}", ctx)) + int(expr.group(2)))
        if tag not in ctx:
            raise Unresolved(f"{tag!r} in {text!r}")
        return str(ctx[tag])

    return TAG.sub(one, text)


WHEN_TOKEN = re.compile(r"\s*(?:(?P<num>-?\d+(?:\.\d+)?)(?![\w.\-])|'(?P<sq>[^']*)'|\"(?P<dq>[^\"]*)\""
                        r"|(?P<op>==|!=|<=|>=|&&|\|\||[<>!()])|(?P<word>[^\s()<>=!&|'\"]+))")


def evaluate_when(when: str) -> bool:
    """A substituted `when`, evaluated as Argo does (govaluate, with bare words read as strings):
    numbers compare as numbers, quoted or bare words as strings, true/false as booleans;
    ==, !=, <, <=, >, >=, !, &&, || and parentheses. Anything else is an error, as in Argo."""
    tokens, pos = [], 0
    while pos < len(when.rstrip()):
        m = WHEN_TOKEN.match(when, pos)
        if not m or m.end() == pos:
            raise ValueError(f"invalid when expression {when!r} at {when[pos:]!r}")
        pos = m.end()
        if m.group("num") is not None:
            tokens.append(("val", float(m.group("num"))))
        elif m.group("sq") is not None or m.group("dq") is not None:
            tokens.append(("val", m.group("sq") if m.group("sq") is not None else m.group("dq")))
        elif m.group("op"):
            tokens.append(("op", m.group("op")))
        else:
            word = m.group("word")
            tokens.append(("val", {"true": True, "false": False}.get(word, word)))

    def peek():
        return tokens[0] if tokens else ("end", None)

    def take(op=None):
        tok = tokens.pop(0) if tokens else ("end", None)
        if op and tok != ("op", op):
            raise ValueError(f"invalid when expression {when!r}: expected {op}")
        return tok

    def disjunction():
        value = conjunction()
        while peek() == ("op", "||"):
            take()
            rhs = conjunction()
            value = value or rhs
        return value

    def conjunction():
        value = comparison()
        while peek() == ("op", "&&"):
            take()
            rhs = comparison()
            value = value and rhs
        return value

    def comparison():
        lhs = unary()
        kind, op = peek()
        if kind == "op" and op in ("==", "!=", "<", "<=", ">", ">="):
            take()
            rhs = unary()
            if op in ("==", "!="):
                same = type(lhs) is type(rhs) and lhs == rhs
                return same if op == "==" else not same
            if not (isinstance(lhs, float) and isinstance(rhs, float)):
                raise ValueError(f"invalid when expression {when!r}: {op} needs numbers, got {lhs!r}, {rhs!r}")
            return {"<": lhs < rhs, "<=": lhs <= rhs, ">": lhs > rhs, ">=": lhs >= rhs}[op]
        return lhs

    def unary():
        kind, value = take()
        if (kind, value) == ("op", "!"):
            operand = unary()
            if not isinstance(operand, bool):
                raise ValueError(f"invalid when expression {when!r}: ! needs a boolean")
            return not operand
        if (kind, value) == ("op", "("):
            inner = disjunction()
            take(")")
            return inner
        if kind != "val":
            raise ValueError(f"invalid when expression {when!r}: unexpected {value!r}")
        return value

    result = disjunction()
    if tokens:
        raise ValueError(f"invalid when expression {when!r}: trailing {tokens}")
    if not isinstance(result, bool):
        raise ValueError(f"when expression {when!r} is not a boolean")
    return result


def substitute_all(node, ctx: dict[str, str]):
    if isinstance(node, str):
        return substitute(node, ctx)
    if isinstance(node, list):
        return [substitute_all(v, ctx) for v in node]
    if isinstance(node, dict):
        return {substitute(k, ctx): substitute_all(v, ctx) for k, v in node.items()}
    return node


def workflow_context(doc: dict, overrides: dict[str, str], name: str) -> dict[str, str]:
    ctx = {"workflow.name": name, "workflow.namespace": "pvbench"}
    for p in doc["spec"]["arguments"]["parameters"]:
        ctx[f"workflow.parameters.{p['name']}"] = str(p.get("value", ""))
    for k, v in overrides.items():
        assert f"workflow.parameters.{k}" in ctx, f"the template has no parameter {k}"
        ctx[f"workflow.parameters.{k}"] = v
    return ctx


def task_inputs(task: dict, ctx: dict[str, str], item: dict | None = None) -> dict[str, str]:
    """A DAG task's arguments, resolved in the DAG's scope (workflow params, item)."""
    local = dict(ctx)
    for k, v in (item or {}).items():
        local[f"item.{k}"] = str(v)
    return {p["name"]: substitute(str(p["value"]), local) for p in (task.get("arguments") or {}).get("parameters") or []}


def step_context(template: dict, ctx: dict[str, str], inputs: dict[str, str]) -> dict[str, str]:
    local = dict(ctx)
    declared = {p["name"] for p in (template.get("inputs") or {}).get("parameters") or []}
    assert set(inputs) == declared, f"{template['name']}: arguments {sorted(inputs)} != inputs {sorted(declared)}"
    for k, v in inputs.items():
        local[f"inputs.parameters.{k}"] = v
    return local


class PodPaths:
    """Maps the container's paths (its volume mounts) onto directories of the test."""

    def __init__(self, template: dict, root: Path):
        self.mounts: dict[str, Path] = {}
        for m in template["container"].get("volumeMounts") or []:
            local = root / m["name"]
            local.mkdir(parents=True, exist_ok=True)
            self.mounts[m["mountPath"]] = local

    def local(self, path: str) -> Path:
        for mount in sorted(self.mounts, key=len, reverse=True):
            if path == mount or path.startswith(mount.rstrip("/") + "/"):
                return self.mounts[mount] / path[len(mount):].lstrip("/")
        raise AssertionError(f"{path} is on no volume of the pod: with a read-only root it could not be written")

    def args(self, args: list[str]) -> list[str]:
        return [str(self.local(a)) if a.startswith("/") and not a.startswith("//") else a for a in args]


def run_container(template: dict, ctx: dict[str, str], paths: PodPaths, env: dict[str, str],
                  timeout: int = 600) -> subprocess.CompletedProcess:
    """Run the template's command and args as the template states them (after substitution)."""
    container = substitute_all(copy.deepcopy(template["container"]), ctx)
    command = container["command"]
    assert command[0] == "pvbench", f"{template['name']} runs {command[0]}, not the pvbench CLI of the image"
    argv = [PVBENCH, *command[1:], *paths.args(container.get("args", []))]
    for e in container.get("env") or []:
        if "value" in e:
            env = {**env, e["name"]: e["value"]}
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)


def upload_dir(client, bucket: str, local: Path, key: str) -> list[str]:
    """An output artifact with `archive: none`: every file under its own key below `key`."""
    keys = []
    for f in sorted(p for p in local.rglob("*") if p.is_file()):
        object_key = f"{key}/{f.relative_to(local).as_posix()}"
        client.fput_object(bucket, object_key, str(f))
        keys.append(object_key)
    return keys


def download_prefix(client, bucket: str, key: str, local: Path) -> list[str]:
    """An S3 input artifact whose key is a directory: everything below it, into `local`."""
    names = []
    for obj in client.list_objects(bucket, prefix=key.rstrip("/") + "/", recursive=True):
        rel = obj.object_name[len(key.rstrip("/")) + 1:]
        client.fget_object(bucket, obj.object_name, str(local / rel))
        names.append(obj.object_name)
    return names
