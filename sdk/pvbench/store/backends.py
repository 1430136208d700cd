"""Store backends: a local directory (the embedded default) and S3/MinIO.

Both speak the same small interface so that local mode, the pod step, the
importer and the analytics runner never care where results live.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import logging
import os
import re
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Iterable, Iterator, Protocol
from urllib.parse import unquote_plus, urlparse
from xml.etree import ElementTree

from pvbench.store import multi_get

log = logging.getLogger("pvbench.store")


# Threads that walk a local store's folders at once, once a folder's walk had to read the disk
# (more than DISK_READ_BLOCKS blocks of 512 bytes: a cold folder of 1,000 results reads 10,000s,
# a cached one now and then a few dozen; see LocalStore.list_objects).
LIST_THREADS = 4
DISK_READ_BLOCKS = 1024
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


class StoreError(RuntimeError):
    """The store could not be reached or refused an operation."""


# host or [ipv6], optional :port; nothing else (no user:password@, no path)
_ENDPOINT = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)(:[0-9]{1,5})?$")
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
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


@dataclass(frozen=True)
class StoredObject:
    """One listed object: its key, size and a version that changes whenever its content does
    (the S3 ETag; a local file's mtime in ns). Aggregation compares these with what it read before."""

    key: str
    size: int
    version: str


class Store(Protocol):
    url: str

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/json") -> None: ...

    def put_many(self, items: Iterable[tuple[str, bytes, str]]) -> None:
        """put_bytes of each (key, data, content type), in no set order (S3: at once); raises the
        first error once every write has ended."""
        ...

    def get_bytes(self, key: str) -> bytes: ...

    def get_many(self, keys: Iterable[str]) -> Iterator[tuple[str, bytes | Exception]]:
        """Each key with its bytes, or the error reading it, in the order given (S3: the reads
        overlap); one object that cannot be read does not stop the others."""
        ...

    def exists(self, key: str) -> bool: ...

    def delete(self, key: str) -> None:
        """Remove the object; no error if it is not there."""
        ...

    def list_keys(self, prefix: str) -> Iterator[str]: ...

    def list_objects(self, prefix: str) -> Iterator[StoredObject]:
        """Every object under prefix, streamed in key order (S3: page by page). The prefix is a
        folder: ``results/campaign=c`` lists ``results/campaign=c/…``, never ``…campaign=c2/…``."""
        ...

    def check(self) -> None:
        """Raise StoreError unless the store is reachable and writable (called before any cell runs)."""
        ...

    def duckdb_path(self, key_or_glob: str) -> str:
        """The same key as a path DuckDB can read (a file path or an s3:// URL)."""
        ...


@dataclass
class LocalStore:
    root: Path

    def __post_init__(self) -> None:  # a str root too (scripts): keys are joined to it with /
        self.root = Path(self.root)

    @property
    def url(self) -> str:
        return str(self.root)

    def _path(self, key: str) -> Path:
        return self.root / key

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/json") -> None:
        path = self._path(key)
        # Write-then-rename: a reader never sees half a result, a rerun of the same
        # cell replaces it atomically (idempotent by key). A failed write (full disk,
        # read-only, permissions) leaves neither the temporary file nor a partial result,
        # and raises one StoreError naming the file.
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(data)
            tmp.replace(path)
        except OSError as exc:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass
            raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from exc

    def put_many(self, items: Iterable[tuple[str, bytes, str]]) -> None:
        failed: StoreError | None = None
        for key, data, content_type in items:
            try:
                self.put_bytes(key, data, content_type)
            except StoreError as exc:
                failed = failed or exc
        if failed is not None:
            raise failed

    def get_bytes(self, key: str) -> bytes:
        # a string join, not self._path: a Path built per document, 100,000 times a campaign
        return _read_file(os.path.join(self.root, key))

    def get_many(self, keys: Iterable[str]) -> Iterator[tuple[str, bytes | Exception]]:
        return ((key, _bytes_or_error(self, key)) for key in keys)

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def delete(self, key: str) -> None:
        """Remove the file, then its folders up to the store's root while they are empty (an S3
        prefix has no folders to leave behind; a local store would keep one per removed snapshot
        generation)."""
        path = self._path(key)
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot remove {path}: {exc.strerror or exc}") from exc
        for folder in path.parents:
            if folder == self.root or self.root not in folder.parents:
                break
            try:
                folder.rmdir()
            except OSError:  # not empty (or gone): the folders above are not either
                break

    def list_keys(self, prefix: str) -> Iterator[str]:
        return (obj.key for obj in self.list_objects(prefix))

    def list_objects(self, prefix: str) -> Iterator[StoredObject]:
        """Every file under the prefix, in key order (a folder's files, then its subfolders').

        The folders of a campaign's runs are walked one after the other in this thread while their
        directories are in the page cache; once a walk had to read the disk (this thread's block
        reads, getrusage; where that is not known, always), the rest are walked in LIST_THREADS
        threads, as reading a directory and a stat release the GIL. Cached, threads only contend
        for the GIL; cold, they overlap the disk's waits (pvbench_lab.bench_listing prints both).
        Each run's subtree is a list; the whole listing is never held at once beyond the runs
        walked ahead."""
        base = self._path(prefix)
        if not base.is_dir():
            if base.is_file():
                st = base.stat()
                yield StoredObject(prefix, st.st_size, str(st.st_mtime_ns))
            return
        folder = str(base)
        while True:  # down the single-child folders (results/ → campaign=…) to where the tree fans out
            files, folders = self._scan(folder)
            yield from files
            if len(folders) != 1:
                break
            folder = folders[0]
        if len(folders) <= 1:
            return
        rest = iter(folders)
        for folder in rest:
            before = _disk_reads()
            objects = self._walk(folder)
            after = _disk_reads()
            yield from objects
            if before is None or after is None or after - before > DISK_READ_BLOCKS:
                break
        else:
            return
        with ThreadPoolExecutor(LIST_THREADS) as pool:
            for objects in pool.map(self._walk, rest):
                yield from objects

    def _scan(self, folder: str) -> tuple[list[StoredObject], list[str]]:
        """(the folder's files with their size and version, its subfolders), each in name order."""
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except FileNotFoundError:
            return [], []
        root = len(str(self.root)) + 1
        files, folders = [], []
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False):
                folders.append(entry.path)
            elif entry.is_file():
                st = entry.stat()
                files.append(StoredObject(entry.path[root:].replace(os.sep, "/"), st.st_size, str(st.st_mtime_ns)))
        return files, folders

    def _walk(self, folder: str) -> list[StoredObject]:
        """Everything under one folder, in key order (depth first)."""
        out: list[StoredObject] = []
        stack = [folder]
        while stack:
            files, folders = self._scan(stack.pop())
            out.extend(files)
            stack.extend(reversed(folders))
        return out

    def duckdb_path(self, key_or_glob: str) -> str:
        return str(self.root / key_or_glob)

    def check(self) -> None:
        """Before anything runs: the directory exists (or can be made) and takes a file."""
        if self.root.exists() and not self.root.is_dir():
            raise StoreError(f"store {self.root} is not a directory")
        probe = f"results/.pvbench-check.{os.getpid()}"  # where results go: the directory results/ must take files
        made = [d for d in [self.root / "results", *(self.root / "results").parents] if not d.exists()]
        try:
            self.put_bytes(probe, b"ok")
        except StoreError as exc:
            raise StoreError(f"store {self.root} is not writable: {exc}") from exc
        finally:  # leave no trace: the probe goes, and so do the directories made for it
            with contextlib.suppress(OSError):
                (self.root / probe).unlink(missing_ok=True)
            for directory in made:
                with contextlib.suppress(OSError):
                    directory.rmdir()


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


