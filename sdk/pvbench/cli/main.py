"""The ``pvbench`` command. Each concern keeps its own Typer app; this file only composes them."""

from __future__ import annotations

import gc

import typer

from pvbench.cli import commands, profiles, steps, store
from pvbench.cli.common import fail

app = typer.Typer(
    help="Benchmark Kubernetes storage classes with fio, store every result, aggregate with statistics.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(steps.app)  # expand, validate, fio-step (top level: what Argo's steps run)
app.add_typer(commands.app)  # aggregate, summary, compare
app.add_typer(profiles.app, name="profiles")
app.add_typer(store.app, name="store")
app.add_typer(commands.local_app, name="local")
app.add_typer(commands.import_app, name="import")


def _mount_optional(module: str, name: str, help_text: str) -> None:
    """Sub-apps whose optional dependencies may be missing (hera for argo): imported here, so a
    minimal install still runs every other command and says what is missing."""
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


def _register() -> None:
    _mount_optional("pvbench.report.cli", "report", "Build and serve the Evidence report.")
    _mount_optional("pvbench.stats.cli", "stats", "Statistics over stored results.")
    _mount_optional("pvbench.argo.cli", "argo", "Argo Workflows: render templates, submit runs.")
    try:  # the two Argo commands people type most, also at the top level
        from pvbench.argo import cli as argo_cli

        app.command("render", help="Render templates/ from workflows/ (same as `pvbench argo render`).")(
            argo_cli.render
        )
        app.command("submit", help="Submit a benchmark run to Argo (same as `pvbench argo submit`).")(argo_cli.submit)
    except ImportError:
        pass


_register()


def main() -> None:
    """The ``pvbench`` console script: ``app``, with what Python's garbage collector would walk
    for nothing set aside (gc.freeze): the ~50,000 objects the imports make (pydantic's schemas,
    typer, numpy) live as long as the process, and, frozen again at the end, what the command
    made is not walked by the collections of the interpreter's exit either: those were most of
    the ~0.13 s between a command's end and its process's end (perf): ~0.1 s of every command.
    Objects that are not garbage are freed at exit as before, and atexit work (temporary
    folders, logging's flush) runs as before."""
    gc.freeze()
    try:
        app(prog_name="pvbench")
    finally:
        gc.freeze()
