"""Result store: one key layout (layout.py), two backends (local directory, S3/MinIO)."""

from pvbench.store.backends import LocalStore, S3Store, Store, StoredObject, open_store
from pvbench.store.layout import CellKey, slug

__all__ = ["CellKey", "LocalStore", "S3Store", "Store", "StoredObject", "open_store", "slug"]
