"""From a run to its report: `pvbench report serve` straight from a store (a real MinIO), the report
step's `locate` (log lines, the workflow outputs report-location / report-url), the chart's
pvbench-report ConfigMap and the Argo UI link it documents.

A tiny fake built site (index.html + _app/) stands in for an Evidence build: what is tested is
finding, fetching and serving it, not Evidence (test_report.py builds real sites).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from argo_helpers import (
    CHART,
    PVBENCH,
    REPO,
    benchmark_template,
    helm,
    helm_template,
    load_yaml_docs,
    templates_by_name,
)
from browser_helpers import browse
from conftest import free_port

from pvbench.argo import conventions as c
from pvbench.report import check_installed
from pvbench.report.build import ReportError
from pvbench.report.fetch import (
    fetch_report,
    fill_url,
    list_reports,
    published,
    report_location,
)
from pvbench.report.serve import make_server, make_store_server
from pvbench.store import layout, open_store

LINK = "http://127.0.0.1:8000/open/${workflow.metadata.labels.pvbench.io/campaign}/${metadata.name}"


def fake_site(title: str) -> dict[str, bytes]:
    return {
        "index.html": f'<!doctype html><title>{title}</title><script src="/_app/app.js"></script>'.encode(),
        "_app/app.js": f"console.log('{title}')".encode(),
        "_app/immutable/chunk.css": b"body{}",
        "comparisons/index.html": f"<h1>{title} comparisons</h1>".encode(),
    }


def put_site(store_url: str, campaign: str, run: str | None, title: str) -> str:
    store = open_store(store_url)
    prefix = layout.report_prefix(campaign, run)
    for name, data in fake_site(title).items():
        store.put_bytes(f"{prefix}/{name}", data, content_type="text/html")
    store.put_bytes(f"{layout.analytics_prefix(campaign, run)}/report_overview.parquet", b"PAR1")  # a neighbour
    return report_location(store_url, campaign, run)


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def started(server) -> str:
    threading.Thread(target=server.serve_forever, daemon=True).start()
    h, p = server.server_address[:2]
    return f"http://{h}:{p}"


# ---------------------------------------------------------------- one report's location
def test_fetch_a_report_from_minio_and_serve_it(s3_store_url, tmp_path):
    location = put_site(s3_store_url, "Demo", "pvbench-benchmark-x1", "run x1")
    assert location == f"{s3_store_url}/analytics/campaign=demo/run=pvbench-benchmark-x1/report"
    site = fetch_report(location + "/", tmp_path / "site")
    assert sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file()) == sorted(fake_site("x"))
    server = make_server(site, port=0)
    try:
        base = started(server)
        assert get(base + "/") == (200, fake_site("run x1")["index.html"].decode())
        assert get(base + "/_app/app.js")[1] == "console.log('run x1')"
        assert get(base + "/comparisons/")[1] == "<h1>run x1 comparisons</h1>"
    finally:
        server.shutdown()
        server.server_close()


def test_nothing_there_is_one_clear_error(s3_store_url, tmp_path):
    put_site(s3_store_url, "demo", "run-a", "a")
    with pytest.raises(ReportError, match=r"^no report at s3://.*/run=run-b/report/: nothing is stored there"):
        fetch_report(report_location(s3_store_url, "demo", "run-b"), tmp_path / "x")
    # the run's tables, but no site: not a report either
    with pytest.raises(
        ReportError,
        match=r"holds 5 objects but no built report .*; the run's report is s3://.*"
        r"/run=run-a/report/$",
    ):
        fetch_report(f"{s3_store_url}/analytics/campaign=demo/run=run-a", tmp_path / "y")


def test_cli_serves_an_s3_location_and_says_so(s3_store_url):
    location = put_site(s3_store_url, "demo", "wf-7", "wf-7's report")
    port = free_port()
    proc = subprocess.Popen(
        [PVBENCH, "report", "serve", location + "/", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                status, body = get(f"http://127.0.0.1:{port}/")
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read()
                assert time.monotonic() < deadline, "pvbench report serve did not answer in 30 s"
                time.sleep(0.2)
        assert status == 200 and "wf-7's report" in body
        assert get(f"http://127.0.0.1:{port}/_app/app.js")[1] == "console.log('wf-7's report')"
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert f"serving {location}/ at http://127.0.0.1:{port}/" in " ".join(err.split())


def test_cli_errors_are_one_line(s3_store_url, tmp_path):
    def serve(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [PVBENCH, "report", "serve", *args],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "COLUMNS": "400"},
        )

    missing = serve(report_location(s3_store_url, "demo", "nope"))
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1, missing.stderr
    assert missing.stderr.startswith("error: no report at s3://")
    assert serve().stderr.startswith("error: give a report")
    assert serve(str(tmp_path), "--store", str(tmp_path)).stderr.startswith("error: give a report")
    assert serve(str(tmp_path), "--campaign", "x").stderr.startswith("error: --campaign and --run go with --store")
    assert "is not a built report" in serve(str(tmp_path)).stderr
    no_env = subprocess.run(
        [PVBENCH, "report", "serve", "s3://bucket/x"],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PVBENCH_S3"))},
    )
    assert no_env.returncode == 2 and "PVBENCH_S3_ENDPOINT" in no_env.stderr


# ---------------------------------------------------------------- a whole store
@pytest.mark.parametrize("kind", ["s3", "local"])
def test_store_server_lists_and_opens_reports(kind, s3_store_url, tmp_path):
    store_url = s3_store_url if kind == "s3" else str(tmp_path / "store")
    put_site(store_url, "demo", "wf-1", "first run")
    put_site(store_url, "demo", "wf-2", "second run")
    put_site(store_url, "demo", None, "campaign demo")
    assert [(r.campaign, r.run) for r in list_reports(store_url)] == [
        ("demo", "all"),
        ("demo", "wf-1"),
        ("demo", "wf-2"),
    ]
    cache = tmp_path / "cache"
    server = make_store_server(store_url, cache, port=0)
    try:
        base = started(server)
        status, listing = get(base + "/")
        assert status == 200 and 'href="/open/demo/wf-1"' in listing and 'href="/open/demo/all"' in listing
        assert get(base + "/_app/app.js")[0] == 404  # nothing open yet
        # the Argo UI link's shape: the campaign label as given (slugged like the keys), the run's name
        status, page = get(base + "/open/Demo/wf-1")  # urllib follows the redirect to /
        assert status == 200 and "first run" in page
        assert get(base + "/_app/app.js")[1] == "console.log('first run')"
        assert "second run" in get(base + "/open/demo/wf-2")[1]
        assert get(base + "/comparisons/")[1] == "<h1>second run comparisons</h1>"
        assert "campaign demo" in get(base + "/open/demo/all")[1]
        status, body = get(base + "/open/demo/wf-9")
        assert status == 404 and "no report at" in body and 'href="/open/demo/wf-1"' in body
        assert get(base + "/")[1] == fake_site("campaign demo")["index.html"].decode()  # still the last one
        assert 'href="/open/demo/wf-2"' in get(base + "/_pvbench")[1]
    finally:
        server.shutdown()
        server.server_close()
    if kind == "s3":  # one fetched copy at a time (the earlier ones were removed)
        assert len(list(cache.iterdir())) == 1
    else:  # a local store is served where it is
        assert not cache.exists() or not list(cache.iterdir())


def head_of(url: str, **headers: str) -> tuple[int, dict[str, str]]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, dict(r.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers)


def age(root: Path, days: float) -> None:
    """Files as old as a report built ``days`` ago (what a browser's guess of freshness grows with)."""
    stamp = time.time() - days * 86400
    for f in root.rglob("*"):
        os.utime(f, (stamp, stamp))


def test_the_servers_say_what_a_browser_may_keep(tmp_path):
    """Hashed assets for good; everything else asked again each time, by a validator that names
    the file (an older file of another report is no match), never by modification time."""
    site = tmp_path / "site"
    for name, data in fake_site("one").items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_bytes(data)
    age(site, 30)
    server = make_server(site, port=0)
    try:
        base = started(server)
        status, h = head_of(base + "/_app/immutable/chunk.css")
        assert status == 200 and h["Cache-Control"] == "public, max-age=31536000, immutable"
        status, h = head_of(base + "/_app/immutable/missing.css")
        assert status == 404 and h["Cache-Control"] == "no-cache"  # a 404 is not kept
        status, h = head_of(base + "/")
        assert status == 200 and h["Cache-Control"] == "no-cache" and h["ETag"]
        etag = h["ETag"]
        assert head_of(base + "/", **{"If-None-Match": etag})[0] == 304
        assert head_of(base + "/comparisons/", **{"If-None-Match": etag})[0] == 200  # another file
        # a time after the file's own: the file changed under the same path all the same
        (site / "index.html").write_bytes(b"<title>rebuilt</title>")
        age(site, 40)
        status, h = head_of(base + "/", **{"If-None-Match": etag, "If-Modified-Since": "Sun, 01 Nov 2026 00:00:00 GMT"})
        assert status == 200 and h["ETag"] != etag
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
def test_a_browser_shows_the_report_opened_not_one_it_kept(tmp_path):
    """Real Chromium on the store server: open one run's report, then another's, at the same
    paths. Without caching headers the browser guessed the first report fresh (its files are
    weeks old) and showed it again for the second."""
    try:
        reports = check_installed()
    except ReportError as exc:
        pytest.fail(f"{exc}  (ci/install-report.sh)")
    store_url = str(tmp_path / "store")
    put_site(store_url, "demo", "wf-1", "first run")
    put_site(store_url, "demo", "wf-2", "second run")
    age(tmp_path / "store", 20)
    age(tmp_path / "store" / layout.report_prefix("demo", "wf-2"), 30)  # older than what the browser holds
    server = make_store_server(store_url, tmp_path / "cache", port=0)
    pages = [
        {"name": "first", "path": "/open/demo/wf-1"},
        {"name": "first-comparisons", "path": "/comparisons/"},
        {"name": "second", "path": "/open/demo/wf-2"},
        {"name": "second-comparisons", "path": "/comparisons/"},
    ]
    try:
        result = browse(reports, started(server), tmp_path / "shots", pages)
    finally:
        server.shutdown()
        server.server_close()
    shown = {p["name"]: (p["title"], p["text"]) for p in result["pages"]}
    assert shown["first"][0] == "first run" and "first run comparisons" in shown["first-comparisons"][1]
    assert shown["second"][0] == "second run", shown
    assert "second run comparisons" in shown["second-comparisons"][1], shown


def test_cli_store_with_campaign_and_run_opens_that_report(s3_store_url):
    put_site(s3_store_url, "demo", "wf-3", "run three")
    port = free_port()
    proc = subprocess.Popen(
        [
            PVBENCH,
            "report",
            "serve",
            "--store",
            s3_store_url,
            "--campaign",
            "demo",
            "--run",
            "wf-3",
            "--port",
            str(port),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                body = get(f"http://127.0.0.1:{port}/")[1]
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read()
                assert time.monotonic() < deadline
                time.sleep(0.2)
        assert "run three" in body
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


# ---------------------------------------------------------------- the report step says where
def test_locate_prints_location_command_and_url(tmp_path):
    key = layout.report_prefix("demo", "pvbench-benchmark-abc12")
    out = subprocess.run(
        [
            PVBENCH,
            "report",
            "locate",
            "--key",
            key,
            "--campaign",
            "Demo",
            "--run",
            "pvbench-benchmark-abc12",
            "--namespace",
            "pvbench",
            "--outputs",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PVBENCH_REPORT_STORE": "s3://pvbench", "PVBENCH_REPORT_URL": LINK},
    )
    assert out.returncode == 0, out.stderr
    location = "s3://pvbench/analytics/campaign=demo/run=pvbench-benchmark-abc12/report/"
    assert out.stdout.splitlines() == [
        f"report stored at: {location}",
        f"open it with:     pvbench report serve {location}",
        "report URL:       http://127.0.0.1:8000/open/Demo/pvbench-benchmark-abc12",
    ]
    assert (tmp_path / "report-location").read_text() == location
    assert (tmp_path / "report-url").read_text() == "http://127.0.0.1:8000/open/Demo/pvbench-benchmark-abc12"


def test_locate_without_the_chart_and_with_an_unknown_variable(tmp_path):
    plain = published(
        "analytics/campaign=c/run=r/report", store=None, url_template=None, campaign="c", run="r", namespace="ns"
    )
    assert plain.location == "analytics/campaign=c/run=r/report/" and plain.url == ""
    assert "pvbench-report" in "\n".join(plain.lines())
    odd = published(
        "k", store="s3://b", url_template="https://x/${status.startedAt}", campaign="c", run="r", namespace="ns"
    )
    assert odd.url == "" and "${status.startedAt}" in odd.lines()[-1]
    assert (
        fill_url("/r/${metadata.namespace}/${workflow.metadata.name}", run="a b", namespace="ns", campaign="c")
        == "/r/ns/a%20b"
    )


def test_report_step_runs_locate_with_the_runs_values_as_arguments(tmp_path):
    """The step's script, run by sh as the pod would (a stand-in for the 2-minute Evidence build):
    the run's values reach `locate` as arguments, never as shell text, even a hostile campaign."""
    step = templates_by_name(benchmark_template())["report"]["container"]
    script, *args = step["args"]
    root = tmp_path / "pod"
    script = script.replace("/tmp/pvbench", str(root))
    args = [a.replace("/tmp/pvbench", str(root)) for a in args]
    hostile = "x$(touch pwned)`touch pwned`"
    values = {
        "{{=lower(workflow.parameters.campaign)}}": "demo",
        "{{workflow.parameters.campaign}}": hostile,
        "{{workflow.name}}": "pvbench-benchmark-q9",
        "{{workflow.namespace}}": "pvbench",
    }
    for placeholder, value in values.items():
        args = [a.replace(placeholder, value) for a in args]
    assert not any("{{" in a for a in args), args
    fake = tmp_path / "bin" / "pvbench"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\nif [ "$1 $2" = "report build" ]; then exit 0; fi\nexec {PVBENCH} "$@"\n')
    fake.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{fake.parent}:{os.environ['PATH']}",
        "PVBENCH_REPORT_STORE": "s3://pvbench",
        "PVBENCH_REPORT_URL": LINK,
    }
    proc = subprocess.run(
        [*step["command"], script, *args], capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "pwned").exists()
    location = (root / "report-out" / "report-location").read_text()
    assert location == "s3://pvbench/analytics/campaign=demo/run=all/report/"  # the campaign's, with this run in it
    assert f"pvbench report serve {location}" in proc.stdout
    assert (root / "report-out" / "report-url").read_text().startswith("http://127.0.0.1:8000/open/x%24%28touch")


def test_the_report_image_builds_where_its_step_may_write():
    """The report step's pod has a read-only root: the image builds in a working copy at its
    PVBENCH_REPORT_WORKDIR (pvbench.report.build.working_copy: node_modules linked, not copied;
    the bundles it compiled are of that path), which must be on the step's emptyDir."""
    dockerfile = (REPO / "ci" / "images" / "report" / "Dockerfile").read_text()
    found = re.search(r"^ENV PVBENCH_REPORT_WORKDIR=(\S+)$", dockerfile, re.M)
    assert found, "the report image names no working copy"
    workdir = found.group(1)
    step = templates_by_name(benchmark_template())["report"]["container"]
    assert step["securityContext"]["readOnlyRootFilesystem"] is True
    mounts = [m["mountPath"].rstrip("/") + "/" for m in step["volumeMounts"]]
    assert any(workdir.startswith(m) for m in mounts), (workdir, mounts)
    assert "cp " not in step["args"][0]  # the project is not copied by the step's script any more


# ---------------------------------------------------------------- template and chart
def test_template_publishes_the_report_location():
    doc = benchmark_template()
    report = templates_by_name(doc)["report"]
    params = {p["name"]: p for p in report["outputs"]["parameters"]}
    assert set(params) == {c.REPORT_LOCATION_OUTPUT, c.REPORT_URL_OUTPUT}
    for name, p in params.items():  # workflow-wide outputs, never a failed step for want of a file
        assert p["globalName"] == name and p["valueFrom"] == {"path": f"{c.REPORT_OUT_DIR}/{name}", "default": ""}
    key = report["outputs"]["artifacts"][0]["s3"]["key"]
    assert report["container"]["args"][1:].count(key) == 1  # locate names the key the artifact goes to
    assert all("{{" not in line for line in report["container"]["args"][0].split("$@"))  # no values in the script
    env = {e["name"]: e["valueFrom"]["configMapKeyRef"] for e in report["container"]["env"]}
    assert env == {
        "PVBENCH_REPORT_STORE": {"name": c.REPORT_CONFIGMAP, "key": "store", "optional": True},
        "PVBENCH_REPORT_URL": {"name": c.REPORT_CONFIGMAP, "key": "url", "optional": True},
    }
    # the link's ${workflow.metadata.labels.pvbench.io/campaign}
    assert doc["spec"]["workflowMetadata"]["labelsFrom"][c.LABEL_CAMPAIGN] == {
        "expression": "workflow.parameters.campaign"
    }


def chart_notes(*sets: str, tmp_path: Path) -> str:
    """NOTES.txt as helm renders it (helm template leaves it out: render it inside a ConfigMap)."""
    chart = tmp_path / "chart"
    shutil.copytree(CHART, chart)
    notes = (chart / "templates" / "NOTES.txt").read_text()
    (chart / "templates" / "NOTES.txt").unlink()
    (chart / "templates" / "_notes_test.tpl").write_text('{{- define "test.notes" -}}' + notes + "{{- end -}}")
    (chart / "templates" / "notes-test.yaml").write_text(
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\ndata:\n  notes: {{ include "test.notes" . | quote }}\n'
    )
    args = ["template", "pvbench", str(chart), "-n", "pvbench", "-s", "templates/notes-test.yaml"]
    for s in sets:
        args += ["--set", s]
    proc = helm(*args)
    assert proc.returncode == 0, proc.stderr
    return yaml.safe_load(proc.stdout)["data"]["notes"]


def test_chart_report_configmap_and_notes(tmp_path):
    [cm] = [
        d
        for d in load_yaml_docs(helm_template(sets=("s3.bucket=bench-results",)))
        if d["kind"] == "ConfigMap" and d["metadata"]["name"] == c.REPORT_CONFIGMAP
    ]
    assert cm["data"] == {"store": "s3://bench-results", "url": ""}
    notes = chart_notes(tmp_path=tmp_path)
    # the key the report step really writes (the store layout's, for a campaign: run=all)
    from pvbench.store.layout import report_prefix

    where = report_prefix("campaign-x").replace("campaign-x", "<campaign>")
    assert f"pvbench report serve s3://pvbench/{where}/" in notes and "run=<run>/report" not in notes
    assert "links:" not in notes and "set report.url" in notes

    [cm] = [
        d
        for d in load_yaml_docs(helm_template(sets=(f"report.url={LINK}",)))
        if d["kind"] == "ConfigMap" and d["metadata"]["name"] == c.REPORT_CONFIGMAP
    ]
    assert cm["data"]["url"] == LINK
    notes = chart_notes(f"report.url={LINK}", tmp_path=tmp_path / "2")
    snippet = notes[notes.index("    links: |") :]
    links = yaml.safe_load(yaml.safe_load("\n".join(line[4:] for line in snippet.splitlines()))["links"])
    assert links == [{"name": "pvbench report", "scope": "workflow", "url": LINK}]


def test_chart_refuses_a_report_url_that_is_no_url():
    proc = helm("template", "pvbench", str(CHART), "--set", "report.url=javascript:alert(1)")
    assert proc.returncode != 0 and "report" in proc.stderr
