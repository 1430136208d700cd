"""Serve a built report over HTTP (its asset paths are absolute, so file:// does not work)."""

from __future__ import annotations

import functools
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from pvbench.report.build import ReportError, _is_site


class _Handler(SimpleHTTPRequestHandler):
    extensions_map = {
        **SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
        ".parquet": "application/vnd.apache.parquet",
        ".arrow": "application/vnd.apache.arrow.stream",
        ".webmanifest": "application/manifest+json",
    }

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


def serve_report(site_dir: Path, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serve ``site_dir`` until interrupted (Ctrl-C)."""
    server = make_server(site_dir, host, port)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
