"""S3/MinIO as the store: what pods on a cluster, and machines that share results, write to."""

from __future__ import annotations

import io
import itertools
import logging
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from email.utils import parsedate_to_datetime
from typing import Iterable, Iterator
from urllib.parse import unquote_plus
from xml.etree import ElementTree

from pvbench.store import multi_get
from pvbench.store.base import StoredObject, StoreError, _bytes_or_error

log = logging.getLogger("pvbench.store")

# Keys a ListObjectsV2 request asks for (S3's and MinIO's most).
LIST_PAGE = 1000
# Objects an S3 store reads at once through the SDK's threads (S3Store.get_many's fallback; the
# uploads of put_many).
S3_READERS = 16
# GETs in flight at once when S3Store.get_many reads documents through libcurl (one connection
# each; $PVBENCH_S3_CONNECTIONS overrides). One GET of a ~2 KB document is mostly waiting: with a
# store 30 ms away, 16 connections read a run's 1,000 documents in 2.7 s and 64 in 0.7 s, and on
# loopback the two are alike (pvbench_lab.bench_s3_latency prints them side by side).
S3_CONNECTIONS = 64


# host or [ipv6], optional :port; nothing else (no user:password@, no path)
_ENDPOINT = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)(:[0-9]{1,5})?$")
# S3 answers that retrying cannot change: fail at once with the server's word for it.
_PERMANENT = {
    "NoSuchKey",
    "NoSuchBucket",
    "AccessDenied",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "InvalidBucketName",
    "AllAccessDisabled",
    "AccountProblem",
    "InvalidToken",
    "ExpiredToken",
}


@dataclass
class S3Settings:
    """Where the S3 endpoint is and who we are; read from the environment.

    The variable names are the ones Argo artifact repositories and most S3 tools
    already use, so a pod gets them from the same Secret as the artifact driver.
    """

    endpoint: str
    access_key: str
    secret_key: str
    secure: bool
    region: str | None = None
    connections: int = S3_CONNECTIONS  # get_many's GETs at once (libcurl)

    @classmethod
    def from_env(cls) -> "S3Settings":
        endpoint = os.environ.get("PVBENCH_S3_ENDPOINT") or os.environ.get("S3_ENDPOINT")
        access = os.environ.get("AWS_ACCESS_KEY_ID")
        secret = os.environ.get("AWS_SECRET_ACCESS_KEY")
        missing = [
            name
            for name, value in [
                ("PVBENCH_S3_ENDPOINT", endpoint),
                ("AWS_ACCESS_KEY_ID", access),
                ("AWS_SECRET_ACCESS_KEY", secret),
            ]
            if not value
        ]
        if missing:
            raise StoreError(f"an s3:// store needs the environment variables {', '.join(missing)}")
        endpoint = endpoint.strip().removeprefix("http://").removeprefix("https://").rstrip("/")
        if not _ENDPOINT.match(endpoint):
            shown = "…@" + endpoint.rsplit("@", 1)[1] if "@" in endpoint else endpoint
            raise StoreError(
                f"PVBENCH_S3_ENDPOINT {shown!r} is not host:port (no user:password@, no path; "
                "credentials go in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)"
            )
        secure = os.environ.get("PVBENCH_S3_SECURE", "false").lower() in {"1", "true", "yes"}
        return cls(endpoint, access, secret, secure, os.environ.get("AWS_REGION"), _connections())


def _connections() -> int:
    """$PVBENCH_S3_CONNECTIONS (GETs at once, 1 to multi_get.AHEAD: get_all fetches no further
    ahead, so more would stay idle), else S3_CONNECTIONS."""
    given = os.environ.get("PVBENCH_S3_CONNECTIONS", "").strip()
    if not given:
        return S3_CONNECTIONS
    if not given.isdigit() or not 1 <= int(given) <= multi_get.AHEAD:
        raise StoreError(f"PVBENCH_S3_CONNECTIONS {given!r} is not a whole number from 1 to {multi_get.AHEAD}")
    return int(given)


