"""One aggregation of a campaign at a time on one machine (pvbench.store.locks): local mode's
counterpart of the Argo campaign mutex, proven with real processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import duckdb
import pytest
from cli_helpers import PVBENCH
from stats_helpers import write
from test_compact import night

import pvbench.pipeline.tables as pipeline_tables
from pvbench.pipeline import aggregate, build_tables
from pvbench.store import open_store
from pvbench.store.layout import LOCKS_ROOT
from pvbench.store.locks import LockLost, campaign_lock, folder_lock, lock_path, machine_locks_dir

pytestmark = pytest.mark.quiet


def runs_in(tables) -> set[str]:
    return {r for (r,) in duckdb.sql(f"select distinct run from '{tables}/run_cells.parquet'").fetchall()}


def test_an_aggregation_waits_for_the_one_running_and_reads_the_run_it_compacted(tmp_path):
    """The race it prevents: two runs of a campaign aggregated at once, each reading the compacts
    before the other wrote its own; the tables written last lacked the other run. Here the first
    aggregation is this test holding the lock while it compacts n1; the second, a `pvbench aggregate
    --run n2` process, must wait, then read n1's compact."""
    store_dir, out = tmp_path / "store", tmp_path / "tables"
    write(store_dir, night("n1", 1) + night("n2", 2))
    store = open_store(str(store_dir))
    with campaign_lock(store, "syn"):
        second = subprocess.Popen(
            [*PVBENCH, "aggregate", "--store", store_dir, "--campaign", "syn", "--run", "n2", "--out", out],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
        )
        said = ""
        deadline = time.monotonic() + 120
        while "waiting" not in said and time.monotonic() < deadline and second.poll() is None:
            said += second.stderr.readline()
        assert "another aggregation of campaign 'syn'" in said and f"pid {os.getpid()}" in said, said
        build_tables(store, "syn", "n1", extras=False)  # the first aggregation's compaction of n1
        time.sleep(0.5)
        assert second.poll() is None and not out.exists()  # still waiting: nothing written
    _, rest = second.communicate(timeout=120)
    assert second.returncode == 0, said + rest
    assert runs_in(out) == {"n1", "n2"}
    # the lock file is in the store, where listings do not look
    assert (store_dir / LOCKS_ROOT / "campaign=syn.lock").exists()
    assert not [o.key for o in store.list_objects("") if LOCKS_ROOT in o.key]


def test_a_killed_aggregation_leaves_no_lock_behind(tmp_path):
    store = open_store(str(tmp_path))
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pvbench.store import open_store; from pvbench.store.locks import campaign_lock\n"
            f"with campaign_lock(open_store({str(tmp_path)!r}), 'syn'):\n"
            "    print('held', flush=True); time.sleep(600)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        said: list[str] = []
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        started = time.monotonic()
        with campaign_lock(store, "syn", waiting=said.append):
            pass
        assert time.monotonic() - started < 5
    finally:
        holder.kill()
        holder.wait()


def _other_machine(tmp_path, name: str) -> dict[str, str]:
    """The environment of a process that shares no flock with this one, as on another machine:
    its own runtime folder, where an S3 store's machine lock is."""
    return {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / name)}


