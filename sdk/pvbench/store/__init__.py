"""Result store: one key layout (layout.py), two backends (local.py, s3.py), and open_store to
pick one from a URL."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlparse

from pvbench.store.base import Store, StoredObject, StoreError
from pvbench.store.layout import slug
from pvbench.store.local import LocalStore
from pvbench.store.s3 import S3Settings, S3Store

__all__ = ["LocalStore", "S3Store", "Store", "StoredObject", "open_store", "slug"]

_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


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
