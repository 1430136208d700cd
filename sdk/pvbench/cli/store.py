"""`pvbench store`: results waiting in a spool, and what a store holds."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from pvbench.cli.common import console, fail, open_store_or_fail
from pvbench.store.layout import RESULT_FILE, results_prefix

app = typer.Typer(help="The result store (a directory or s3://bucket/prefix).", no_args_is_help=True)


@app.command("flush")
def store_flush(
    spool: Annotated[Path, typer.Option(help="Spool directory holding results not yet uploaded")],
    store: Annotated[str, typer.Option(help="Store URL")],
) -> None:
    """Upload results that were kept on disk because the store was unreachable."""
    from pvbench.cells.publish import flush
    from pvbench.store.base import StoreError

    if not spool.is_dir():
        fail(f"spool directory {spool} does not exist" if not spool.exists() else f"spool {spool} is not a directory")
    target = open_store_or_fail(store, check=True)
    try:
        done, failed = flush(spool, target)
    except StoreError as exc:
        fail(str(exc))
    console.print(f"uploaded {len(done)} result(s)")
    for key, error in failed:
        console.print(f"[red]still pending[/] {key}: {error}")
    if failed:
        raise typer.Exit(3)


@app.command("ls")
def store_ls(
    store: Annotated[str, typer.Argument(help="Store URL")],
    campaign: Annotated[Optional[str], typer.Option()] = None,
    run: Annotated[Optional[str], typer.Option()] = None,
) -> None:
    """List result keys in the store."""
    from pvbench.store.base import StoreError
    from pvbench.store.s3 import S3Store

    target = open_store_or_fail(store)
    if isinstance(target, S3Store):
        target.attempts = 2  # a listing is interactive: a wrong endpoint fails in seconds
    elif not target.root.is_dir():
        fail(f"store {target.root} does not exist")
    try:
        keys = [k for k in target.list_keys(results_prefix(campaign, run)) if k.endswith(RESULT_FILE)]
    except (StoreError, ValueError) as exc:
        fail(str(exc))
    for key in keys:
        print(key)