def test_aggregations_of_one_s3_store_from_two_machines_take_turns(s3_store_url, tmp_path, monkeypatch):
    """The race of the first test, between machines: the flock is per machine, so the S3 store's
    lease is what makes the second aggregation wait. This test is the first machine (its own
    runtime folder); a `pvbench aggregate --run n2` with another runtime folder is the second. The
    lease's TTL is 2 s and it is held for longer than twice that: it is renewed, not taken over."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "machine-a"))
    monkeypatch.setenv("PVBENCH_LOCK_TTL_S", "2")
    out = tmp_path / "tables"
    write(s3_store_url, night("n1", 1) + night("n2", 2))
    store = open_store(s3_store_url)
    with campaign_lock(store, "syn"):
        started = time.monotonic()
        second = subprocess.Popen(
            [*PVBENCH, "aggregate", "--store", s3_store_url, "--campaign", "syn", "--run", "n2", "--out", out],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            env=_other_machine(tmp_path, "machine-b"),
        )
        said = ""
        deadline = time.monotonic() + 120
        while "waiting" not in said and time.monotonic() < deadline and second.poll() is None:
            said += second.stderr.readline()
        assert f"another aggregation of campaign 'syn' of {s3_store_url} is running" in said, said
        assert f"pid {os.getpid()}" in said and f"(lock {s3_store_url}/.locks/campaign=syn.lock)" in said, said
        build_tables(store, "syn", "n1", extras=False)  # the first aggregation's compaction of n1
        time.sleep(max(0.0, 5.0 - (time.monotonic() - started)))  # 2.5 TTLs: renewed meanwhile
        assert second.poll() is None and not out.exists()  # still waiting: nothing written
    _, rest = second.communicate(timeout=120)
    assert second.returncode == 0, said + rest
    assert "took over" not in said + rest
    assert runs_in(out) == {"n1", "n2"}
    assert not store.exists(".locks/campaign=syn.lock")  # released by the second, as by the first
    assert not [o.key for o in store.list_objects("") if LOCKS_ROOT in o.key]


def test_the_lease_of_a_killed_aggregation_on_this_machine_is_taken_over_at_once(s3_store_url, tmp_path, caplog):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; from pvbench.store import open_store; from pvbench.store.locks import campaign_lock\n"
            f"with campaign_lock(open_store({s3_store_url!r}), 'syn'):\n"
            "    print('held', flush=True); time.sleep(600)",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=_other_machine(tmp_path, "machine-a"),
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        holder.send_signal(signal.SIGKILL)  # nothing of it runs: its lease stays in the store
        holder.wait(timeout=30)
        store = open_store(s3_store_url)
        assert store.exists(".locks/campaign=syn.lock")
        started = time.monotonic()
        with caplog.at_level("WARNING", logger="pvbench.store"), campaign_lock(store, "syn"):
            assert time.monotonic() - started < 5  # not the TTL's 60 s: its process is gone
        assert f"its process {holder.pid} on this machine is gone" in caplog.text
        assert not store.exists(".locks/campaign=syn.lock")
    finally:
        holder.kill()
        holder.wait()


def test_the_lease_of_a_machine_gone_is_taken_over_once_it_is_not_renewed(s3_store_url, monkeypatch, caplog):
    """A lease written by another machine that stopped renewing it: waited for (its holder named),
    then taken over once it is TTL old by the store's clock."""
    monkeypatch.setenv("PVBENCH_LOCK_TTL_S", "2")
    store = open_store(s3_store_url)
    abandoned = {"holder": "pid 4242 on elsewhere", "host": "elsewhere", "pid": 4242, "token": "t", "renewal": 0}
    assert store.put_if(".locks/campaign=syn.lock", json.dumps(abandoned).encode()) is not None
    said: list[str] = []
    started = time.monotonic()
    with caplog.at_level("WARNING", logger="pvbench.store"), campaign_lock(store, "syn", waiting=said.append):
        waited = time.monotonic() - started
    assert len(said) == 1 and "(pid 4242 on elsewhere): waiting for it to finish" in said[0]
    assert 1 < waited < 15, waited
    assert "took over the lock" in caplog.text and "pid 4242 on elsewhere" in caplog.text


def test_conditional_writes_are_what_the_lease_is_made_of(s3_store_url):
    """The store's side, on the real MinIO: a create fails while the object is there, a rewrite
    fails once it changed, and the age is the server's."""
    store = open_store(s3_store_url)
    first = store.put_if("k", b"a")
    assert first is not None and store.put_if("k", b"b") is None
    second = store.put_if("k", b"c", etag=first)
    assert second is not None and second != first
    assert store.put_if("k", b"d", etag=first) is None  # a stale ETag: refused
    content, etag, age_s = store.get_versioned("k")
    assert (content, etag) == (b"c", second) and 0 <= age_s < 5
    assert store.get_versioned("absent") is None


