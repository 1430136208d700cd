"""What both store backends share: the interface local mode, the pod step, the importer and the
analytics runner speak, so that they never care where results live."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator, Protocol


class StoreError(RuntimeError):
    """The store could not be reached or refused an operation."""


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


def _bytes_or_error(store: Store, key: str) -> bytes | Exception:
    """The key's bytes, or the error reading them (get_many: one unreadable object stops nothing)."""
    try:
        return store.get_bytes(key)
    except Exception as exc:
        return exc
