"""Find a built report in a store (S3/MinIO or a local directory) and fetch it for serving.

The Argo ``report`` step stores the site under the key layout's report prefix
(``analytics/campaign=<c>/run=<r>/report/``, :func:`pvbench.store.layout.report_prefix`);
local mode and ``pvbench aggregate`` + ``report build`` by hand can put it there too.
A report is addressed either by its own location (``s3://bucket/analytics/…/report``, or a
directory) or by a store and the campaign (and run) it belongs to.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import quote

from pvbench.report.build import ReportError, _is_site
from pvbench.store import LocalStore, open_store
from pvbench.store.base import StoreError
from pvbench.store.layout import ALL_RUNS, ANALYTICS_ROOT, REPORT_DIR, REPORT_INDEX, parse_report_key, report_prefix

# Set in the Argo report step from the chart's ConfigMap pvbench-report (both optional).
STORE_ENV = "PVBENCH_REPORT_STORE"  # the artifact repository as a store URL: s3://<bucket>
URL_ENV = "PVBENCH_REPORT_URL"  # where the team opens reports: an Argo UI link template
CAMPAIGN_LABEL = "pvbench.io/campaign"
# The Argo UI link variables (docs/links.md) a report URL may use; the report step fills in the same.
URL_VARIABLES = (
    "metadata.name",
    "metadata.namespace",
    "workflow.metadata.name",
    "workflow.metadata.namespace",
    f"workflow.metadata.labels.{CAMPAIGN_LABEL}",
)
_URL_VARIABLE = re.compile(r"\$\{([^}]*)\}")


def is_store_url(location: str) -> bool:
    return str(location).strip().lower().startswith("s3://")


def report_location(store: str, campaign: str, run: str | None = None) -> str:
    """The location of a campaign's (or one run's) report in ``store``: ``<store>/analytics/…/report``."""
    base = str(store).strip().rstrip("/")
    return f"{base}/{report_prefix(campaign, None if run in (None, ALL_RUNS) else run)}"


def serve_command(location: str) -> str:
    """The command that opens the report at ``location`` on a laptop."""
    return f"pvbench report serve {location}"


def fill_url(template: str, *, run: str, namespace: str, campaign: str) -> str:
    """A report URL template (Argo link syntax) with this run's values; ValueError for another variable."""
    values = dict(zip(URL_VARIABLES, (run, namespace, run, namespace, campaign)))

    def one(match: re.Match) -> str:
        name = match.group(1).strip()
        if name not in values:
            raise ValueError(
                f"the report URL uses ${{{name}}}; only {', '.join('${' + v + '}' for v in URL_VARIABLES)} "
                "are known to the report step"
            )
        return quote(values[name], safe="")

    return _URL_VARIABLE.sub(one, template)


@dataclass(frozen=True)
class Published:
    """Where a run's report is stored and how to open it: the report step's log lines and outputs."""

    location: str
    command: str
    url: str
    note: str = ""

    def lines(self) -> list[str]:
        out = [f"report stored at: {self.location}", f"open it with:     {self.command}"]
        if self.url:
            out.append(f"report URL:       {self.url}")
        if self.note:
            out.append(self.note)
        return out

    def write_outputs(self, directory: Path) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "report-location").write_text(self.location)
        (directory / "report-url").write_text(self.url)


def published(
    key: str, *, store: str | None, url_template: str | None, campaign: str, run: str, namespace: str
) -> Published:
    """The report at ``key`` of ``store``: its location, the serve command and (with a template) its URL."""
    key = key.strip().strip("/")
    store = (store or "").strip().rstrip("/")
    note = ""
    if store:
        location = f"{store}/{key}/"
        command = serve_command(location)
    else:
        location = f"{key}/"
        command = serve_command(f"s3://BUCKET/{key}/")
        note = "(the key in the artifact repository's bucket; the chart's ConfigMap pvbench-report names it)"
    url = ""
    if url_template and url_template.strip():
        try:
            url = fill_url(url_template.strip(), run=run, namespace=namespace, campaign=campaign)
        except ValueError as exc:
            note = (note + " " if note else "") + f"no report URL: {exc}"
    return Published(location, command, url, note)


@dataclass(frozen=True)
class StoredReport:
    campaign: str  # as in the key (a slug)
    run: str

    @property
    def path(self) -> str:
        return f"/open/{self.campaign}/{self.run}"


def list_reports(store_url: str) -> list[StoredReport]:
    """Every built report in a store (campaign and run as they appear in the keys)."""
    store = open_store(store_url)
    found = []
    for key in store.list_keys(ANALYTICS_ROOT):
        where = parse_report_key(key)
        if where is not None:
            found.append(StoredReport(*where))
    return sorted(set(found), key=lambda r: (r.campaign, r.run))


def _safe_target(dest: Path, relative: str) -> Path | None:
    """Where a stored file goes under ``dest``; None for a key that would leave it (``..``, absolute)."""
    parts = PurePosixPath(relative).parts
    if not parts or relative.startswith("/") or any(p in ("..", "") for p in parts):
        return None
    return dest.joinpath(*parts)


def fetch_report(location: str, dest: Path, workers: int = 8) -> Path:
    """Download the built report at ``location`` (``s3://bucket/…/report`` or a directory) into ``dest``.

    Returns the site directory to serve: ``location`` itself for a local directory (nothing is
    copied), else ``dest``. Raises ReportError (one line) when nothing is there or what is there
    is not a built report, StoreError when the store cannot be reached.
    """
    text = str(location).strip()
    if not is_store_url(text):
        if "://" in text and not text.startswith("file://"):
            raise ReportError(f"unsupported report location {text!r}: use a directory or s3://bucket/…/report")
        store = open_store(text)
        assert isinstance(store, LocalStore)
        site = store.root
        if not site.exists():
            raise ReportError(f"no report at {site}: the directory does not exist")
        if not _is_site(site):
            raise ReportError(
                f"{site} is not a built report (no index.html and _app/): "
                "run `pvbench report build`, or give the store and --campaign/--run"
            )
        return site

    store = open_store(text.rstrip("/"))
    keys = [k for k in store.list_keys("") if k]
    if not keys:
        raise ReportError(
            f"no report at {store.url}/: nothing is stored there (has the run's report step "
            "finished? `pvbench report serve --store s3://BUCKET` lists the stored reports)"
        )
    if REPORT_INDEX not in keys or not any(k.startswith("_app/") for k in keys):
        hint = f"; the run's report is {store.url}/{REPORT_DIR}/" if f"{REPORT_DIR}/{REPORT_INDEX}" in keys else ""
        raise ReportError(
            f"{store.url}/ holds {len(keys)} objects but no built report (no index.html and _app/)" + hint
        )
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    targets = []
    for key in keys:
        target = _safe_target(dest, key)
        if target is None:
            raise ReportError(f"{store.url}/{key}: refusing a key that leaves the report directory")
        targets.append((key, target))

    def get(item: tuple[str, Path]) -> None:
        key, target = item
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(store.get_bytes(key))

    try:
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            list(pool.map(get, targets))
    except OSError as exc:
        raise ReportError(f"cannot write the report to {dest}: {exc.strerror or exc}") from exc
    return dest


__all__ = [
    "Published",
    "ReportError",
    "StoreError",
    "StoredReport",
    "fetch_report",
    "fill_url",
    "is_store_url",
    "list_reports",
    "published",
    "report_location",
    "serve_command",
]
