"""Result store: one key layout (layout.py), two backends (local directory, S3/MinIO)."""

from pvbench.store.backends import LocalStore, S3Store, Store, StoredObject, open_store
from pvbench.store.layout import slug

__all__ = ["LocalStore", "S3Store", "Store", "StoredObject", "open_store", "slug"]