def test_an_aggregation_whose_lease_was_taken_over_writes_no_tables(s3_store_url, tmp_path, monkeypatch):
    """A holder stopped for longer than the TTL (a laptop suspended mid-aggregation) finds its lease
    another machine's: it must not write tables over the ones that machine writes. Here the lease
    is taken over (as a stale one is: If-Match on its ETag) while the campaign's models run."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "machine-a"))
    monkeypatch.setenv("PVBENCH_LOCK_TTL_S", "1")
    write(s3_store_url, night("n1", 1))
    store, out = open_store(s3_store_url), tmp_path / "tables"
    models = pipeline_tables.build_tables

    def taken_over_meanwhile(*args, **kwargs):
        _, etag, _ = store.get_versioned(".locks/campaign=syn.lock")
        other = {"holder": "pid 7 on elsewhere", "host": "elsewhere", "pid": 7, "token": "other", "renewal": 0}
        assert store.put_if(".locks/campaign=syn.lock", json.dumps(other).encode(), etag=etag) is not None
        time.sleep(1)  # four renewals' time: the holder finds its lease gone
        return models(*args, **kwargs)

    monkeypatch.setattr(pipeline_tables, "build_tables", taken_over_meanwhile)
    with pytest.raises(LockLost, match="lost the lock .*campaign=syn.lock.*nothing was written"):
        aggregate(store, "syn", out=out)
    assert not out.exists()
    assert json.loads(store.get_bytes(".locks/campaign=syn.lock"))["token"] == "other"  # left to its holder


class _IgnoresConditions:
    """An S3-compatible store that writes whatever the condition (older servers): MinIO and AWS S3
    honour them, so this one is a stand-in."""

    url = "s3://old-server/pvbench"

    def __init__(self):
        self.objects: dict[str, bytes] = {}

    def put_if(self, key, data, *, etag=None):
        self.objects[key] = data
        return f'"{len(self.objects)}-{hash(data)}"'

    def get_versioned(self, key):
        return (self.objects[key], "x", 0.0) if key in self.objects else None

    def delete(self, key):
        self.objects.pop(key, None)


def test_a_store_that_ignores_conditional_writes_is_said_and_locked_on_this_machine(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "runtime"))
    store = _IgnoresConditions()
    with caplog.at_level("WARNING", logger="pvbench.store"), campaign_lock(store, "syn") as path:
        assert path.parent == tmp_path / "runtime" / "pvbench-locks"  # the flock still holds here
    assert "ignores conditional writes" in caplog.text and "from other machines are not serialized" in caplog.text
    assert store.objects == {}  # removed at the end all the same


def test_which_lock_a_store_and_campaign_have(tmp_path, monkeypatch):
    (tmp_path / "store").mkdir()
    local = open_store(str(tmp_path / "store"))
    # the campaign's slug, as its keys: labels that share keys share the lock
    assert (
        lock_path(local, "Prod") == lock_path(local, "prod") == tmp_path / "store" / LOCKS_ROOT / "campaign=prod.lock"
    )
    assert lock_path(local, None).name == "all-campaigns.lock"
    assert lock_path(local, "a") != lock_path(local, "b")

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "runtime"))
    for name, value in {
        "PVBENCH_S3_ENDPOINT": "127.0.0.1:9",
        "AWS_ACCESS_KEY_ID": "k",
        "AWS_SECRET_ACCESS_KEY": "s",
    }.items():
        monkeypatch.setenv(name, value)
    s3 = open_store("s3://bucket/pvbench")
    assert lock_path(s3, "prod").parent == machine_locks_dir() == tmp_path / "runtime" / "pvbench-locks"
    assert lock_path(s3, "prod") != lock_path(open_store("s3://other/pvbench"), "prod")


def test_a_store_whose_lock_folder_cannot_be_made_keeps_its_lock_in_the_users_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "runtime"))
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / LOCKS_ROOT).write_text("")  # a file where the folder would be (as a read-only store)
    store = open_store(str(tmp_path / "store"))
    assert lock_path(store, "prod").parent == tmp_path / "runtime" / "pvbench-locks"
    with campaign_lock(store, "prod") as held:
        assert held.exists()
    # a store folder that does not exist (a mistyped path) is not made by its lock
    assert lock_path(open_store(str(tmp_path / "typo")), "prod").parent == tmp_path / "runtime" / "pvbench-locks"
    assert not (tmp_path / "typo").exists()


def test_a_shared_store_gets_locks_every_user_of_it_can_take(tmp_path):
    """Under a umask of 077 the lock folder and files were the first user's only: another user of a
    shared store could not open the lock (a traceback) or even its folder (the lock went to that
    user's own folder and serialized nothing). They now take the store's own permissions."""
    store = tmp_path / "shared"
    store.mkdir()
    os.chmod(store, 0o2775)  # a group's folder, as teams share one
    saved = os.umask(0o077)
    try:
        with campaign_lock(open_store(str(store)), "syn") as path:
            assert path.parent == store / LOCKS_ROOT
    finally:
        os.umask(saved)
    assert oct((store / LOCKS_ROOT).stat().st_mode & 0o7777) == oct(0o2775)
    assert oct(path.stat().st_mode & 0o777) == oct(0o664)


def test_tables_are_not_replaced_while_a_report_build_copies_them(tmp_path):
    """The report build copies a folder's ~30 tables one by one (stage_data); an aggregation
    writing into the same folder meanwhile replaced them under it, so a report could show half of
    one set and half of the next. The aggregation now moves its set in only once the copy is done."""
    store = tmp_path / "store"
    write(store, night("n1", 1))
    out = tmp_path / "tables"
    aggregate(open_store(str(store)), "syn", out=out)
    before = {p.name: p.stat().st_ino for p in out.glob("*.parquet")}
    writer = threading.Thread(target=aggregate, args=(open_store(str(store)), "syn"), kwargs={"out": out})
    with folder_lock(out, shared=True):  # as stage_data holds it while it copies
        writer.start()
        time.sleep(5)  # an aggregation of these few results takes ~1 s
        assert writer.is_alive()  # its set written beside the folder, waiting to be moved in
        assert {p.name: p.stat().st_ino for p in out.glob("*.parquet")} == before
    writer.join(timeout=60)
    after = {p.name: p.stat().st_ino for p in out.glob("*.parquet")}
    assert after.keys() == before.keys() and all(after[name] != before[name] for name in before)
