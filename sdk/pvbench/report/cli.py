"""`pvbench report …`: build and serve the Evidence report (mounted by pvbench.cli.main)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from pvbench.report.build import ReportError, build_report
from pvbench.report.serve import make_server

app = typer.Typer(help="Build and serve the Evidence report.", no_args_is_help=True)
_err = Console(stderr=True)


def _fail(message: str) -> None:
    _err.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(2)


@app.command("build")
def build(
    data: Annotated[Path, typer.Option("--data", help="Directory with the report_*.parquet tables (pvbench aggregate --out)")],
    out: Annotated[Path, typer.Option("--out", help="Where to write the static site (replaced if it is a previous report)")],
    title: Annotated[Optional[str], typer.Option("--title", help="Site title")] = None,
) -> None:
    """Build the static report site (about 1–2 minutes; works offline)."""
    try:
        site = build_report(data, out, title=title)
    except ReportError as exc:
        _fail(str(exc))
    _err.print(f"serve it with: pvbench report serve {site}")


@app.command("serve")
def serve(
    site: Annotated[Path, typer.Argument(help="A site built by `pvbench report build`")],
    port: Annotated[int, typer.Option("--port", help="TCP port")] = 8000,
    host: Annotated[str, typer.Option("--host", help="Address to listen on")] = "127.0.0.1",
) -> None:
    """Serve a built report over HTTP until Ctrl-C (file:// does not work: asset paths are absolute)."""
    try:
        server = make_server(site, host, port)
    except (ReportError, OSError) as exc:
        _fail(str(exc))
    h, p = server.server_address[:2]
    _err.print(f"serving {Path(site).resolve()} at [bold]http://{h}:{p}/[/]  (Ctrl-C to stop)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
