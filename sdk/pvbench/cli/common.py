"""Small helpers shared by CLI commands."""

from __future__ import annotations

import json
from typing import NoReturn

import typer
from rich.console import Console

_err = Console(stderr=True)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a readable error (no traceback) and exit."""
    _err.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code)


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
