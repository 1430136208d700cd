"""Helpers for the Argo tests: the rendered templates as data, strict schemas, the tools.

What Argo does with the templates is not imitated here: the cluster stage runs them on the
real engines (test_cluster_*.py).
"""

from __future__ import annotations

import functools
import subprocess
import sys
import tempfile
from pathlib import Path

from cli_helpers import PVBENCH_SCRIPT

from pvbench.testing import REPO
from pvbench.testing.cluster import CHART, TEMPLATES, load_yaml_docs

ALL_ON_VALUES = CHART / "ci" / "all-on-values.yaml"
FIXTURES = Path(__file__).parent / "fixtures" / "argo"
PVBENCH = PVBENCH_SCRIPT  # the console script: tests run it as a step pod or a user would


def tool_path(name: str) -> str:
    from conftest import tool  # the shared lookup: $PVBENCH_TOOLS/bin, .tools/bin, PATH

    return tool(name)


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
    subprocess.run(
        [sys.executable, str(REPO / "ci" / "schemas" / "generate.py"), str(out)],
        check=True,
        capture_output=True,
        text=True,
    )
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
