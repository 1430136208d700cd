"""Store a cell's result so that it is never lost.

Order of events: the result is first written to a local spool directory (same key
layout), then uploaded with retries. Only after a successful upload is the spool copy
removed; otherwise it stays on disk, the failure is reported, and ``pvbench store flush``
uploads it later. Uploading the raw files (fio's JSON, ``fio.json``, and its interval logs,
``fio-logs.tar.gz``) before result.json means a result.json in the store always has its raw
data beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pvbench.results.schema import ResultDocument
from pvbench.store import LocalStore, Store
from pvbench.store.base import StoreError
from pvbench.store.layout import RAW_FILES, RESULT_FILE


@dataclass(frozen=True)
class CellRaw:
    """What a cell's run leaves besides its result document: fio's raw JSON (every client's, for a
    multi-client cell: pvbench.fio.merge.clients_raw) and its interval logs as one gzipped tar
    (pvbench.fio.series.logs_archive; None if fio wrote none)."""

    fio_json: str
    fio_logs: bytes | None = None


@dataclass
class Published:
    key: str
    stored: bool
    spooled_at: Path | None = None
    error: str | None = None


def publish(doc: ResultDocument, raw: CellRaw | str | None, store: Store, spool: Path | None) -> Published:
    """Store the result and its raw files (``raw``: a cell's CellRaw, fio's JSON text alone, or none)."""
    key = doc.identity
    if isinstance(raw, str):
        raw = CellRaw(raw)
    files = []
    if raw is not None:
        files.append((key.raw_fio_key(), raw.fio_json.encode()))
        if raw.fio_logs is not None:
            files.append((key.fio_logs_key(), raw.fio_logs))
    files.append((key.result_key(), doc.to_json()))
    # A remote store is spooled first (a crash mid-upload loses nothing); a local one is
    # written directly and spooled only if that write fails. A spool that cannot take the
    # result (full disk) does not stop the upload: the result is lost only if both fail.
    spool_first = spool is not None and not isinstance(store, LocalStore)
    spool_error = None
    if spool_first:
        spool_error = _spool(spool, files)
    try:
        _write(store, files)
    except (OSError, StoreError) as exc:
        error = str(exc)
        if spool is not None and not spool_first:
            spool_error = _spool(spool, files)
        if spool is None or spool_error:
            lost = f"; not spooled either: {spool_error}" if spool_error else ""
            return Published(key.result_key(), stored=False, error=error + lost)
        return Published(key.result_key(), stored=False, spooled_at=spool / key.result_key(), error=error)
    if spool_first and not spool_error:
        _unspool(spool, files)
    return Published(key.result_key(), stored=True, error=f"not spooled: {spool_error}" if spool_error else None)


def _write(store: Store, files: list[tuple[str, bytes]]) -> None:
    for name, data in files:
        store.put_bytes(name, data)


def _spool(spool: Path, files: list[tuple[str, bytes]]) -> str | None:
    """Write the files to the spool; on failure remove what was written and return the error."""
    try:
        _write(LocalStore(spool), files)
    except (OSError, StoreError) as exc:
        _unspool(spool, files)
        return str(exc)
    return None


def _unspool(spool: Path, files: list[tuple[str, bytes]]) -> None:
    for name, _ in files:
        try:
            (spool / name).unlink(missing_ok=True)
        except OSError:
            pass


def pending(spool: Path) -> list[str]:
    """Result keys still waiting in the spool."""
    return [k for k in LocalStore(spool).list_keys("") if k.endswith("/" + RESULT_FILE)]


def flush(spool: Path, store: Store) -> tuple[list[str], list[tuple[str, str]]]:
    """Upload everything in the spool; returns (uploaded keys, [(key, error)]).

    A spool that is not a directory is an error (StoreError), not "nothing to upload".
    """
    if not spool.is_dir():
        raise StoreError(
            f"spool directory {spool} does not exist" if not spool.exists() else f"spool {spool} is not a directory"
        )
    done, failed = [], []
    local = LocalStore(spool)
    for result_key in pending(spool):
        prefix = result_key[: -len(RESULT_FILE)]
        raw_keys = [prefix + name for name in RAW_FILES if local.exists(prefix + name)]
        try:
            for raw_key in raw_keys:  # before result.json, as publish does
                store.put_bytes(raw_key, local.get_bytes(raw_key))
            store.put_bytes(result_key, local.get_bytes(result_key))
        except (OSError, StoreError) as exc:
            failed.append((result_key, str(exc)))
            continue
        for raw_key in raw_keys:
            (spool / raw_key).unlink(missing_ok=True)
        (spool / result_key).unlink()
        done.append(result_key)
    return done, failed
