"""The campaign snapshot (pvbench.analytics.snapshot): the runs' compacts merged into one file per
table, read instead of them while it holds them as they are, and never a reason to count a result
wrongly: the tables are the same with it, without it, and with it out of date."""

from __future__ import annotations

import gc
import json
import logging
import shutil
import tempfile
import threading
from datetime import datetime, timedelta, timezone

import pytest
from cli_helpers import pvbench
from stats_helpers import write
from test_compact import headline_n, night

from pvbench.analytics import snapshot
from pvbench.analytics.compact import list_compacts
from pvbench.pipeline import aggregate, build_tables
from pvbench.store import open_store
from pvbench.store.base import StoreError
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
    """The manifest, with ``runs``: every run its parts hold (run → compact version)."""
    body = json.loads(store.get_bytes(f"{snapshot_prefix('syn')}/{SNAPSHOT_MANIFEST}"))
    body["runs"] = {run: v for part in body["parts"] for run, v in part["runs"].items()}
    return body


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

    # adding a run reads the snapshot only: the new run's rows are the tables it was compacted into
    write(tmp_path, night("n3", 3))
    store.read.clear()
    aggregate(store, "syn", run="n3")
    read = {
        k.split("/")[0] if k.startswith("snapshot/") else k.split("/")[2]
        for k in store.read
        if k.startswith(("compact/", "snapshot/"))
    }
    assert read == {"snapshot"}
    # read again, nothing new: the snapshot and the run's compact, now current
    assert manifest(store)["runs"] == versions  # one run behind: not written again yet
    store.read.clear()
    con = build_tables(store, "syn", run="n3", extras=False)
    assert headline_n(con) == {"fast": 9, "slow": 9}
    assert {k.split("/")[2] for k in store.read if k.startswith("compact/")} == {"run=n3"}

    # a result of n2 rewritten: n2 is compacted again and its new rows read, not the snapshot's
    changed = night("n2", 2)[0].model_copy(deep=True)
    changed.metrics[0].iops = 5000.0
    write(tmp_path, [changed])
    store.read.clear()
    con = build_tables(store, "syn", extras=False)
    assert con.execute("select max(value) from measurements where metric = 'iops'").fetchone()[0] == 5000.0
    assert headline_n(con) == {"fast": 9, "slow": 9}
    # its compact is what the next aggregation reads (this one read the tables it compacted into)
    store.read.clear()
    assert headline_n(build_tables(store, "syn", run="n3", extras=False)) == {"fast": 9, "slow": 9}
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
    [part] = manifest(store)["parts"]
    generation = part["generation"]
    shutil.rmtree(tmp_path / snapshot_prefix("syn") / generation)  # another aggregation removed it
    with caplog.at_level(logging.WARNING, logger="pvbench.analytics"):
        con = build_tables(store, "syn", run="n2", extras=False)
    assert headline_n(con) == {"fast": 6, "slow": 6}
    assert "snapshot unreadable" in caplog.text


def test_the_console_script_says_a_warning_of_the_aggregation_as_one(tmp_path):
    # the pvbench loggers' warnings (here: the snapshot gone) print as the command's own do, not as
    # a bare line that reads like any other output
    write(tmp_path, night("n1", 1) + night("n2", 2))
    aggregate(open_store(str(tmp_path)), "syn")
    shutil.rmtree(tmp_path / snapshot_prefix("syn") / manifest(open_store(str(tmp_path)))["parts"][0]["generation"])
    done = pvbench("aggregate", "--store", tmp_path, "--campaign", "syn", "--run", "n2")
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "snapshot unreadable" in line]
    assert len(said) == 1 and said[0].startswith("warning: campaign snapshot unreadable"), done.stderr


def test_the_runs_read_on_their_own_become_a_part_and_parts_are_merged(tmp_path, monkeypatch):
    # LSM-like: past the lag, the runs read on their own are written as one more part (a few runs'
    # rows, however large the campaign); past MAX_PARTS parts, every part is merged into one
    monkeypatch.setattr(snapshot, "SNAPSHOT_LAG", 0)
    monkeypatch.setattr(snapshot, "MAX_PARTS", 2)
    write(tmp_path, night("n1", 1))
    store = PathRecordingStore(open_store(str(tmp_path)))
    aggregate(store, "syn")
    assert [sorted(p["runs"]) for p in manifest(store)["parts"]] == [["n1"]]
    write(tmp_path, night("n2", 2))
    aggregate(store, "syn", run="n2")  # n2 read on its own: written as a second part
    parts = manifest(store)["parts"]
    assert [sorted(p["runs"]) for p in parts] == [["n1"], ["n2"]]
    # both parts are read, and nothing else; the tables count every run once
    write(tmp_path, night("n3", 3))
    store.read.clear()
    con = build_tables(store, "syn", run="n3", extras=False)
    assert headline_n(con) == {"fast": 9, "slow": 9}
    read = {"/".join(k.split("/")[:3]) for k in store.read if k.startswith(("compact/", "snapshot/"))}
    # (n3 is compacted here: its rows are the tables made, not its files read back)
    assert read == {f"snapshot/campaign=syn/{p['generation']}" for p in parts}
    # a third part would exceed MAX_PARTS: every run merged into one part, the old ones dropped
    aggregate(store, "syn", run="n3")
    body = manifest(store)
    assert [sorted(p["runs"]) for p in body["parts"]] == [["n1", "n2", "n3"]]
    assert set(body["dropped"]) == {p["generation"] for p in parts}  # kept an hour: a reader may be on them
    assert headline_n(build_tables(store, "syn", run="n3", extras=False)) == {"fast": 9, "slow": 9}


