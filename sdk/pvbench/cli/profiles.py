"""`pvbench profiles`: the workload profiles of the catalog, and the fio job file each runs."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from pvbench.cli.common import fail
from pvbench.profiles import PROFILES, ProfileError, load_profile, render_jobfile, resolve_timing

PROFILE_NAMES = ", ".join(PROFILES)  # the catalog's, for help texts
app = typer.Typer(help=f"Workload profiles ({PROFILE_NAMES}, or your own fio job file).", no_args_is_help=True)


@app.command("list")
def profiles_list() -> None:
    """List the named profiles and their tests."""
    table = Table("profile", "tests", "ramp/runtime/size", "source")
    for profile in PROFILES.values():
        t = profile.timing
        table.add_row(
            profile.name, str(len(profile.tests)), f"{t.ramp_s:g}s / {t.runtime_s:g}s / {t.size}", profile.source
        )
    Console().print(table)


@app.command("show")
def profiles_show(
    profile: Annotated[str, typer.Argument(help=f"{PROFILE_NAMES} or file:PATH")],
    fio: Annotated[bool, typer.Option("--fio", help="Print the fio job file instead of the table")] = False,
    target: Annotated[str, typer.Option(help="Directory written into the job file")] = "/data",
    ramp: Annotated[Optional[str], typer.Option(help="Override ramp time, e.g. 2s")] = None,
    runtime: Annotated[Optional[str], typer.Option(help="Override runtime, e.g. 15s")] = None,
    size: Annotated[Optional[str], typer.Option(help="Override file size, e.g. 1G")] = None,
) -> None:
    """Show a profile's tests, or the exact fio job file pvbench runs for it."""
    try:
        p = load_profile(profile)
        timing = resolve_timing(p, ramp, runtime, size)
    except ProfileError as exc:
        fail(str(exc))
    if fio:
        sys.stdout.write(render_jobfile(p, p.tests, timing, target))
        return
    columns = ["test", "title", "rw", "bs", "iodepth", "numjobs", "mix", "fsync"]
    multi = any(t.clients > 1 for t in p.tests)  # a column only for profiles with multi-client tests
    table = Table(*columns, *(["clients"] if multi else []), title=p.description)
    for t in p.tests:
        table.add_row(
            t.name,
            t.title,
            t.rw,
            t.bs,
            str(t.iodepth),
            str(t.numjobs),
            str(t.rwmixread or ""),
            str(t.fsync or ""),
            *([str(t.clients)] if multi else []),
        )
    Console().print(table)