@dataclass
class S3Store:
    bucket: str
    prefix: str
    settings: S3Settings
    attempts: int = 4
    backoff_s: float = 0.5
    _client: object = field(default=None, repr=False)
    _multi_get: bool = field(default=True, repr=False)  # off once libcurl failed (get_many)
    _connections: object = field(default=None, repr=False)  # get_many's open connections (multi_get.Connections)
    _fast_list: bool = field(default=True, repr=False)  # off once the SDK's request call changed (list_objects)

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}".rstrip("/")

    @property
    def client(self):
        if self._client is None:
            import urllib3
            from minio import Minio

            # Retries are ours (_retry, with backoff and a clear final error), not urllib3's. A
            # connection kept for each thread that may use the client at once (get_many's through
            # the SDK, a listing beside the run's): urllib3 keeps one by default, and closed every
            # other after its request ("Connection pool is full, discarding connection").
            http = urllib3.PoolManager(
                timeout=urllib3.Timeout(connect=5, read=120),
                retries=urllib3.Retry(total=0, raise_on_status=False),
                maxsize=S3_READERS,
            )
            self._client = Minio(
                http_client=http,
                endpoint=self.settings.endpoint,
                access_key=self.settings.access_key,
                secret_key=self.settings.secret_key,
                secure=self.settings.secure,
                region=self.settings.region,
            )
        return self._client

    def _key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def _folder(self, prefix: str) -> str:
        """The listing's S3 prefix: ``prefix`` as a folder, as a local store lists it. S3 matches
        prefixes character by character, so campaign ``c`` also listed campaign ``c2``'s results
        (and a full aggregation of ``c`` took them in), and run ``r1`` run ``r10``'s."""
        key = self._key(prefix)
        return key if not key or key.endswith("/") else key + "/"

    def _retry(self, what: str, action):
        """Retry transient failures with exponential backoff, then raise StoreError."""
        from minio.error import S3Error

        last: Exception | None = None
        for attempt in range(self.attempts):
            try:
                return action()
            except S3Error as exc:
                if exc.code in _PERMANENT:
                    raise StoreError(f"{what}: {exc.code}: {exc.message}") from exc
                last = exc
            except (ValueError, TypeError) as exc:  # a bad setting (endpoint, bucket name): not transient
                raise StoreError(f"{what}: {exc}") from exc
            except _SdkChanged:  # not a failure of the store: the caller takes the SDK's way
                raise
            except Exception as exc:  # connection refused, timeouts, 5xx after urllib3 retries
                last = exc
            if attempt + 1 < self.attempts:
                time.sleep(self.backoff_s * (2**attempt))
        raise StoreError(f"{what} failed after {self.attempts} attempts: {_short(last)}") from last

    def ensure_bucket(self) -> None:
        def make():
            if not self.client.bucket_exists(self.bucket):
                self.client.make_bucket(self.bucket)

        self._retry(f"create bucket {self.bucket}", make)

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/json") -> None:
        self._retry(
            f"upload {self.url}/{key}",
            lambda: self.client.put_object(
                self.bucket, self._key(key), io.BytesIO(data), len(data), content_type=content_type
            ),
        )

    def put_many(self, items: Iterable[tuple[str, bytes, str]]) -> None:
        # each PUT mostly waits on the network: one after the other, an aggregation's ~30 tables
        # and its run's compact were a visible part of adding a run to a campaign on MinIO
        items = list(items)
        with ThreadPoolExecutor(max(1, min(S3_READERS, len(items)))) as pool:
            puts = [pool.submit(self.put_bytes, *item) for item in items]
        for put in puts:
            put.result()

    def get_bytes(self, key: str) -> bytes:
        def get():
            response = self.client.get_object(self.bucket, self._key(key))
            try:
                return response.read()
            finally:
                response.close()
                response.release_conn()

        return self._retry(f"download {self.url}/{key}", get)

    def get_many(self, keys: Iterable[str]) -> Iterator[tuple[str, bytes | Exception]]:
        """Up to ``settings.connections`` GETs at a time through libcurl (pvbench.store.multi_get:
        ~5× less CPU per GET than the SDK), on URLs the SDK presigns. An object that is not there is asked for
        again through the SDK, which says so in S3's words. Any other failure (a status but 200
        or 404, a refused certificate, a dropped connection) sends this and every later read of
        the store through the SDK, S3_READERS threads, with its retries; a warning says why, once."""
        keys = list(keys)
        done = 0
        if self._multi_get and multi_get.available():
            if self._connections is None:  # kept from one call to the next (a full aggregation reads run by run)
                self._connections = multi_get.Connections()
            connections = max(1, min(self.settings.connections, len(keys)))
            responses = multi_get.get_all(map(self._presigned, keys), connections, share=self._connections)
            try:
                for key, response in zip(keys, responses):
                    if response.status == 200:
                        yield key, response.body
                    elif response.status == 404:
                        yield key, _bytes_or_error(self, key)
                    else:
                        raise StoreError(response.error or f"HTTP status {response.status}")
                    done += 1
            except Exception as exc:
                self._multi_get = False
                log.warning("reading %s with libcurl failed (%s): reading through the S3 SDK instead", self.url, exc)
            finally:
                responses.close()
        if done < len(keys):
            with ThreadPoolExecutor(S3_READERS) as pool:
                yield from pool.map(lambda key: (key, _bytes_or_error(self, key)), keys[done:])

    def _presigned(self, key: str) -> str:
        return self.client.presigned_get_object(self.bucket, self._key(key), expires=timedelta(hours=1))

    def exists(self, key: str) -> bool:
        from minio.error import S3Error

        try:
            self.client.stat_object(self.bucket, self._key(key))
            return True
        except S3Error as exc:
            if exc.code in {"NoSuchKey", "NoSuchObject", "NoSuchBucket"}:
                return False
            raise StoreError(f"stat {self.url}/{key}: {exc}") from exc

    def delete(self, key: str) -> None:
        self._retry(f"remove {self.url}/{key}", lambda: self.client.remove_object(self.bucket, self._key(key)))

    def put_if(self, key: str, data: bytes, *, etag: str | None = None) -> str | None:
        """Write ``key`` only if it is absent (``etag`` None) or still holds the content of that
        ETag: S3's conditional writes (``If-None-Match: *``, ``If-Match``), which AWS S3 and MinIO
        honour. Returns the new ETag, or None when the condition failed (412): another writer was
        first. What store.locks builds its lease on; the SDK's put_object takes no such header."""
        from minio.error import S3Error

        condition = {"If-None-Match": "*"} if etag is None else {"If-Match": etag}
        headers = {"Content-Type": "application/json", **condition}

        def put() -> str | None:
            try:
                response = self.client._execute("PUT", self.bucket, self._key(key), body=data, headers=headers)
            except S3Error as exc:
                if exc.code == "PreconditionFailed":
                    return None
                raise
            return response.headers.get("ETag")

        return self._retry(f"upload {self.url}/{key}", put)

    def get_versioned(self, key: str) -> tuple[bytes, str, float] | None:
        """``key``'s content, its ETag, and the seconds since it was last written, by the server's
        clock (its ``Date`` less the object's ``Last-Modified``: no two machines' clocks compared);
        None when it is absent."""
        from minio.error import S3Error

        def get() -> tuple[bytes, str, float] | None:
            try:
                response = self.client._execute("GET", self.bucket, self._key(key))
            except S3Error as exc:
                if exc.code in {"NoSuchKey", "NoSuchObject"}:
                    return None
                raise
            written = parsedate_to_datetime(response.headers["Last-Modified"])
            now = parsedate_to_datetime(response.headers.get("Date") or response.headers["Last-Modified"])
            return response.data, response.headers.get("ETag", ""), (now - written).total_seconds()

        return self._retry(f"download {self.url}/{key}", get)

    def list_keys(self, prefix: str) -> Iterator[str]:
        return (obj.key for obj in self.list_objects(prefix))

    def list_objects(self, prefix: str) -> Iterator[StoredObject]:
        """Streamed page by page (LIST_PAGE keys a request), each page retried on its own, so a
        campaign of 100,000 keys is never held whole and a page that fails loses nothing.

        A page is one ListObjectsV2 request the SDK signs and sends, and whose XML ElementTree's
        C parser reads: the SDK's own listing made a Python object of every key, with its date
        parsed, which cost 8.6 s of CPU for 100,000 keys where this costs 1.7
        (pvbench_lab.bench_s3_listing prints both). If the SDK's request call is not what this
        expects (it is not public API; minio is pinned), the SDK's listing takes over, once
        and for good, with a warning."""
        strip = len(self.prefix) + 1 if self.prefix else 0
        token: str | None = None  # the next page's continuation token
        last: str | None = None  # the last key listed (where the SDK's listing would go on)
        while self._fast_list:
            try:
                keys, token = self._retry(f"list {self.url}/{prefix}", lambda: self._list_page(prefix, token))
            except _SdkChanged as exc:
                self._fast_list = False
                log.warning(
                    "listing %s: the S3 SDK's request call changed (%s): listing through the SDK instead",
                    self.url,
                    exc.__cause__,
                )
                break
            for key, size, etag in keys:
                last = key
                yield StoredObject(key[strip:], size, etag)
            if token is None:
                return
        yield from self.sdk_list_objects(prefix, last, strip)

    def _list_page(self, prefix: str, token: str | None) -> tuple[list[tuple[str, int, str]], str | None]:
        """One page of the listing: (key, size, ETag) of each object, and the token of the next
        page (None on the last). S3's errors come as the SDK raises them (S3Error), for _retry."""
        query = {"list-type": "2", "prefix": self._folder(prefix), "max-keys": str(LIST_PAGE), "encoding-type": "url"}
        if token is not None:
            query["continuation-token"] = token
        try:
            execute = self.client._execute
        except AttributeError as exc:
            raise _SdkChanged() from exc
        try:
            body = execute("GET", self.bucket, query_params=query).data
        except TypeError as exc:  # another signature
            raise _SdkChanged() from exc
        return _parse_list_page(body)

    def sdk_list_objects(self, prefix: str, last: str | None, strip: int) -> Iterator[StoredObject]:
        """The SDK's listing, from after ``last``; a page that fails is asked for again from the
        last key received. list_objects falls back to it; public for the benchmark that compares
        the two (pvbench_lab.bench_s3_listing) and the test that checks they agree."""
        while True:
            pages = self._retry(
                f"list {self.url}/{prefix}",
                lambda: _first_and_rest(
                    self.client.list_objects(self.bucket, prefix=self._folder(prefix), recursive=True, start_after=last)
                ),
            )
            first, rest = pages
            if first is None:
                return
            try:
                for obj in itertools.chain([first], rest):
                    last = obj.object_name
                    yield StoredObject(obj.object_name[strip:], int(obj.size or 0), (obj.etag or "").strip('"'))
                return
            except Exception as exc:  # a later page failed: go on after the last key seen
                from minio.error import S3Error

                if isinstance(exc, S3Error) and exc.code in _PERMANENT:
                    raise StoreError(f"list {self.url}/{prefix}: {exc.code}: {exc.message}") from exc
                log.warning(
                    "listing %s/%s broke off after %s (%s); going on from there", self.url, prefix, last, _short(exc)
                )

    def duckdb_path(self, key_or_glob: str) -> str:
        return f"s3://{self.bucket}/{self._key(key_or_glob)}"

    def check(self, attempts: int = 2) -> None:
        """Before anything runs: the endpoint answers, the credentials work, the bucket exists and
        takes an object (written and removed again). Few retries: a wrong setting fails in seconds."""
        saved = self.attempts, self.backoff_s
        self.attempts, self.backoff_s = attempts, min(self.backoff_s, 0.5)
        where = f"store {self.url} (endpoint {self.settings.endpoint})"
        try:
            if not self._retry(f"{where}: reach", lambda: self.client.bucket_exists(self.bucket)):
                raise StoreError(
                    f"{where}: bucket {self.bucket!r} does not exist; create it first "
                    f"(e.g. `mc mb ALIAS/{self.bucket}`)"
                )
            probe = f".pvbench-check.{os.getpid()}"
            self._retry(
                f"{where}: write",
                lambda: self.client.put_object(
                    self.bucket, self._key(probe), io.BytesIO(b"ok"), 2, content_type="text/plain"
                ),
            )
            self._retry(
                f"{where}: remove check object", lambda: self.client.remove_object(self.bucket, self._key(probe))
            )
        finally:
            self.attempts, self.backoff_s = saved


