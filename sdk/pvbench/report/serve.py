"""Serve a built report over HTTP (a browser does not let a page fetch its data over file://).

Two ways: one site directory (``make_server``), or a whole store (``make_store_server``), where
``/open/<campaign>/<run>`` fetches that run's report from the store and serves it at ``/`` (one
report at a time). The site needs neither: its URLs are relative, so any static file server, at
any path prefix, serves it too (pvbench.report.build, reports/scripts/relative-base.mjs).
"""

from __future__ import annotations

import functools
import html
import os
import shutil
import tempfile
import threading
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from pvbench.report.build import ReportError, _is_site
from pvbench.report.fetch import fetch_report, list_reports, report_location
from pvbench.store.base import StoreError
from pvbench.store.layout import PARQUET_TYPE

# SvelteKit names every file under /_app/immutable/ by a hash of its content: a browser may keep
# it for good. Every page of a report loads ~40 MB from there (DuckDB's WebAssembly, 34 MB, and
# the JavaScript), which a browser fetched again on each page while the server sent no caching
# headers.
IMMUTABLE_PREFIX = "/_app/immutable/"
IMMUTABLE = "public, max-age=31536000, immutable"
# Everything else (pages, data, queries) changes with a rebuild, and the store server serves
# another report under the same paths: the browser must ask each time. Without a Cache-Control
# header it guessed a freshness from Last-Modified (a tenth of the file's age) and showed the
# report opened before, or a rebuilt site's old data, without asking.
REVALIDATE = "no-cache"


def _etag(st: os.stat_result) -> str:
    """A validator that names the file, not only its time: another report's file (the store
    server) is another inode, even when it is older than the copy the browser holds."""
    return f'"{st.st_ino:x}-{st.st_mtime_ns:x}-{st.st_size:x}"'


class _Handler(SimpleHTTPRequestHandler):
    extensions_map = {
        **SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
        ".parquet": PARQUET_TYPE,
        ".arrow": "application/vnd.apache.arrow.stream",
        ".webmanifest": "application/manifest+json",
    }
    _etag: str | None = None
    _cache_control_sent = False
    _status = 0

    def send_head(self):
        """The file's ETag, and 304 when the browser holds that very file. Modification times
        are never compared (If-Modified-Since): another report's older file is not the one cached."""
        self._etag, self._cache_control_sent = None, False
        del self.headers["If-Modified-Since"]
        url_path = urlsplit(self.path).path
        if not url_path.startswith(IMMUTABLE_PREFIX):
            path = self.translate_path(self.path)
            if url_path.endswith("/") and os.path.isdir(path):
                path = os.path.join(path, "index.html")
            try:
                st = os.stat(path)
            except OSError:
                st = None
            if st is not None and os.path.isfile(path):
                self._etag = _etag(st)
                wanted = {tag.strip().removeprefix("W/") for tag in self.headers.get("If-None-Match", "").split(",")}
                if self._etag in wanted or "*" in wanted:
                    self.send_response(HTTPStatus.NOT_MODIFIED)
                    self.end_headers()
                    return None
        return super().send_head()

    def send_response(self, code: int, message: str | None = None) -> None:
        self._status = int(code)
        super().send_response(code, message)

    def send_header(self, keyword: str, value: str) -> None:
        if keyword.lower() == "cache-control":
            self._cache_control_sent = True
        super().send_header(keyword, value)

    def end_headers(self) -> None:
        if not self._cache_control_sent:
            # only the file itself is kept: a 404 there (no report open yet) must be asked again
            immutable = self._status == HTTPStatus.OK and urlsplit(self.path).path.startswith(IMMUTABLE_PREFIX)
            super().send_header("Cache-Control", IMMUTABLE if immutable else REVALIDATE)
        if self._etag is not None:
            super().send_header("ETag", self._etag)
        self._etag, self._cache_control_sent, self._status = None, False, 0
        super().end_headers()

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - quiet by default
        pass


