"""One CLI: every command lives in pvbench/cli/, the other packages are library code.

The commands used to be spread over cli/, stats/cli.py, report/cli.py and argo/cli.py, with a
`fail` helper in three of them and imports running from stats/ back up into cli/. These tests keep
the layout: typer only in pvbench.cli, nothing below it importing it, one error helper.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from test_imports import import_graph

PACKAGE = Path(__file__).resolve().parents[1] / "pvbench"
CLI = PACKAGE / "cli"


def modules() -> dict[Path, ast.Module]:
    return {path: ast.parse(path.read_text(), str(path)) for path in sorted(PACKAGE.rglob("*.py"))}


def imported(tree: ast.Module) -> set[str]:
    """Every module a file imports, at the top or inside a function."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_only_the_cli_imports_typer():
    outside = {
        str(path.relative_to(PACKAGE.parent)): sorted(
            n for n in imported(tree) if n.split(".")[0] in ("typer", "click")
        )
        for path, tree in modules().items()
        if CLI not in path.parents
    }
    assert {path: names for path, names in outside.items() if names} == {}, (
        "commands belong in pvbench/cli/ (one module per command group); the packages below it are library code"
    )


def test_nothing_below_the_cli_imports_it():
    graph = import_graph()
    upward = {
        name: sorted(t for t in targets if t == "pvbench.cli" or t.startswith("pvbench.cli."))
        for name, targets in graph.items()
        if not (name == "pvbench.cli" or name.startswith("pvbench.cli."))
    }
    assert {name: targets for name, targets in upward.items() if targets} == {}


def test_one_error_helper():
    """`pvbench.cli.common.fail` is the one way a command ends with an error line: one function of
    that name (or `_fail`) in the package, and the "error:" line printed nowhere else."""
    helpers = [
        f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
        for path, tree in modules().items()
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.lstrip("_") == "fail"
    ]
    assert helpers == [f"pvbench/cli/common.py:{_line_of_fail()}"]
    printers = [
        str(path.relative_to(PACKAGE.parent))
        for path in PACKAGE.rglob("*.py")
        if "[bold red]error:[/]" in path.read_text() and path != CLI / "common.py"
    ]
    assert printers == []


def _line_of_fail() -> int:
    tree = ast.parse((CLI / "common.py").read_text())
    return next(n.lineno for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "fail")


def test_stats_compare_is_the_compare_command_not_a_copy():
    """`pvbench compare` and `pvbench stats compare` are one function; the second is hidden, so
    help lists the command once."""
    from pvbench.cli import commands, stats

    def registered(app, name):
        return next(c for c in app.registered_commands if c.name == name)

    top, alias = registered(commands.app, "compare"), registered(stats.app, "compare")
    assert top.callback is alias.callback is stats.compare_command
    assert alias.hidden and not top.hidden


def test_the_command_list_needs_no_hera():
    """Hera is the optional `argo` extra: `pvbench --help` (which mounts every sub-app, argo's
    among them) runs without it, and the argo commands import it only when they run."""
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'hera':\n"
        "            raise ImportError(f'No module named {name!r}')\n"
        "sys.meta_path.insert(0, Block())\n"
        "sys.argv = ['pvbench', '--help']\n"
        "from pvbench.cli.main import main\n"
        "main()\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    for name in ("argo", "render", "submit", "report", "stats", "compare"):
        assert f"│ {name} " in result.stdout
    assert "unavailable" not in result.stdout


def test_every_commands_help_renders():
    """`--help` of every command and group, in-process: a help text is rich markup, and a bracket
    in it (`s3://bucket[/prefix]`) crashed `pvbench report serve --help` with a MarkupError."""
    import typer.main
    from typer.testing import CliRunner

    from pvbench.cli import main

    main.mount_for([])  # every optional group (as `pvbench --help` mounts them)
    root = typer.main.get_command(main.app)
    paths: list[list[str]] = []

    def walk(command, path: list[str]) -> None:
        paths.append(path)
        for name, sub in (getattr(command, "commands", None) or {}).items():  # a group's commands
            walk(sub, [*path, name])

    walk(root, [])
    assert len(paths) > 30
    runner = CliRunner()
    for path in paths:
        result = runner.invoke(main.app, [*path, "--help"])
        assert result.exit_code == 0 and result.exception is None, (path, result.output[-500:], result.exception)