def _read_file(path: str) -> bytes:
    """The whole file: os.read until it returns nothing (a file is read to its end even if it
    grew since it was listed). Not Path.read_bytes: its buffered file object makes 7 system calls
    a file (fstat twice, ioctl, lseek) where open, read to the end and close are 4, and a
    compaction reads every document of a campaign."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        chunks = []
        while chunk := os.read(fd, READ_CHUNK):
            chunks.append(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    finally:
        os.close(fd)


# os.read's buffer: a result document is ~2 KB, so one read and the one that finds the end
READ_CHUNK = 64 * 1024


def _bytes_or_error(store: Store, key: str) -> bytes | Exception:
    """The key's bytes, or the error reading them (get_many: one unreadable object stops nothing)."""
    try:
        return store.get_bytes(key)
    except Exception as exc:
        return exc


def _disk_reads() -> int | None:
    """Blocks this thread has read from storage (not from the page cache), where the OS says."""
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_THREAD).ru_inblock
    except (ImportError, AttributeError, ValueError, OSError):  # no RUSAGE_THREAD (not Linux)
        return None


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


def open_store(url: str | os.PathLike) -> Store:
    """``s3://bucket[/prefix]`` → S3Store (endpoint/credentials from env); anything else → LocalStore."""
    text = str(url).strip()
    if not text:
        raise StoreError("the store URL is empty: use a directory or s3://bucket/prefix")
    if text.lower().startswith("s3://"):
        parsed = urlparse(text)
        if not parsed.netloc:
            raise StoreError(f"store URL {text!r} names no bucket: use s3://bucket/prefix")
        if not _BUCKET.match(parsed.netloc):
            raise StoreError(
                f"store URL {text!r}: {parsed.netloc!r} is not an S3 bucket name "
                "(3-63 lowercase letters, digits, '.' and '-')"
            )
        return S3Store(parsed.netloc, parsed.path.strip("/"), S3Settings.from_env())
    if text.startswith("file://"):
        text = urlparse(text).path
    if "://" in text:
        raise StoreError(f"unsupported store URL {text!r}: use a directory or s3://bucket/prefix")
    return LocalStore(Path(text).expanduser().resolve())
