"""Store a cell's result so that it is never lost.

Order of events: the result is first written to a local spool directory (same key
layout), then uploaded with retries. Only after a successful upload is the spool copy
removed; otherwise it stays on disk, the failure is reported, and ``pvbench store flush``
uploads it later. Uploading the raw fio JSON before result.json means a result.json in
the store always has its raw data beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pvbench.results.schema import ResultDocument
from pvbench.store import CellKey, LocalStore, Store
from pvbench.store.backends import StoreError
from pvbench.store.layout import RAW_FIO_FILE, RESULT_FILE


@dataclass
class Published:
    key: str
    stored: bool
    spooled_at: Path | None = None
    error: str | None = None


def key_of(doc: ResultDocument) -> CellKey:
    i = doc.identity
    return CellKey(i.campaign, i.run, i.occasion, i.storage_class, i.profile, i.workload, i.rep)


def publish(doc: ResultDocument, raw_fio: str | None, store: Store, spool: Path | None) -> Published:
    key = key_of(doc)
    files = [] if raw_fio is None else [(key.raw_fio_key(), raw_fio.encode())]
    files.append((key.result_key(), doc.to_json()))
    # A remote store is spooled first (a crash mid-upload loses nothing); a local one is
    # written directly and spooled only if that write fails.
    spool_first = spool is not None and not isinstance(store, LocalStore)
    if spool_first:
        _write(LocalStore(spool), files)
    try:
        _write(store, files)
    except (OSError, StoreError) as exc:
        if spool is not None and not spool_first:
            _write(LocalStore(spool), files)
        spooled_at = spool / key.result_key() if spool is not None else None
        return Published(key.result_key(), stored=False, spooled_at=spooled_at, error=str(exc))
    if spool_first:
        for name, _ in files:
            (spool / name).unlink(missing_ok=True)
    return Published(key.result_key(), stored=True)


def _write(store: Store, files: list[tuple[str, bytes]]) -> None:
    for name, data in files:
        store.put_bytes(name, data)


def pending(spool: Path) -> list[str]:
    """Result keys still waiting in the spool."""
    return [k for k in LocalStore(spool).list_keys("") if k.endswith("/" + RESULT_FILE)]


def flush(spool: Path, store: Store) -> tuple[list[str], list[tuple[str, str]]]:
    """Upload everything in the spool; returns (uploaded keys, [(key, error)])."""
    done, failed = [], []
    local = LocalStore(spool)
    for result_key in pending(spool):
        prefix = result_key[: -len(RESULT_FILE)]
        try:
            raw_key = prefix + RAW_FIO_FILE
            if local.exists(raw_key):
                store.put_bytes(raw_key, local.get_bytes(raw_key))
            store.put_bytes(result_key, local.get_bytes(result_key))
        except (OSError, StoreError) as exc:
            failed.append((result_key, str(exc)))
            continue
        (spool / prefix / RAW_FIO_FILE).unlink(missing_ok=True)
        (spool / result_key).unlink()
        done.append(result_key)
    return done, failed