def make_server(site_dir: Path, host: str = "127.0.0.1", port: int = 8000) -> ThreadingHTTPServer:
    """An HTTP server for ``site_dir`` (not started). ``port=0`` picks a free port."""
    site_dir = Path(site_dir).resolve()
    if not _is_site(site_dir):
        raise ReportError(f"{site_dir} is not a built report (no index.html and _app/): run `pvbench report build`")
    handler = functools.partial(_Handler, directory=str(site_dir))
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def start_server(site_dir: Path, host: str = "127.0.0.1", port: int = 0) -> tuple[ThreadingHTTPServer, str]:
    """Serve ``site_dir`` in a background thread; returns the server and its base URL."""
    server = make_server(site_dir, host, port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    h, p = server.server_address[:2]
    return server, f"http://{h}:{p}"


def serve_until_interrupted(server: ThreadingHTTPServer) -> None:
    """Serve until Ctrl-C, then close the socket (the CLI and serve_report alike)."""
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def serve_report(site_dir: Path, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serve ``site_dir`` until interrupted (Ctrl-C)."""
    serve_until_interrupted(make_server(site_dir, host, port))


# ---------------------------------------------------------------- a whole store
class _StoreState:
    """The store, the report now served at / and where fetched reports are kept."""

    def __init__(self, store_url: str, cache_dir: Path):
        self.store_url = store_url
        self.cache_dir = Path(cache_dir)
        self.lock = threading.Lock()
        self.current: Path | None = None
        self.current_name = ""

    def open(self, campaign: str, run: str) -> None:
        """Fetch the report of ``campaign``/``run`` afresh (a rerun may have rebuilt it) and serve it at /."""
        location = report_location(self.store_url, campaign, run)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        dest = Path(tempfile.mkdtemp(prefix="report-", dir=self.cache_dir))
        try:
            site = fetch_report(location, dest)
        except BaseException:
            shutil.rmtree(dest, ignore_errors=True)
            raise
        if site != dest:  # a local store: served where it is, nothing copied
            shutil.rmtree(dest, ignore_errors=True)
        with self.lock:
            previous, self.current, self.current_name = self.current, site, f"{campaign}/{run}"
        if previous is not None and previous.is_relative_to(self.cache_dir):
            shutil.rmtree(previous, ignore_errors=True)


class _StoreHandler(_Handler):
    state: _StoreState

    def translate_path(self, path: str) -> str:
        self.directory = str(self.state.current or self.state.cache_dir)
        return super().translate_path(path)

    def _send_html(self, status: HTTPStatus, body: str) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _index(self, status: HTTPStatus = HTTPStatus.OK, message: str = "") -> None:
        try:
            reports = list_reports(self.state.store_url)
            items = (
                "".join(
                    f'<li><a href="{html.escape(quote(r.path))}">{html.escape(r.campaign)} / '
                    f"{html.escape(r.run)}</a></li>"
                    for r in reports
                )
                or "<li>none yet</li>"
            )
        except (StoreError, ReportError) as exc:
            items = f"<li>cannot list the store: {html.escape(str(exc))}</li>"
        note = f"<p><strong>{html.escape(message)}</strong></p>" if message else ""
        self._send_html(
            status,
            f"<!doctype html><title>pvbench reports</title><h1>pvbench reports in "
            f"{html.escape(self.state.store_url)}</h1>{note}<ul>{items}</ul>"
            "<p>Open one with /open/&lt;campaign&gt;/&lt;run&gt; (run <code>all</code>: "
            "the campaign's report).</p>",
        )

    def _route(self) -> bool:
        """Handle pvbench's own paths; False: serve a file of the current report."""
        path = unquote(urlsplit(self.path).path)
        parts = [p for p in path.split("/") if p]
        if parts[:1] == ["open"]:
            if len(parts) != 3:
                self._index(HTTPStatus.NOT_FOUND, f"{path}: use /open/<campaign>/<run>")
                return True
            try:
                self.state.open(parts[1], parts[2])
            except (StoreError, ReportError, ValueError) as exc:
                self._index(HTTPStatus.NOT_FOUND, str(exc))
                return True
            self.send_response(HTTPStatus.FOUND)
            self.send_header("Location", "/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return True
        if parts[:1] == ["_pvbench"] or self.state.current is None:
            if parts in ([], ["index.html"], ["_pvbench"]):
                self._index()
            else:
                self._index(HTTPStatus.NOT_FOUND, "no report open yet")
            return True
        return False

    def do_GET(self) -> None:
        if not self._route():
            super().do_GET()

    def do_HEAD(self) -> None:
        if not self._route():
            super().do_HEAD()


def make_store_server(
    store_url: str,
    cache_dir: Path,
    host: str = "127.0.0.1",
    port: int = 8000,
    campaign: str | None = None,
    run: str | None = None,
) -> ThreadingHTTPServer:
    """An HTTP server (not started) for the reports of a store; with ``campaign``, that report is open at /.

    ``/open/<campaign>/<run>`` switches to another report, ``/_pvbench`` lists the stored ones.
    """
    state = _StoreState(str(store_url).strip().rstrip("/"), cache_dir)
    if campaign is not None:
        state.open(campaign, run or "all")
    handler = type("StoreHandler", (_StoreHandler,), {"state": state})
    server = ThreadingHTTPServer((host, port), functools.partial(handler, directory=str(cache_dir)))
    server.daemon_threads = True
    return server
