"""The ``pvbench`` command. Each concern keeps its own Typer app; this file only composes them."""

from __future__ import annotations

import gc
import sys
from typing import Sequence

import typer

from pvbench.cli import commands, history, profiles, steps, store
from pvbench.cli.common import fail, print_log_warnings

app = typer.Typer(
    help="Benchmark Kubernetes storage classes with fio, store every result, aggregate with statistics.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(steps.app)  # expand, validate, fio-step (top level: what Argo's steps run)
app.add_typer(commands.app)  # aggregate, summary, compare
app.add_typer(history.app)  # history
app.add_typer(profiles.app, name="profiles")
app.add_typer(store.app, name="store")
app.add_typer(commands.local_app, name="local")
app.add_typer(commands.import_app, name="import")

# Sub-apps mounted when a command needs them (mount_for): importing them all took ~0.1 s (the
# report's build, hera's Argo), a twentieth of adding a run to a campaign, which `pvbench aggregate
# --run` in every workflow's last step, and every step pod's `pvbench fio-step`, paid for nothing.
OPTIONAL = {
    "report": ("pvbench.cli.report", "Build and serve the Evidence report."),
    "stats": ("pvbench.cli.stats", "Statistics over stored results."),
    "argo": ("pvbench.cli.argo", "Argo Workflows: render templates, submit runs."),
}
# the two Argo commands people type most, also at the top level (mounted with argo)
ARGO_SHORTCUTS = ("render", "submit")
_mounted: set[str] = set()


def _mount_optional(name: str) -> None:
    """Sub-apps whose optional dependencies may be missing (hera for argo): imported here, so a
    minimal install still runs every other command and says what is missing."""
    if name in _mounted:
        return
    _mounted.add(name)
    module, help_text = OPTIONAL[name]
    try:
        mod = __import__(module, fromlist=["app"])
    except ImportError as exc:  # e.g. hera missing in a minimal install
        reason = str(exc)  # `exc` itself is unbound once the except block ends
        missing = typer.Typer(help=f"{help_text} (unavailable: {reason})")

        @missing.callback(invoke_without_command=True)
        def _unavailable() -> None:
            fail(f"'pvbench {name}' needs an optional dependency: {reason}")

        app.add_typer(missing, name=name)
        return
    app.add_typer(mod.app, name=name, help=help_text)
    if name == "argo":
        app.command("render", help="Render templates/ from workflows/ (same as `pvbench argo render`).")(mod.render)
        app.command("submit", help="Submit a benchmark run to Argo (same as `pvbench argo submit`).")(mod.submit)


def mount_for(args: Sequence[str]) -> None:
    """Mount the optional sub-apps the command in ``args`` (the arguments after ``pvbench``)
    needs: the one it names, or every one when it names none of the core commands (``--help``,
    shell completion, a mistyped command: each lists or looks for every command)."""
    command = next((a for a in args if not a.startswith("-")), None)
    if command in OPTIONAL:
        _mount_optional(command)
    elif command in ARGO_SHORTCUTS:
        _mount_optional("argo")
    elif command is None or command not in _core_commands():
        for name in OPTIONAL:
            _mount_optional(name)


def _core_commands() -> set[str]:
    """The names of the commands and groups mounted at import (the core sub-apps')."""
    names = {group.name for group in app.registered_groups if group.name}
    for group in app.registered_groups:
        if not group.name:  # a sub-app added without a name: its commands are top-level
            sub = group.typer_instance
            names |= {c.name or typer.main.get_command_name(c.callback.__name__) for c in sub.registered_commands}
            names |= {g.name for g in sub.registered_groups if g.name}
    return names


def main() -> None:
    """The ``pvbench`` console script: ``app``, with the sub-apps the command needs mounted
    (mount_for), and what Python's garbage collector would walk for nothing set aside
    (gc.freeze): the ~50,000 objects the imports make (pydantic's schemas, typer, numpy) live as
    long as the process, and, frozen again at the end, what the command made is not walked by the
    collections of the interpreter's exit either: those were most of the ~0.13 s between a
    command's end and its process's end (perf): ~0.1 s of every command. Objects that are not
    garbage are freed at exit as before, and atexit work (temporary folders, logging's flush)
    runs as before."""
    mount_for(sys.argv[1:])
    print_log_warnings()
    gc.freeze()
    try:
        app(prog_name="pvbench")
    finally:
        gc.freeze()
