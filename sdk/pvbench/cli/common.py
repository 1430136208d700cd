"""Small helpers shared by CLI commands."""

from __future__ import annotations

import functools
import json
import logging
from typing import Callable, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

_err = Console(stderr=True)
console = _err  # what commands print for people (stdout stays for data)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a readable error (no traceback) and exit. The message is text, not rich markup:
    a '[global]' or a path with brackets in it is printed as it is."""
    _err.print(f"[bold red]error:[/] {escape(message)}")
    raise typer.Exit(code)


class _ConsoleLog(logging.Handler):
    """pvbench's own log warnings and errors, printed as the commands print theirs ("warning: …",
    "error: …" on stderr). Without it Python's last-resort handler printed the bare message: a
    lease taken over or a snapshot not written looked like any other output line."""

    def emit(self, record: logging.LogRecord) -> None:
        label = "[bold red]error:[/]" if record.levelno >= logging.ERROR else "[yellow]warning:[/]"
        try:
            _err.print(f"{label} {escape(record.getMessage())}", soft_wrap=True)
        except Exception:  # a message that cannot be formatted: logging's own report, as before
            self.handleError(record)


def print_log_warnings() -> None:
    """Route the ``pvbench`` loggers' warnings and errors to the console (the ``pvbench`` script
    does, once; a library caller keeps its own logging configuration)."""
    logger = logging.getLogger("pvbench")
    if not any(isinstance(h, _ConsoleLog) for h in logger.handlers):
        handler = _ConsoleLog(logging.WARNING)
        logger.addHandler(handler)


Command = TypeVar("Command", bound=Callable)


def stoppable(name: str) -> Callable[[Command], Command]:
    """A command that reads a campaign (builds its tables, compacting runs not compacted yet) and
    may be stopped: SIGTERM as Ctrl-C, so it unwinds (its reader process stops, its files go); it
    works in a temporary folder of its own (stopping.own_temporary_folder), which a command killed
    outright leaves for the next one to remove; and it ends with one line, exit 128 + the signal."""

    def wrap(command: Command) -> Command:
        @functools.wraps(command)  # typer reads the parameters of the command it wraps
        def run(*args, **kwargs):
            from pvbench.stopping import Interrupted, own_temporary_folder, stop_on_signals

            try:
                with stop_on_signals(), own_temporary_folder(f"pvbench-{name}-"):
                    return command(*args, **kwargs)
            except Interrupted as exc:
                fail(f"{name} {exc}", code=exc.exit_code)

        return run  # type: ignore[return-value]

    return wrap


def open_store_or_fail(url: str, check: bool = False):
    """The store at ``url``; with ``check`` also reachable and writable (before anything runs).

    A bad URL, missing S3 settings, a missing bucket or wrong credentials end the command
    with one line (exit 2), never a traceback.
    """
    from pvbench.store import open_store
    from pvbench.store.base import StoreError

    try:
        store = open_store(url)
        if check:
            store.check()
    except StoreError as exc:
        fail(str(exc))
    return store


def split_list(value: str | None) -> list[str]:
    """'a,b' or '["a","b"]' (what an Argo UI list parameter holds) → ['a', 'b']."""
    if not value:
        return []
    text = value.strip()
    if text.startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            fail(f"{value!r} is not a JSON list: {exc}")
        return [str(i).strip() for i in items if str(i).strip()]
    return [part.strip() for part in text.split(",") if part.strip()]


def parse_labels(items: list[str]) -> dict[str, str]:
    labels = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"label {item!r} is not key=value")
        key, value = item.split("=", 1)
        labels[key.strip()] = value.strip()
    return labels
