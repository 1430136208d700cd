"""The one key layout of the store.

Every writer (local mode, the pod step, Argo output artifacts, the thesis import)
and every reader (analytics, compare, report) builds keys here and nowhere else; what reads a
key back (its campaign and run) parses it here too, from the same names (run_of,
parse_compact_key, find_compact, parse_report_key, COMPACT_FILE_PATTERN).

    results/campaign=<c>/run=<r>/occasion=<o>/storage_class=<sc>/volume=<v>/profile=<p>/workload=<w>/rep=<n>/result.json
                                                                                                         .../fio.json
                                                                                                         .../fio-logs.tar.gz
    (<v>: the volume's shape, pvbench.cells.volume.volume_key: filesystem-rwo, block-rwo, filesystem-rwx…)
    compact/campaign=<c>/run=<r>/result_rows.parquet   (a run's results, validated and flattened once)
                                 .../documents.parquet     (what was read: key, size, version, problem)
                                 .../occasion_measurements.parquet (its values grouped by occasion)
                                 .../warmup_by_occasion.parquet, run_cells.parquet, run_usage.parquet,
                                    run_setup.parquet
                                                           (the run's own summaries, made once)
                                 .../failures.parquet      (the run's failed cells, as Argo reported them)
    snapshot/campaign=<c>/manifest.json                   (the snapshot's parts: which runs' compacts each holds, and their versions)
    snapshot/campaign=<c>/<generation>/<table>.parquet     (a part: those compacts merged, one file per table)
    analytics/campaign=<c>/run=all/<table>.parquet        (the campaign's tables, from every run's compact)
    analytics/campaign=<c>/run=all/report/…              (the campaign's Evidence site)
    .locks/campaign=<c>.lock                              (a directory store's aggregation lock: store/locks.py; listings skip dot folders)

Hive-style ``name=value`` segments let DuckDB and humans filter by path; the values
are slugs of the labels (the labels themselves live inside result.json, verbatim).
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

RESULTS_ROOT = "results"
ANALYTICS_ROOT = "analytics"
HISTORY_ROOT = "history"
HISTORY_FILE = "occasion_history.parquet"
COMPACT_ROOT = "compact"
COMPACT_DOCUMENTS_FILE = "documents.parquet"
COMPACT_FAILURES_FILE = "failures.parquet"


def compact_table_file(table: str) -> str:
    """The file of a run's compact (and of a campaign's snapshot) that holds one of its tables."""
    return f"{table}.parquet"


# beside compact/, not in it: the Argo step downloads compact/campaign=<c>/ whole and has no use for it
SNAPSHOT_ROOT = "snapshot"
SNAPSHOT_MANIFEST = "manifest.json"
RESULT_FILE = "result.json"
PARQUET_TYPE = "application/vnd.apache.parquet"  # the content type of every Parquet file stored
RAW_FIO_FILE = "fio.json"
# fio's interval logs of the cell (pvbench.fio.series: the raw form of result.json's series), gzipped tar
FIO_LOGS_FILE = "fio-logs.tar.gz"
# What a cell stores beside its result.json, written (and flushed from a spool) before it
RAW_FILES = (RAW_FIO_FILE, FIO_LOGS_FILE)
# One client pod's output in a multi-client cell on Argo (pvbench.cells.clients.run_pod_client), under
# the cell's prefix at clients/<n>/: the merge step reads them; analytics reads only RESULT_FILE.
CLIENT_FILE = "client.json"
CLIENTS_DIR = "clients"
ALL_RUNS = "all"
# a dot folder: listings skip it, so the lock files never pass for results or compacts
LOCKS_ROOT = ".locks"
REPORT_DIR = "report"
REPORT_INDEX = "index.html"  # a built report site's first page: its key is where a report is (report.fetch)
# The names of a key's ``name=value`` segments: the builders below write them, the parsers read them.
CAMPAIGN = "campaign"
RUN = "run"

_SLUG_BAD = re.compile(r"[^a-z0-9._-]+")


@functools.lru_cache(maxsize=4096, typed=True)  # a campaign's keys repeat a few labels 100,000 times
def slug(label: str | int) -> str:
    """A key-safe form of a label: lowercase, [a-z0-9._-], never empty.

    DNS-1123 names (Kubernetes storage classes) are already slugs and pass unchanged,
    so a cluster run's keys read exactly like its storage class names.
    """
    text = _SLUG_BAD.sub("-", str(label).strip().lower()).strip("-")
    if not text:
        raise ValueError(f"cannot build a store key from the empty label {label!r}")
    return text


def _segment(name: str, label: str | int) -> str:
    """One ``name=value`` segment of a key: the label's slug (every builder's)."""
    return f"{name}={slug(label)}"


def _field(name: str, value: str = "[^/]+") -> str:
    """The regular expression of one ``name=value`` segment, its value a group (every parser's)."""
    return f"{re.escape(name)}=({value})"


def check_distinct(kind: str, labels) -> None:
    """Refuse labels that would share a key: ``Night`` and ``night`` (or one listed twice).

    Labels keep their case in the result document, keys use the slug; two labels with one
    slug would silently overwrite each other's results.
    """
    seen: dict[str, str] = {}
    for label in labels:
        key = slug(label)
        if key in seen:
            if seen[key] == label:
                raise ValueError(f"{kind} {label!r} is listed twice")
            raise ValueError(
                f"{kind}s {seen[key]!r} and {label!r} would be stored under the same key "
                f"({kind}={key}): labels that differ only in case or punctuation overwrite each "
                "other; rename one"
            )
        seen[key] = label


def check_distinct_keys(items) -> None:
    """``items``: (description, CellIdentity) pairs; refuse two different cells stored under one key."""
    seen: dict[str, str] = {}
    for what, key in items:
        where = key.result_key()
        if where in seen:
            raise ValueError(
                f"{seen[where]} and {what} would be stored under the same key {key.prefix()}; "
                "one would overwrite the other"
            )
        seen[where] = what


def cell_prefix(
    campaign: str,
    run: str,
    occasion: str,
    storage_class: str,
    volume: str,
    profile: str,
    workload: str,
    rep: int | str,
) -> str:
    """Where one cell's result.json and fio.json go (CellIdentity.prefix; templates call it with placeholders)."""
    return "/".join(
        [
            RESULTS_ROOT,
            _segment(CAMPAIGN, campaign),
            _segment(RUN, run),
            _segment("occasion", occasion),
            _segment("storage_class", storage_class),
            _segment("volume", volume),
            _segment("profile", profile),
            _segment("workload", workload),
            _segment("rep", rep),
        ]
    )


def results_prefix(campaign: str | None = None, run: str | None = None) -> str:
    """Prefix holding all results of a campaign (or of one run of it, or everything)."""
    parts = [RESULTS_ROOT]
    if campaign is not None:
        parts.append(_segment(CAMPAIGN, campaign))
        if run is not None:
            parts.append(_segment(RUN, run))
    return "/".join(parts)


def results_glob(campaign: str | None = None, run: str | None = None) -> str:
    """Glob (relative to the store root) matching every result.json under the prefix."""
    return f"{results_prefix(campaign, run)}/**/{RESULT_FILE}"


def compact_prefix(campaign: str | None = None, run: str | None = None) -> str:
    """Where a run's compact tables go (pvbench.analytics.compact), or all of a campaign's."""
    parts = [COMPACT_ROOT]
    if campaign is not None:
        parts.append(_segment(CAMPAIGN, campaign))
        if run is not None:
            parts.append(_segment(RUN, run))
    return "/".join(parts)


def snapshot_prefix(campaign: str) -> str:
    """Where a campaign's snapshot (its runs' compacts merged: pvbench.analytics.snapshot) is."""
    return f"{SNAPSHOT_ROOT}/{_segment(CAMPAIGN, campaign)}"


def run_of(key: str) -> tuple[str, str] | None:
    """(campaign slug, run slug) of a results/… or compact/… key, from its 2nd and 3rd segments.

    A document put there by hand outside the layout (results/campaign=c/copy/result.json) still
    belongs to a run: the folder it is in (``copy``). None for a key too short to have one.
    """
    parts = key.split("/")
    if len(parts) < 4 or parts[0] not in (RESULTS_ROOT, COMPACT_ROOT):
        return None
    return parts[1].removeprefix(f"{CAMPAIGN}="), parts[2].removeprefix(f"{RUN}=")


# compact/campaign=<c>/run=<r>: a run's compact (compact_prefix), its campaign and run the groups
_COMPACT_RUN = "/".join([re.escape(COMPACT_ROOT), _field(CAMPAIGN), _field(RUN)])
_COMPACT_FILE = re.compile(rf"^{_COMPACT_RUN}/([^/]+)$")
# the same in a text (an error message): a local store's path, an s3:// URL or a local copy of one
# (copies keep their keys' folders), ended by a quote or a space
_IN_TEXT = r"""[^/\s'"]+"""  # a segment's value in a text: up to a slash, a space or a quote
_COMPACT_IN_TEXT = re.compile(
    r"""(?:^|[/'"\s])("""
    + "/".join([re.escape(COMPACT_ROOT), _field(CAMPAIGN, _IN_TEXT), _field(RUN, _IN_TEXT)])
    + ")/"
)
# A path that ends with a compact file's key (a local store's, an s3:// URL, a local copy): groups
# campaign and run. For DuckDB's regexp_extract (RE2: no quote in it, so it fits a SQL literal).
COMPACT_FILE_PATTERN = rf"{_COMPACT_RUN}/[^/]+$"


class CompactKey(NamedTuple):
    prefix: str  # compact/campaign=<c>/run=<r>, as found
    campaign: str  # slugs, as in the key
    run: str


def parse_compact_key(key: str) -> tuple[str, str, str] | None:
    """(campaign, run, file) of a file of a run's compact (``compact/campaign=<c>/run=<r>/<file>``,
    compact_prefix); None for any other key (a deeper one, one outside the layout)."""
    match = _COMPACT_FILE.match(key)
    return (match.group(1), match.group(2), match.group(3)) if match else None


def find_compact(text: str) -> CompactKey | None:
    """The first run's compact a key or a text (an error message) names by one of its files: a key,
    a local store's path, an s3:// URL or a local copy of one. None if it names none."""
    match = _COMPACT_IN_TEXT.search(text)
    return CompactKey(*match.groups()) if match else None


def analytics_prefix(campaign: str, run: str | None = None) -> str:
    """Where the aggregated Parquet tables of a campaign (or one run) are written."""
    return f"{ANALYTICS_ROOT}/{_segment(CAMPAIGN, campaign)}/{_segment(RUN, run or ALL_RUNS)}"


def history_key(campaign: str) -> str:
    """A copy of the campaign's occasion_history table where the other campaigns' aggregations
    find it (an Argo step fetches the whole prefix: a few small files, not the analytics tree)."""
    return f"{HISTORY_ROOT}/{_segment(CAMPAIGN, campaign)}/{HISTORY_FILE}"


def histories_glob() -> str:
    """Every campaign's history_key, as a glob."""
    return f"{HISTORY_ROOT}/{CAMPAIGN}=*/{HISTORY_FILE}"


def report_prefix(campaign: str, run: str | None = None) -> str:
    """Where the built report site of a campaign (or one run) goes: beside its tables."""
    return f"{analytics_prefix(campaign, run)}/{REPORT_DIR}"


_REPORT_KEY = re.compile(
    rf"^{re.escape(ANALYTICS_ROOT)}/{_field(CAMPAIGN)}/{_field(RUN)}/{re.escape(REPORT_DIR)}/{re.escape(REPORT_INDEX)}$"
)


def parse_report_key(key: str) -> tuple[str, str] | None:
    """(campaign, run) of a built report's index page (``report_prefix(c, r)/index.html``, as slugs;
    run ``all`` for a campaign's report); None for any other key."""
    match = _REPORT_KEY.match(key)
    return (match.group(1), match.group(2)) if match else None


def lock_key(campaign: str | None) -> str:
    """The file of the lock one aggregation of a campaign holds (by the campaign's slug, as its other
    keys: ``Prod`` and ``prod`` share it), or of an aggregation of every campaign."""
    return f"{LOCKS_ROOT}/" + (f"{_segment(CAMPAIGN, campaign)}.lock" if campaign else "all-campaigns.lock")