class _SdkChanged(Exception):
    """The SDK's request call is not the one S3Store._list_page was written against (its cause says how)."""


def _parse_list_page(body: bytes) -> tuple[list[tuple[str, int, str]], str | None]:
    """(key, size, ETag) of each object of a ListObjectsV2 answer (keys URL-decoded: it was asked
    with encoding-type=url, so that any key survives XML), and the next page's token or None."""
    root = ElementTree.fromstring(body)
    ns = root.tag[: root.tag.index("}") + 1] if root.tag.startswith("{") else ""
    key_tag, size_tag, etag_tag = ns + "Key", ns + "Size", ns + "ETag"
    keys = [
        (
            unquote_plus(item.findtext(key_tag)),
            int(item.findtext(size_tag) or 0),
            (item.findtext(etag_tag) or "").strip('"'),
        )
        for item in root.iterfind(ns + "Contents")
    ]
    truncated = (root.findtext(ns + "IsTruncated") or "").lower() == "true"
    token = root.findtext(ns + "NextContinuationToken") if truncated else None
    if truncated and not token:  # a truncated page must say where the next one starts
        raise StoreError("the S3 listing was cut short without a continuation token")
    return keys, token


def _first_and_rest(iterator):
    """(first item or None, the iterator): the first page's request happens here, under _retry."""
    iterator = iter(iterator)
    return next(iterator, None), iterator


def _short(exc: BaseException | None) -> str:
    """The cause of a connection failure in a few words (urllib3 nests it deep in a long repr)."""
    reason = getattr(exc, "reason", None) or exc
    text = str(reason)
    found = re.search(r"\[Errno -?\d+\] [^'\")]+|timed out|Connection refused|Name or service not known", text)
    return found.group(0) if found else " ".join(text.split())[:200]
