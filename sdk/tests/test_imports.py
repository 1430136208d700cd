"""The package's import graph has no cycle, counting imports inside functions too.

An import deferred into a function body hides a cycle from Python's loader but not from this
test: the layers stay one-way (cli → pipeline → analytics/stats → store/results/profiles).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pvbench"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(
                        package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                    )
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rsplit(".", 1)[0] if "." in target else ""
                # a package's __init__ re-exporting its own modules is not a cycle of the layers
                if target and target != name and not (path.name == "__init__.py" and target.startswith(name + ".")):
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_the_packages_imports():
    graph = import_graph()
    assert "pvbench.analytics.runner" in graph["pvbench.pipeline.tables"]
    assert "pvbench.stats.compare" in graph["pvbench.pipeline.compare"]
    assert "pvbench.cli.commands" in graph["pvbench.cli.main"]
    assert cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]


def test_no_import_cycle():
    assert cycles(import_graph()) == []


def test_analytics_is_a_leaf_below_the_statistics_and_the_pipeline():
    graph = import_graph()
    for name, targets in graph.items():
        if name.startswith("pvbench.analytics"):
            above = {t for t in targets if t.startswith(("pvbench.stats", "pvbench.pipeline", "pvbench.cli"))}
            assert not above, f"{name} imports {above}: analytics runs models with what it is given"
