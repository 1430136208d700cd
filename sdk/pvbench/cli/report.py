"""`pvbench report …`: build and serve the Evidence report (mounted by pvbench.cli.main; pvbench.report does the work)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated, Optional

import typer

from pvbench.cli.common import console, fail
from pvbench.report.build import ReportError, build_report, prime_bundles
from pvbench.report.fetch import STORE_ENV, URL_ENV, fetch_report, is_store_url, published, report_location
from pvbench.report.serve import make_server, make_store_server, serve_until_interrupted
from pvbench.stopping import Interrupted, stop_on_signals
from pvbench.store.base import StoreError

app = typer.Typer(help="Build and serve the Evidence report.", no_args_is_help=True)


@app.command("build")
def build(
    data: Annotated[
        Path, typer.Option("--data", help="Directory with the report_*.parquet tables (pvbench aggregate --out)")
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            help="Where to write the static site (a previous report there is replaced once the new one is whole)",
        ),
    ],
    title: Annotated[Optional[str], typer.Option("--title", help="Site title")] = None,
) -> None:
    """Build the static report site (about 2 minutes, under 1 when an earlier build of the same pages left its bundles; works offline)."""
    try:
        with stop_on_signals():  # SIGTERM as Ctrl-C: the Evidence build is stopped with pvbench
            site = build_report(data, out, title=title)
    except ReportError as exc:
        fail(str(exc))
    except Interrupted as exc:
        fail(f"report build {exc}; the Evidence build was stopped with it", code=exc.exit_code)
    console.print(f"serve it with: pvbench report serve {site}")


@app.command("prime")
def prime(
    title: Annotated[
        Optional[str],
        typer.Option(
            "--title",
            help="A title that is not plain (quotes, &, <…) the later builds will give; plain titles share the bundles",
        ),
    ] = None,
    cache: Annotated[
        Optional[Path],
        typer.Option(
            "--cache",
            help="A directory kept across image builds (a build cache mount): bundles of these pages found "
            "there are copied in instead of compiled; bundles compiled are copied there",
        ),
    ] = None,
) -> None:
    """Compile the site's bundles ahead of the first report (a build over empty tables), so that
    report builds of the same pages take under a minute (the report image runs this). Any plain
    title (letters, digits, spaces, .,:;()+-/#@%) is put into the built site, not compiled in."""
    try:
        with stop_on_signals():
            done = prime_bundles(title=title, shared=cache)
    except ReportError as exc:
        fail(str(exc))
    except Interrupted as exc:
        fail(f"report prime {exc}; the Evidence build was stopped with it", code=exc.exit_code)
    console.print(f"primed: {done}")


@app.command("locate")
def locate(
    key: Annotated[
        str, typer.Option("--key", help="The key the site is stored under (the report step's artifact key)")
    ],
    campaign: Annotated[str, typer.Option("--campaign", help="The run's campaign label (for --url's variables)")] = "",
    run: Annotated[str, typer.Option("--run", help="The run (workflow name)")] = "",
    namespace: Annotated[str, typer.Option("--namespace", help="The workflow's namespace")] = "",
    store: Annotated[
        Optional[str],
        typer.Option(
            "--store", envvar=STORE_ENV, help=f"The store holding the key, e.g. s3://pvbench (env {STORE_ENV})"
        ),
    ] = None,
    url: Annotated[
        Optional[str],
        typer.Option("--url", envvar=URL_ENV, help=f"Where reports are served, an Argo link template (env {URL_ENV})"),
    ] = None,
    outputs: Annotated[
        Optional[Path],
        typer.Option("--outputs", help="Write report-location and report-url here (Argo output parameters)"),
    ] = None,
) -> None:
    """Say where a run's report is stored and how to open it (the Argo report step's last line)."""
    place = published(key, store=store, url_template=url, campaign=campaign, run=run, namespace=namespace)
    for line in place.lines():
        print(line, flush=True)
    if outputs is not None:
        try:
            place.write_outputs(outputs)
        except OSError as exc:
            fail(f"cannot write the outputs to {outputs}: {exc.strerror or exc}")


@app.command("serve")
def serve(
    site: Annotated[
        Optional[str],
        typer.Argument(
            help="A site built by `pvbench report build`, or a report's location in a store: "
            "s3://BUCKET/analytics/campaign=C/run=R/report (what the Argo report step prints)",
            show_default=False,
        ),
    ] = None,
    store: Annotated[
        Optional[str],
        typer.Option(
            "--store",
            help="A store (s3://bucket\\[/prefix] or a directory): serve its reports; /open/CAMPAIGN/RUN "
            "switches to one, / lists them",
        ),
    ] = None,
    campaign: Annotated[
        Optional[str], typer.Option("--campaign", help="With --store: open this campaign's report")
    ] = None,
    run: Annotated[
        Optional[str],
        typer.Option(
            "--run", help="With --store and --campaign: this run's report (the workflow name; default: the campaign's)"
        ),
    ] = None,
    port: Annotated[int, typer.Option("--port", help="TCP port")] = 8000,
    host: Annotated[str, typer.Option("--host", help="Address to listen on")] = "127.0.0.1",
) -> None:
    """Serve a built report over HTTP until Ctrl-C (file:// does not work: browsers block the data's fetches).

    A report in S3/MinIO is downloaded to a temporary directory first (PVBENCH_S3_ENDPOINT,
    AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY as for any s3:// store) and removed on exit.
    """
    if (site is None) == (store is None):
        fail(
            "give a report (a site directory or s3://…/report) or --store, not both"
            if site is not None
            else "give a report (a site directory or s3://…/report) or --store"
        )
    if store is None and (campaign or run):
        fail("--campaign and --run go with --store (a report's own location needs neither)")
    if run and not campaign:
        fail("--run needs --campaign")
    with tempfile.TemporaryDirectory(prefix="pvbench-report-") as tmp:
        try:
            if store is not None:
                server = make_store_server(store, Path(tmp), host, port, campaign=campaign, run=run)
                what = (
                    f"{report_location(store, campaign, run)} (/open/CAMPAIGN/RUN for another)"
                    if campaign
                    else f"the reports of {store} (/open/CAMPAIGN/RUN)"
                )
            else:
                fetched = fetch_report(site, Path(tmp))
                server = make_server(fetched, host, port)
                what = site.strip() if is_store_url(site) else str(fetched)
        except (ReportError, StoreError, OSError, ValueError) as exc:
            fail(str(exc))
        h, p = server.server_address[:2]
        console.print(f"serving {what} at [bold]http://{h}:{p}/[/]  (Ctrl-C to stop)", soft_wrap=True)  # unbroken URLs
        serve_until_interrupted(server)
