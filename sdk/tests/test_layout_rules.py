"""The repository's layout rules (issue 59), checked on the source with ``ast``:

* no Python file changes ``sys.path`` (an import goes through the installed packages: pvbench,
  pvbench_lab; a test's helper module through pytest's rootdir, a script's own folder);
* nothing outside sdk/tests imports the tests' modules (what tests and benchmarks share is
  pvbench.testing);
* no module of sdk/pvbench or sdk/pvbench_lab reaches a private name (``_x``) of another part:
  ``from pvbench.analytics.compact import _x`` or ``compact._x`` from pvbench.store, say. A part
  is a subpackage of pvbench (pvbench.store, pvbench.analytics, …), a top-level module of it,
  or a module of pvbench_lab.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from pvbench.testing import REPO

SDK = REPO / "sdk"
TESTS = SDK / "tests"
PACKAGES = ("pvbench", "pvbench_lab")
SKIPPED = {".venv", "node_modules", ".git", ".tools", ".demo", ".evidence", "__pycache__"}


@functools.lru_cache(maxsize=1)
def python_files() -> tuple[Path, ...]:
    found = []
    for path in REPO.rglob("*.py"):
        if not SKIPPED.intersection(path.relative_to(REPO).parts):
            found.append(path)
    return tuple(sorted(found))


@functools.lru_cache(maxsize=None)
def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(REPO)}:{node.lineno}"


# ---------------------------------------------------------------- sys.path
def is_sys_path(node: ast.AST) -> bool:
    """The expression ``sys.path``."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "path"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    )


def sys_path_changes(tree: ast.Module) -> list[ast.AST]:
    """Assignments to sys.path (or a slice of it), its mutating methods called, syspath_prepend."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if is_sys_path(target) or (isinstance(target, ast.Subscript) and is_sys_path(target.value)):
                    found.append(node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if is_sys_path(node.func.value) and node.func.attr in ("insert", "append", "extend", "remove", "pop"):
                found.append(node)
            elif node.func.attr == "syspath_prepend":  # pytest's monkeypatch: the same, in a test
                found.append(node)
        elif isinstance(node, ast.ImportFrom) and node.module == "sys" and any(a.name == "path" for a in node.names):
            found.append(node)
    return found


def test_no_file_changes_sys_path():
    found = [where(path, node) for path in python_files() for node in sys_path_changes(parsed(path))]
    assert not found, "sys.path changed (import through the installed packages instead):\n" + "\n".join(found)


def test_the_rule_sees_each_way_of_changing_sys_path():
    for source in (
        "import sys\nsys.path.insert(0, 'x')",
        "import sys\nsys.path[:0] = ['x']",
        "import sys\nsys.path = ['x']",
        "import sys\nsys.path.append('x')",
        "import sys\nsys.path += ['x']",
        "def test(monkeypatch):\n    monkeypatch.syspath_prepend('x')",
    ):
        assert sys_path_changes(ast.parse(source)), source
    assert not sys_path_changes(ast.parse("import sys\nprint(sys.path)  # sys.path.insert in a comment"))


# ---------------------------------------------------------------- sdk/tests stays the tests'
def module_names_of_the_tests() -> set[str]:
    """The names the tests' own modules are imported by (sdk/tests is on their path)."""
    names = {p.stem for p in TESTS.glob("*.py")}
    names |= {p.parent.name for p in TESTS.glob("*/__init__.py")}
    return names | {"tests", "sdk"}  # `import tests.x`, `import sdk.tests.x`


def imported_top_names(tree: ast.Module) -> list[tuple[ast.AST, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node, a.name.split(".")[0]) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node, node.module.split(".")[0]))
    return found


def test_nothing_outside_the_tests_imports_them():
    theirs = module_names_of_the_tests()
    assert {"conftest", "cli_helpers", "faults"} <= theirs
    found = [
        f"{where(path, node)}: imports {name}"
        for path in python_files()
        if TESTS not in path.parents
        for node, name in imported_top_names(parsed(path))
        if name in theirs
    ]
    assert not found, "outside sdk/tests, an import of the tests' modules (share through pvbench.testing):\n" + (
        "\n".join(found)
    )


# ---------------------------------------------------------------- private names stay in their part
def module_name(path: Path) -> str:
    parts = list(path.relative_to(SDK).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def part(module: str) -> str:
    """pvbench.store.s3 → pvbench.store; pvbench.keeper → pvbench.keeper; pvbench → pvbench."""
    return ".".join(module.split(".")[:2])


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_reaches(path: Path, tree: ast.Module) -> list[str]:
    """``from <other part> import _x``, and ``name._x`` where ``name`` was imported from another
    part (a module, or a class or function of it)."""
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    imported: dict[str, str] = {}  # local name → the full dotted name it stands for
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:  # relative: from the package of this module, up level − 1
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                imported[alias.asname or alias.name] = f"{source}.{alias.name}"
                if source.split(".")[0] in PACKAGES and is_private(alias.name) and part(source) != part(me):
                    found.append(f"{where(path, node)}: from {source} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    imported[alias.asname] = alias.name
                else:
                    imported[alias.name.split(".")[0]] = alias.name.split(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            chain, value = [], node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in imported:
                target = ".".join([imported[value.id], *reversed(chain)])
                if target.split(".")[0] in PACKAGES and part(target) != part(me):
                    found.append(f"{where(path, node)}: {target}.{node.attr}")
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_no_private_name_is_reached_from_another_part(package):
    found = [line for path in sorted((SDK / package).rglob("*.py")) for line in private_reaches(path, parsed(path))]
    assert not found, "a private name used from another part (make it public, with a name that says what it is):\n" + (
        "\n".join(found)
    )


def test_the_rule_sees_private_names_reached_from_another_part():
    lab = SDK / "pvbench_lab" / "example.py"  # where the source would be (it is not written there)
    store = SDK / "pvbench" / "store" / "example.py"
    cases = {
        "from pvbench.analytics.compact import _handed_over": (lab, 1),
        "from pvbench.analytics import compact\ncompact._handed_over(1)": (lab, 1),
        "import pvbench.analytics.compact as c\nc._ReadAhead": (lab, 1),
        "from pvbench.store.s3 import S3Store\nS3Store._retry": (lab, 1),
        "from ..analytics.compact import _handed_over": (store, 1),
        "from .s3 import _SdkChanged": (store, 0),  # the same part
        "from pvbench.store import s3\ns3._parse_list_page": (store, 0),
        "from pvbench.analytics import compact\ncompact.__name__": (lab, 0),  # dunder
        "import json\njson._default_encoder": (lab, 0),  # not ours
    }
    for source, (path, count) in cases.items():
        assert len(private_reaches(path, ast.parse(source))) == count, source
