"""Both store backends, against a real directory and a real MinIO server."""

import pytest

from pvbench.store import LocalStore, open_store
from pvbench.store.backends import S3Store, StoreError
from pvbench.store.layout import CellKey, analytics_prefix, slug


def test_key_layout_is_hive_partitioned_and_slugged():
    key = CellKey("Thesis 2023", "azure", "1", "Azure Disk Storage", "imported", "Random read IOPS", 3)
    assert key.result_key() == ("results/campaign=thesis-2023/run=azure/occasion=1/storage_class=azure-disk-storage/"
                                "profile=imported/workload=random-read-iops/rep=3/result.json")
    assert slug("rook-ceph.rbd") == "rook-ceph.rbd"  # DNS-1123 names are their own slug
    assert analytics_prefix("c") == "analytics/campaign=c/run=all"
    with pytest.raises(ValueError):
        slug("  ")


@pytest.mark.parametrize("kind", ["local", "s3"])
def test_put_get_list_idempotent(kind, tmp_path, request):
    url = str(tmp_path / "store") if kind == "local" else request.getfixturevalue("s3_store_url")
    store = open_store(url)
    assert isinstance(store, LocalStore if kind == "local" else S3Store)
    store.put_bytes("results/a/result.json", b"one")
    store.put_bytes("results/a/result.json", b"two")  # same cell again: replaced, not duplicated
    store.put_bytes("results/b/result.json", b"three")
    assert store.get_bytes("results/a/result.json") == b"two"
    assert list(store.list_keys("results")) == ["results/a/result.json", "results/b/result.json"]
    assert store.exists("results/b/result.json") and not store.exists("results/c/result.json")


def test_s3_store_needs_its_settings(monkeypatch):
    for var in ("PVBENCH_S3_ENDPOINT", "S3_ENDPOINT", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(StoreError, match="PVBENCH_S3_ENDPOINT"):
        open_store("s3://bucket/x")
    with pytest.raises(StoreError, match="unsupported store URL"):
        open_store("gs://bucket")


def test_unreachable_s3_is_retried_then_reported(monkeypatch):
    monkeypatch.setenv("PVBENCH_S3_ENDPOINT", "127.0.0.1:9")  # discard port: nothing listens
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "y")
    store = open_store("s3://bucket/p")
    store.attempts, store.backoff_s = 3, 0.01
    with pytest.raises(StoreError, match="failed after 3 attempts"):
        store.put_bytes("k", b"v")
