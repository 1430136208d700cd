"""The campaign snapshot (pvbench.analytics.snapshot): the runs' compacts merged into one file per
table, read instead of them while it holds them as they are, and never a reason to count a result
wrongly: the tables are the same with it, without it, and with it out of date."""

from __future__ import annotations

import json
import logging
import shutil
from datetime import datetime, timedelta, timezone

from stats_helpers import write
from test_compact import headline_n, night

from pvbench.analytics import snapshot
from pvbench.analytics.compact import list_compacts
from pvbench.pipeline import aggregate, build_tables
from pvbench.store import open_store
from pvbench.store.layout import SNAPSHOT_MANIFEST, snapshot_prefix


class PathRecordingStore:
    """The store, recording the keys DuckDB is given to read."""

    def __init__(self, store):
        self._store = store
        self.read: list[str] = []

    def duckdb_path(self, key: str) -> str:
        self.read.append(key)
        return self._store.duckdb_path(key)

    def __getattr__(self, name):
        return getattr(self._store, name)


def manifest(store) -> dict:
    return json.loads(store.get_bytes(f"{snapshot_prefix('syn')}/{SNAPSHOT_MANIFEST}"))


def summary_rows(con) -> list[tuple]:
    return con.execute("""
        select storage_class, workload, direction, metric, n, n_occasions, mean, sd, median, ci95_low, ci95_high
        from summary order by all""").fetchall()


def test_the_snapshot_is_read_while_it_holds_the_runs_as_they_are(tmp_path):
    write(tmp_path, night("n1", 1) + night("n2", 2))
    store = PathRecordingStore(open_store(str(tmp_path)))
    aggregate(store, "syn")  # the first aggregation writes the snapshot
    versions = {run: c.version for (_, run), c in list_compacts(store, "syn").items()}
    assert manifest(store)["runs"] == versions and set(versions) == {"n1", "n2"}

    # adding a run reads the snapshot and the new run's compact only
    write(tmp_path, night("n3", 3))
    store.read.clear()
    aggregate(store, "syn", run="n3")
    read = {
        k.split("/")[0] if k.startswith("snapshot/") else k.split("/")[2]
        for k in store.read
        if k.startswith(("compact/", "snapshot/"))
    }
    assert read == {"snapshot", "run=n3"}
    assert manifest(store)["runs"] == versions  # one run behind: not written again yet
    con = build_tables(store, "syn", run="n3", extras=False)
    assert headline_n(con) == {"fast": 9, "slow": 9}

    # a result of n2 rewritten: n2 is compacted again and read from its compact, not the snapshot
    changed = night("n2", 2)[0].model_copy(deep=True)
    changed.metrics[0].iops = 5000.0
    write(tmp_path, [changed])
    store.read.clear()
    con = build_tables(store, "syn", extras=False)
    assert con.execute("select max(value) from measurements where metric = 'iops'").fetchone()[0] == 5000.0
    assert headline_n(con) == {"fast": 9, "slow": 9}
    assert any("/run=n2/" in k for k in store.read)
    # that full aggregation found the snapshot out of date and wrote it again, with all three runs
    assert manifest(store)["runs"] == {run: c.version for (_, run), c in list_compacts(store, "syn").items()}

    # the same tables without any snapshot
    with_snapshot = summary_rows(con)
    shutil.rmtree(tmp_path / snapshot_prefix("syn"))
    assert summary_rows(build_tables(open_store(str(tmp_path)), "syn", extras=False)) == with_snapshot


def test_a_removed_run_leaves_the_tables_though_the_snapshot_holds_it(tmp_path):
    write(tmp_path, night("n1", 1) + night("n2", 2))
    store = open_store(str(tmp_path))
    aggregate(store, "syn")
    shutil.rmtree(tmp_path / "results" / "campaign=syn" / "run=n2")
    con = build_tables(store, "syn", extras=False)
    assert headline_n(con) == {"fast": 3, "slow": 3}
    assert set(manifest(store)["runs"]) == {"n1"}


def test_the_snapshot_is_written_again_once_more_than_the_lag_runs_are_read_from_their_compacts(tmp_path, monkeypatch):
    monkeypatch.setattr(snapshot, "SNAPSHOT_LAG", 1)
    write(tmp_path, night("n1", 1))
    store = open_store(str(tmp_path))
    aggregate(store, "syn")
    write(tmp_path, night("n2", 2))
    aggregate(store, "syn", run="n2")
    assert set(manifest(store)["runs"]) == {"n1"}  # n2 is one run read on its own: within the lag
    write(tmp_path, night("n3", 3))
    aggregate(store, "syn", run="n3")  # n2 and n3 on their own: more than the lag
    assert set(manifest(store)["runs"]) == {"n1", "n2", "n3"}
    assert headline_n(build_tables(store, "syn", run="n3", extras=False)) == {"fast": 9, "slow": 9}


def test_a_generation_gone_meanwhile_makes_the_runs_be_read_from_their_compacts(tmp_path, caplog):
    write(tmp_path, night("n1", 1) + night("n2", 2))
    store = open_store(str(tmp_path))
    aggregate(store, "syn")
    generation = manifest(store)["generation"]
    shutil.rmtree(tmp_path / snapshot_prefix("syn") / generation)  # another aggregation removed it
    with caplog.at_level(logging.WARNING, logger="pvbench.analytics"):
        con = build_tables(store, "syn", run="n2", extras=False)
    assert headline_n(con) == {"fast": 6, "slow": 6}
    assert "snapshot unreadable" in caplog.text


def test_a_superseded_generation_is_removed_an_hour_after_it_was_replaced(tmp_path):
    store = open_store(str(tmp_path))
    now = datetime(2026, 11, 23, 12, 0, tzinfo=timezone.utc)
    names = [f"{now - timedelta(hours=h):{snapshot.GENERATION_TIME}}-{h:08d}" for h in (3, 2, 0)]
    for name in names:
        store.put_bytes(f"{snapshot_prefix('syn')}/{name}/result_rows.parquet", b"x")
    store.put_bytes(f"{snapshot_prefix('syn')}/{SNAPSHOT_MANIFEST}", b"{}")
    snapshot.remove_superseded(store, "syn", now=now)
    left = sorted(k.split("/")[2] for k in store.list_keys(snapshot_prefix("syn")))
    # the oldest was replaced 2 h ago (removed); the middle one only now (kept: a reader may be on it)
    assert left == sorted([names[1], names[2], SNAPSHOT_MANIFEST])


def test_the_snapshot_on_s3(s3_store_url):
    write(s3_store_url, night("n1", 1) + night("n2", 2))
    store = open_store(s3_store_url)
    aggregate(store, "syn")
    assert set(manifest(store)["runs"]) == {"n1", "n2"}
    write(s3_store_url, night("n3", 3))
    aggregate(store, "syn", run="n3")
    assert headline_n(build_tables(store, "syn", run="n3", extras=False)) == {"fast": 9, "slow": 9}
    assert headline_n(build_tables(store, "syn", extras=False)) == {"fast": 9, "slow": 9}
    assert set(manifest(store)["runs"]) == {"n1", "n2", "n3"}
