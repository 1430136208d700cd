"""Many small objects read over HTTP at once, with libcurl's multi interface (pycurl).

Why not the minio SDK in threads: compacting a run reads its ~1,000 result documents of ~2 KB
each. Through the SDK (urllib3) every GET costs ~0.4 ms of Python, under the GIL, so sixteen
threads read no faster than one core runs Python: 1,000 GETs took 0.52 s on the bench machine,
0.44 s of it the client's CPU. libcurl makes the same requests in C, on one thread and sixteen
connections: 0.25 s, 0.09 s of CPU, and the GIL is free meanwhile (DuckDB writing the previous
run's compact, SciPy importing). pvbench_lab.bench_multi_get prints both, side by side.

How many at once: a GET of a small document is mostly its round trip, so once the store is a few
milliseconds away the number in flight sets the pace: S3Store reads with 64 connections
(s3.S3_CONNECTIONS), kept open from one call to the next (Connections);
pvbench_lab.bench_s3_latency prints 16, 64 and 128 side by side behind a proxy that adds latency.

The SDK still signs every request (S3Store gives presigned URLs: SigV4, computed locally) and
makes every other call; a request that fails here is read again through the SDK, which retries
and says what went wrong in S3's words.
"""

from __future__ import annotations

import io
import os
import ssl
from dataclasses import dataclass
from typing import Iterable, Iterator


@dataclass(frozen=True)
class Response:
    """One URL's answer: the HTTP status and body, or (status None) what stopped the transfer."""

    status: int | None
    body: bytes = b""
    error: str | None = None


def available() -> bool:
    """Whether pycurl imports (a wheel for this platform was installed)."""
    try:
        import pycurl  # noqa: F401
    except ImportError:
        return False
    return True


def _ca_options() -> dict[str, str]:
    """Where libcurl finds the CA certificates: where Python's ssl finds them, which is what the
    SDK's urllib3 verifies with (SSL_CERT_FILE / SSL_CERT_DIR first), not the CA path compiled
    into the wheel's own libcurl, which need not exist on this system."""
    paths = ssl.get_default_verify_paths()
    found = {}
    cafile = os.environ.get(paths.openssl_cafile_env) or paths.openssl_cafile
    capath = os.environ.get(paths.openssl_capath_env) or paths.openssl_capath
    if cafile and os.path.isfile(cafile):
        found["CAINFO"] = cafile
    if capath and os.path.isdir(capath):
        found["CAPATH"] = capath
    return found


# URLs get_all fetches at most beyond the one answered next: what it holds stays bounded, and more
# connections than this would stay idle (S3Store's PVBENCH_S3_CONNECTIONS is capped at it).
AHEAD = 256


class Connections:
    """Open connections (and TLS sessions, DNS answers) that every get_all given it reuses, from
    any thread: a libcurl share. Without it each call opened its own: a full aggregation calls
    get_all once per run, so 64 connections (TLS handshakes, with https) were made again for
    every 1,000 documents."""

    def __init__(self) -> None:
        import pycurl

        self.handle = pycurl.CurlShare()
        for data in (pycurl.LOCK_DATA_CONNECT, pycurl.LOCK_DATA_SSL_SESSION, pycurl.LOCK_DATA_DNS):
            self.handle.setopt(pycurl.SH_SHARE, data)
        self.made = 0  # connections opened through it (libcurl's NUM_CONNECTS of each transfer)


def get_all(
    urls: Iterable[str],
    connections: int = 16,
    ahead: int = AHEAD,
    connect_timeout_s: int = 5,
    stalled_s: int = 120,
    share: Connections | None = None,
) -> Iterator[Response]:
    """Each URL's response, in the order the URLs come: up to ``connections`` transfers at once,
    at most ``ahead`` URLs fetched beyond the one answered next (what is held stays bounded
    however many URLs there are). A transfer that moves no byte for ``stalled_s`` is given up.
    ``share``: the open connections kept from one call to the next (Connections)."""
    import pycurl

    pending = iter(urls)
    multi = pycurl.CurlMulti()
    ca = _ca_options()
    handles = []
    for _ in range(max(1, connections)):
        curl = pycurl.Curl()
        curl.setopt(pycurl.NOSIGNAL, 1)
        curl.setopt(pycurl.CONNECTTIMEOUT, connect_timeout_s)
        curl.setopt(pycurl.LOW_SPEED_LIMIT, 1)
        curl.setopt(pycurl.LOW_SPEED_TIME, stalled_s)
        curl.setopt(pycurl.PROXY, "")  # as the SDK: no proxy from http_proxy & co.
        if share is not None:
            curl.setopt(pycurl.SHARE, share.handle)
        for option, value in ca.items():
            curl.setopt(getattr(pycurl, option), value)
        handles.append(curl)
    idle, busy = list(handles), set()
    done: dict[int, Response] = {}
    started = answered = 0
    exhausted = False
    try:
        while True:
            while idle and not exhausted and started < answered + ahead:
                url = next(pending, None)
                if url is None:
                    exhausted = True
                    break
                curl = idle.pop()
                curl.index, curl.body = started, io.BytesIO()
                curl.setopt(pycurl.URL, url)
                curl.setopt(pycurl.WRITEDATA, curl.body)
                multi.add_handle(curl)
                busy.add(curl)
                started += 1
            while multi.perform()[0] == pycurl.E_CALL_MULTI_PERFORM:
                pass
            while True:
                queued, ok, failed = multi.info_read()
                for curl in ok:
                    done[curl.index] = Response(curl.getinfo(pycurl.RESPONSE_CODE), curl.body.getvalue())
                    if share is not None:
                        share.made += curl.getinfo(pycurl.NUM_CONNECTS)
                for curl, _, message in failed:
                    done[curl.index] = Response(None, error=message)
                for curl in [*ok, *(f[0] for f in failed)]:
                    multi.remove_handle(curl)
                    busy.discard(curl)
                    curl.body = None
                    idle.append(curl)
                if not queued:
                    break
            while answered in done:
                yield done.pop(answered)
                answered += 1
            if exhausted and answered == started:
                return
            if busy:
                multi.select(1.0)
    finally:  # also when the caller stops reading early: transfers under way are dropped
        for curl in busy:
            multi.remove_handle(curl)
        for curl in handles:
            curl.close()
        multi.close()