def test_a_run_compacted_again_leaves_its_old_part(tmp_path, monkeypatch):
    monkeypatch.setattr(snapshot, "SNAPSHOT_LAG", 0)
    write(tmp_path, night("n1", 1) + night("n2", 2))
    store = open_store(str(tmp_path))
    aggregate(store, "syn")
    changed = night("n2", 2)[0].model_copy(deep=True)
    changed.metrics[0].iops = 5000.0
    write(tmp_path, [changed])
    con = build_tables(store, "syn", run="n2", extras=False)  # n2 compacted again, read on its own
    assert con.execute("select max(value) from measurements where metric = 'iops'").fetchone()[0] == 5000.0
    parts = manifest(store)["parts"]
    # n2 is in the new part only: the first part's rows of it (the old version) are never read again
    assert [sorted(p["runs"]) for p in parts] == [["n1"], ["n2"]]
    con = build_tables(store, "syn", run="n2", extras=False)
    assert con.execute("select max(value) from measurements where metric = 'iops'").fetchone()[0] == 5000.0
    assert headline_n(con) == {"fast": 6, "slow": 6}


def test_a_dropped_generation_is_removed_an_hour_after_it_was_dropped(tmp_path):
    store = open_store(str(tmp_path))
    now = datetime(2026, 11, 23, 12, 0, tzinfo=timezone.utc)
    name = {h: f"{now - timedelta(hours=h):{snapshot.GENERATION_TIME}}-{h:08d}" for h in (5, 4, 3, 0)}
    for generation in name.values():
        store.put_bytes(f"{snapshot_prefix('syn')}/{generation}/result_rows.parquet", b"x")
    when = {h: f"{now - timedelta(hours=h):{snapshot.GENERATION_TIME}}" for h in (2, 0)}
    manifest = snapshot.Manifest(
        "syn",
        parts=[snapshot.Part(name[5], {"n1": "v"}), snapshot.Part(name[0], {"n2": "v"})],
        # name[4] was dropped 2 h ago; name[3] only now (a reader may still be on it)
        dropped={name[4]: when[2], name[3]: when[0]},
    )
    snapshot.remove_superseded(store, manifest, now=now)
    left = sorted({k.split("/")[2] for k in store.list_keys(snapshot_prefix("syn"))})
    # the oldest is still a part (kept, however old); name[4] removed and forgotten
    assert left == sorted([name[5], name[3], name[0]])
    assert manifest.dropped == {name[3]: when[0]}
    # a generation no manifest ever named (a writer that stopped before its manifest) goes an hour
    # after it was written
    orphan = f"{now - timedelta(hours=2):{snapshot.GENERATION_TIME}}-deadbeef"
    store.put_bytes(f"{snapshot_prefix('syn')}/{orphan}/result_rows.parquet", b"x")
    snapshot.remove_superseded(store, manifest, now=now)
    assert orphan not in {k.split("/")[2] for k in store.list_keys(snapshot_prefix("syn"))}


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


def test_adding_a_run_on_s3_fetches_the_rest_of_the_campaign_while_the_run_is_compacted(
    s3_store_url, monkeypatch, tmp_path
):
    # snapshot.Prefetch: the snapshot's files are fetched in its thread, beside the run's
    # compaction, and nothing is fetched again when the campaign's tables read them
    write(s3_store_url, night("n1", 1) + night("n2", 2))
    store = open_store(s3_store_url)
    aggregate(store, "syn")
    write(s3_store_url, night("n3", 3))
    fetched: list[tuple[str, list[str]]] = []
    original = snapshot._fetch

    def recording(store, keys, folder):
        fetched.append((threading.current_thread().name, list(keys)))
        return original(store, keys, folder)

    monkeypatch.setattr(snapshot, "_fetch", recording)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the copies go
    con = build_tables(store, "syn", run="n3", extras=False)
    assert headline_n(con) == {"fast": 9, "slow": 9}
    [(thread, keys)] = fetched  # one fetch, in the prefetch's thread: the snapshot's files
    assert thread == "pvbench-prefetch" and keys and all(k.startswith("snapshot/") for k in keys)
    assert list(tmp_path.glob("pvbench-compacts-*"))  # the copies live as long as the connection
    con.close()
    del con
    gc.collect()
    assert not list(tmp_path.glob("pvbench-compacts-*"))


def test_a_campaign_whose_compacts_cannot_be_listed_fails_with_the_stores_error(tmp_path):
    # the listing happens in the prefetch's thread; its error is the aggregation's, said once
    write(tmp_path, night("n1", 1))
    aggregate(open_store(str(tmp_path)), "syn")
    write(tmp_path, night("n2", 2))

    class Broken(PathRecordingStore):
        def list_objects(self, prefix):
            if prefix.startswith("compact/"):
                raise StoreError("list compact/: AccessDenied")
            return self._store.list_objects(prefix)

    with pytest.raises(StoreError, match="AccessDenied"):
        aggregate(Broken(open_store(str(tmp_path))), "syn", run="n2")
