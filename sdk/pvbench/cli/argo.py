"""``pvbench argo …``: render the Hera definitions, lint the result, submit runs (pvbench.argo does the work).

Hera (the optional ``argo`` extra) is imported only inside the commands that need it, so
``pvbench --help`` works without it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from pvbench.argo import conventions as c
from pvbench.cli.common import console, fail

app = typer.Typer(help="Argo Workflows: render templates, submit runs.", no_args_is_help=True)

RootOpt = Annotated[Optional[Path], typer.Option(help="Repository root (holds workflows/ and templates/)")]


@app.command()
def render(
    check: Annotated[bool, typer.Option("--check", help="Only compare; exit 1 if a file differs")] = False,
    root: RootOpt = None,
) -> None:
    """Write templates/*.yaml (the chart's files/) from workflows/*.py, and the report's profile labels."""
    from pvbench.argo.render import find_root, render_all

    try:
        base = find_root(root)
        outcomes = render_all(base, check=check)
    except (FileNotFoundError, ValueError) as exc:
        fail(str(exc))
    changed = [o for o in outcomes if o.changed]
    for o in outcomes:
        mark = ("[red]differs[/]" if check else "[yellow]written[/]") if o.changed else "[green]up to date[/]"
        console.print(f"{mark} {o.path.relative_to(base)}")
    if check and changed:
        for o in changed:
            sys.stdout.write(o.diff)
        fail(f"{len(changed)} rendered file(s) differ from workflows/*.py; run `pvbench argo render`", code=1)


@app.command()
def guard(
    namespace: Annotated[str, typer.Option(envvar="POD_NAMESPACE", help="Namespace of the chart (its cell pods)")],
    every: Annotated[str, typer.Option(help="How often to look, e.g. 10s")] = "10s",
    once: Annotated[bool, typer.Option(help="Look once and exit (tests, debugging)")] = False,
) -> None:
    """Fail cell pods that never started by their deadline, saying why (the chart's pvbench-guard runs this)."""
    from pvbench.argo.guard import check, run
    from pvbench.kube.api import Api, KubeError
    from pvbench.profiles import ProfileError, parse_seconds

    def log(message: str) -> None:
        print(message, flush=True)

    try:
        every_s = parse_seconds(every)
        api = Api.in_cluster()
        if once:
            check(api, namespace, log=log)
        else:
            run(api, namespace, max(every_s, 1.0), log=log)
    except (KubeError, ProfileError) as exc:
        fail(str(exc))


@app.command()
def submit(
    param: Annotated[Optional[list[str]], typer.Option("--param", "-p", help="name=value, repeatable")] = None,
    host: Annotated[
        str, typer.Option(envvar="ARGO_SERVER_URL", help="Argo Server URL, e.g. https://localhost:2746")
    ] = "https://localhost:2746",
    token_file: Annotated[
        Optional[Path],
        typer.Option(
            "--token-file",
            envvar="ARGO_TOKEN_FILE",
            help="File holding the bearer token (`argo auth token > FILE`); or set ARGO_TOKEN",
        ),
    ] = None,
    token: Annotated[
        Optional[str],
        typer.Option(
            "--token", hidden=True, help="Deprecated: a token on the command line is visible in the process list"
        ),
    ] = None,
    namespace: Annotated[str, typer.Option(envvar="ARGO_NAMESPACE", help="Namespace of the chart")] = "pvbench",
    template: Annotated[str, typer.Option(help="WorkflowTemplate to submit")] = c.BENCHMARK_TEMPLATE,
    label: Annotated[Optional[list[str]], typer.Option(help="key=value label on the workflow, repeatable")] = None,
    insecure: Annotated[bool, typer.Option(help="Skip TLS verification (self-signed Argo Server)")] = False,
    root: RootOpt = None,
) -> None:
    """Submit a benchmark run from the installed WorkflowTemplate (parameters checked locally first)."""
    from pvbench.argo.render import find_root
    from pvbench.argo.submit import SubmitError, parse_pairs, read_token, template_parameters
    from pvbench.argo.submit import submit as do_submit

    if token is not None:
        console.print(
            "[yellow]warning:[/] --token is deprecated: any user of this machine can read it in the "
            "process list; set ARGO_TOKEN or use --token-file"
        )
    try:
        token = read_token(token=token, token_file=token_file)
        params = parse_pairs(param or [])
        labels = parse_pairs(label or [])
        known = None
        try:
            known = template_parameters(find_root(root) / "templates" / "benchmark.yaml")
        except FileNotFoundError:
            pass  # installed without the repository: the server checks
        name = do_submit(
            host=host,
            namespace=namespace,
            parameters=params,
            labels=labels,
            token=token,
            verify_ssl=not insecure,
            template=template,
            known=known if template == c.BENCHMARK_TEMPLATE else None,
        )
    except SubmitError as exc:
        fail(str(exc))
    except Exception as exc:  # network, auth, server-side validation: the server's words
        fail(f"submit to {host} failed: {exc}", code=1)
    print(name)
    console.print(f"submitted [bold]{name}[/] in {namespace}: {host.rstrip('/')}/workflows/{namespace}/{name}")
