"""Compact once, read compact: a run's documents are read once; later aggregations read its compact.

What a user relies on: adding a run reads only that run's documents; aggregating again reads no
document; a document rewritten or removed is noticed and its run compacted again, whole, so
nothing is counted twice; DuckDB stays within what the process may use; S3 listings stream.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from datetime import timedelta

import pytest
from stats_helpers import T0, doc, write

from pvbench.analytics import compact
from pvbench.analytics.compact import list_compacts
from pvbench.analytics.connection import connect
from pvbench.analytics.resources import compaction_threads, duckdb_settings, parse_size
from pvbench.analytics.tables import AnalyticsError
from pvbench.pipeline import aggregate, build_tables
from pvbench.store import open_store
from pvbench.store.layout import RESULT_FILE
from pvbench.testing.tables import differing_rows


def night(run: str, day: int, level: float = 1000.0, reps: int = 3) -> list:
    return [
        doc(
            run=run,
            occasion=f"night-{day}",
            storage_class=sc,
            rep=rep,
            value=base * (1 + rep / 100),
            started=T0 + timedelta(days=day, minutes=rep),
        )
        for sc, base in (("fast", level), ("slow", level / 2))
        for rep in range(1, reps + 1)
    ]


class CountingStore:
    """The store, counting the result.json documents read."""

    def __init__(self, store):
        self._store = store
        self.reads: list[str] = []

    def get_bytes(self, key: str) -> bytes:
        if key.endswith(RESULT_FILE):
            self.reads.append(key)
        return self._store.get_bytes(key)

    def get_many(self, keys):
        for key, content in self._store.get_many(keys):
            if key.endswith(RESULT_FILE):
                self.reads.append(key)
            yield key, content

    def __getattr__(self, name):
        return getattr(self._store, name)


def headline_n(con) -> dict:
    return dict(con.execute("select storage_class, n from summary where is_headline").fetchall())


def test_each_document_is_read_once_and_adding_a_run_reads_only_it(tmp_path):
    write(tmp_path, night("n1", 1) + night("n2", 2))
    store = CountingStore(open_store(str(tmp_path)))
    aggregate(store, "syn")
    assert len(store.reads) == 12 and len(set(store.reads)) == 12
    assert sorted(run for _, run in list_compacts(store, "syn")) == ["n1", "n2"]

    store.reads.clear()
    aggregate(store, "syn")  # nothing new: every run listed and checked, no document read
    assert store.reads == []

    write(tmp_path, night("n3", 3))
    store.reads.clear()
    where, counts = aggregate(store, "syn", run="n3")  # the run that just finished
    assert len(store.reads) == 6 and all("/run=n3/" in k for k in store.reads)
    assert where.endswith("analytics/campaign=syn/run=all") and counts["report_run_summary"] == 3 * 2
    con = build_tables(store, "syn", extras=False)
    assert headline_n(con) == {"fast": 9, "slow": 9}  # three nights, the campaign's tables


def test_a_changed_or_removed_document_recompacts_its_run_and_counts_nothing_twice(tmp_path):
    write(tmp_path, night("n1", 1) + night("n2", 2))
    store = CountingStore(open_store(str(tmp_path)))
    aggregate(store, "syn")
    # rewrite one result of n2 with another value (a re-upload under the same key)
    changed = night("n2", 2)[0].model_copy(deep=True)
    changed.metrics[0].iops = 5000.0
    write(tmp_path, [changed])
    store.reads.clear()
    con = build_tables(store, "syn", extras=False)
    assert store.reads and all("/run=n2/" in k for k in store.reads)  # only the changed run, whole
    assert headline_n(con) == {"fast": 6, "slow": 6}
    assert con.execute("select max(value) from measurements where metric = 'iops'").fetchone()[0] == 5000.0
    # a removed document leaves the tables at the next full aggregation
    (tmp_path / night("n1", 1)[0].identity.result_key()).unlink()
    con = build_tables(store, "syn", extras=False)
    assert headline_n(con) == {"fast": 5, "slow": 6}


def test_the_runs_compact_keeps_its_failures_and_a_run_that_stored_nothing_is_named(tmp_path):
    write(tmp_path, night("n1", 1))
    store = open_store(str(tmp_path))
    aggregate(store, "syn")
    failure = {
        "node": "benchmark(0:…)",
        "template": "benchmark-cell",
        "phase": "Failed",
        "message": "timeout",
        "storage_class": "slow",
        "workload": "randread-iops",
        "rep": 4,
        "finished_at": None,
    }
    aggregate(store, "syn", run="n2", failures=[failure])  # n2: every cell failed
    aggregate(store, "syn")  # a later aggregation still shows what failed in n2
    con = build_tables(store, "syn", extras=False)
    assert con.execute("select run, storage_class, message from report_failures").fetchall() == [
        ("n2", "slow", "timeout")
    ]


def test_tables_do_not_depend_on_the_machines_time_zone(tmp_path):
    """A pvbench connection works in UTC whatever TZ says: DuckDB's default (the machine's zone)
    made the difference of two timestamps a calendar one, an hour off across a DST change."""
    code = (
        "from pvbench.analytics.connection import connect; con = connect(); print(con.execute("
        "\"select current_setting('TimeZone'), epoch(t2 - t1) from (select"
        " '2026-03-01 00:00:00+00'::timestamptz t1, '2026-05-01 00:00:00+00'::timestamptz t2)\").fetchone())"
    )
    env = {**os.environ, "TZ": "Europe/Zurich"}
    got = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert got.stdout.strip() == "('UTC', 5270400.0)"  # 61 days, not 61 days and an hour


def test_duckdb_gets_what_the_process_may_use(monkeypatch):
    monkeypatch.setenv("PVBENCH_DUCKDB_MEMORY", "300MiB")
    monkeypatch.setenv("PVBENCH_DUCKDB_THREADS", "1")
    assert duckdb_settings()["memory_limit"] == "300MiB" and duckdb_settings()["threads"] == 1
    con = connect()
    assert con.execute("select current_setting('threads')").fetchone()[0] == 1
    assert con.execute("select current_setting('memory_limit')").fetchone()[0].startswith("300")
    monkeypatch.delenv("PVBENCH_DUCKDB_MEMORY")
    # without an override: half of the cgroup's (or the machine's) memory, never the host's 80 %
    from pvbench.analytics.resources import memory_limit_bytes

    assert parse_size(duckdb_settings()["memory_limit"]) == pytest.approx(memory_limit_bytes() / 2, rel=0.01)
    with pytest.raises(ValueError, match="not a size"):
        parse_size("lots")
    # compacting, DuckDB leaves a core to the thread that reads and validates the next batch
    assert compaction_threads() == 1
    monkeypatch.setenv("PVBENCH_DUCKDB_THREADS", "4")
    assert compaction_threads() == 3


def test_s3_listing_streams_past_one_page(s3_store_url):
    store = open_store(s3_store_url)
    for i in range(1100):  # more than the 1,000 keys of one S3 list page
        store.put_bytes(f"results/campaign=c/run=r/k{i:04d}/{RESULT_FILE}", b"{}")
    listed = store.list_objects("results/campaign=c")
    first = next(listed)
    assert first.key.endswith(RESULT_FILE) and first.size == 2 and first.version
    assert 1 + sum(1 for _ in listed) == 1100


@pytest.mark.parametrize("kind", ["local", "s3"])
def test_a_campaign_or_run_is_never_mixed_with_one_whose_name_it_begins(kind, tmp_path, request, monkeypatch):
    """Campaign ``syn`` beside ``syn2``, run ``n1`` beside ``n10``: on S3, whose listings match
    prefixes character by character, aggregating ``syn`` took ``syn2``'s results in, and adding
    ``n1`` compacted ``n10`` too. Each is listed as the folder it is, in both stores."""
    url = str(tmp_path / "store") if kind == "local" else request.getfixturevalue("s3_store_url")
    store = open_store(url)  # itself, not wrapped: DuckDB reads an S3Store's compacts from S3
    reads, get_many = [], store.get_many
    monkeypatch.setattr(store, "get_many", lambda keys: ((reads.append(k), (k, c))[1] for k, c in get_many(keys)))
    docs = night("n1", 1) + night("n10", 2) + [doc(campaign="syn2", run="n1", value=5.0)]
    for d in docs:
        store.put_bytes(d.identity.result_key(), d.to_json())
    assert {o.key.split("/")[1] for o in store.list_objects("results/campaign=syn")} == {"campaign=syn"}
    assert {o.key.split("/")[2] for o in store.list_objects("results/campaign=syn/run=n1")} == {"run=n1"}
    aggregate(store, "syn")
    assert sorted(list_compacts(store, "syn")) == [("syn", "n1"), ("syn", "n10")]
    con = build_tables(store, "syn", extras=False)
    assert con.execute("select distinct campaign from summary").fetchall() == [("syn",)]
    assert headline_n(con) == {"fast": 6, "slow": 6}

    store.put_bytes(doc(run="n1", occasion="night-1", storage_class="fast", rep=4).identity.result_key(), b"{}")
    reads.clear()
    aggregate(store, "syn", run="n1")  # n1 changed: only its documents are read again, not n10's
    documents = [key for key in reads if key.endswith(RESULT_FILE)]
    assert documents and all("/campaign=syn/run=n1/" in key for key in documents)


def test_a_campaign_of_invalid_documents_only_is_a_clear_error(tmp_path):
    path = tmp_path / "results/campaign=syn/run=r/occasion=o/storage_class=a/profile=p/workload=w/rep=1" / RESULT_FILE
    path.parent.mkdir(parents=True)
    path.write_text("{")
    from pvbench.analytics import AnalyticsError

    with pytest.raises(AnalyticsError, match="no valid results"):
        build_tables(open_store(str(tmp_path)), "syn", extras=False)


def test_sql_functions_do_not_retry_a_missing_import_per_call():
    """DuckDB's Python layer asks for pandas on every call of a Python function from SQL; a
    failed import is not remembered by Python, so without pandas each call walked sys.path twice
    (a third of a 100,000-result aggregation). After connect() nothing is looked up per call."""
    import importlib.abc

    from pvbench.stats.functions import register_functions

    looked_up: list[str] = []

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            looked_up.append(name)
            return None

    con = connect()
    register_functions(con)
    con.execute("select f_pvalue(2.0, 3, 40)").fetchall()  # imports scipy.special, once
    sys.meta_path.append(Finder())  # asked only when every finder before it found nothing
    try:
        values = con.execute("select f_pvalue(range::double, 3, 40) from range(1, 500)").fetchall()
    finally:
        sys.meta_path.pop()
    assert len(values) == 499 and 0 < values[0][0] < 1
    assert looked_up == []
    # pandas is still absent the ordinary way, for any library that looks for it (pyarrow does)
    script = (
        "from pvbench.analytics.connection import connect; connect()\n"
        "try:\n    import pandas\nexcept ModuleNotFoundError as exc:\n    print(exc.name)\n"
        "import importlib.util\n"
        "if importlib.util.find_spec('pyarrow'):\n    import pyarrow.dataset, pyarrow.parquet\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "pandas"


def _per_value_summary(con) -> list[tuple]:
    """The campaign summary's n, mean, sd and quartiles computed the direct way, value by value."""
    return con.execute("""
        select storage_class, metric, count(*), avg(value), stddev_samp(value), quantile_cont(value, 0.25),
               median(value), quantile_cont(value, 0.75), count(distinct (run, occasion))
        from measurements group by all order by all""").fetchall()


def test_summaries_merged_from_the_runs_occasions_equal_those_over_every_value(tmp_path):
    """The campaign's summaries merge each run's occasion rows (occasion_measurements: n, mean, sum
    of squares, the values); what they give must be what the values give directly, whatever the
    number of reps per occasion — and still when a copy of a result in another run's folder makes
    the campaign regroup the occasions itself."""
    write(tmp_path, night("n1", 1, reps=2) + night("n2", 2, level=1300.0, reps=5) + night("n3", 3, reps=3))
    store = open_store(str(tmp_path))
    aggregate(store, "syn")

    def check(con):
        summary = con.execute("""
            select storage_class, metric, n, mean, sd, q1, median, q3, n_occasions
            from summary order by all""").fetchall()
        direct = _per_value_summary(con)
        assert len(summary) == len(direct) > 0
        for got, want in zip(summary, direct):
            assert got[:2] == want[:2] and got[2] == want[2] and got[8] == want[8]
            assert got[3:8] == pytest.approx(want[3:8], rel=1e-12)
        components = con.execute("""
            select storage_class, metric, ms_within from occasion_components order by all""").fetchall()
        within = con.execute("""
            select storage_class, metric,
                   sum(ss) / (sum(n) - count(*))
            from (select storage_class, metric, run, occasion, count(*) as n, var_pop(value) * count(*) as ss
                  from measurements group by all)
            group by all having count(*) >= 2 and sum(n) > count(*) order by all""").fetchall()
        assert [c[:2] for c in components] == [w[:2] for w in within]
        assert [c[2] for c in components] == pytest.approx([w[2] for w in within], rel=1e-12)

    check(build_tables(store, "syn", extras=False))
    # a copy of one n2 result kept in n3's folder: counted once, so n3's compact cannot be read as is
    copy = night("n2", 2, level=1300.0, reps=5)[0]
    key = copy.identity.result_key().replace("/run=n2/", "/run=n3/")
    (tmp_path / key).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / key).write_text(copy.model_dump_json())
    con = build_tables(store, "syn", extras=False)
    assert con.execute("select count(*) from skipped_results where problem = 'duplicate'").fetchone()[0] == 1
    check(con)


def test_a_compact_of_an_older_format_is_rebuilt_when_another_run_is_added(tmp_path):
    """After an upgrade, the first `aggregate --run` (Argo's exit handler) meets compacts an older
    pvbench made, without occasion_measurements.parquet: those runs are compacted again from their
    documents, not left out of the campaign's tables."""
    write(tmp_path, night("n1", 1) + night("n2", 2))
    store = CountingStore(open_store(str(tmp_path)))
    aggregate(store, "syn")
    old = tmp_path / "compact" / "campaign=syn" / "run=n1" / "occasion_measurements.parquet"
    old.unlink()  # as a compact of format 5 was
    write(tmp_path, night("n3", 3))
    store.reads.clear()
    aggregate(store, "syn", run="n3")
    assert sorted({k.split("/run=")[1].split("/")[0] for k in store.reads}) == ["n1", "n3"]
    assert old.exists()
    con = build_tables(store, "syn", extras=False)
    assert headline_n(con) == {"fast": 9, "slow": 9}


def _compact_file(store_root, run: str, table: str) -> str:
    return str(store_root / "compact" / "campaign=syn" / f"run={run}" / f"{table}.parquet")


def test_the_tables_of_runs_just_compacted_are_those_read_back_from_their_compacts(tmp_path, monkeypatch):
    # the runs an aggregation compacts are read from the tables it compacted them into (Kept), not
    # from the files it just wrote; every table written must be what reading the files gives
    monkeypatch.setattr(compact, "BATCH_RUNS", 2)  # two batches: n1+n2, then n3 (kept_*_1, kept_*_2)
    write(tmp_path / "store", night("n1", 1) + night("n2", 2) + night("n3", 3))
    store = open_store(str(tmp_path / "store"))
    read: list[str] = []

    class Recording(CountingStore):  # the keys DuckDB is given to read
        def duckdb_path(self, key):
            read.append(key)
            return self._store.duckdb_path(key)

    aggregate(Recording(store), "syn", out=tmp_path / "kept", keep_snapshot=False)  # every run compacted here
    assert not [key for key in read if key.startswith("compact/")]  # no compact read back
    aggregate(Recording(store), "syn", out=tmp_path / "files", keep_snapshot=False)  # nothing new: read
    assert {key.split("/")[2] for key in read if key.startswith("compact/")} == {"run=n1", "run=n2", "run=n3"}
    assert not (tmp_path / "store" / "snapshot").exists()
    tables = sorted(p.name for p in (tmp_path / "kept").glob("*.parquet"))
    assert tables == sorted(p.name for p in (tmp_path / "files").glob("*.parquet")) and len(tables) > 20
    for table in tables:
        assert differing_rows(str(tmp_path / "kept" / table), str(tmp_path / "files" / table)) == 0, table


def test_runs_compacted_together_hold_what_each_compacted_alone_holds(tmp_path, monkeypatch):
    # a full aggregation puts several runs through the compaction models at once (their statements'
    # fixed cost paid once); each run's compact must be what compacting it alone makes. A run that
    # holds a copy of another run's document (elsewhere than its identity's key) goes alone.
    import shutil

    from pvbench.analytics import compact

    runs = night("n1", 1) + night("n2", 2) + night("n3", 3)
    together, alone = tmp_path / "together", tmp_path / "alone"
    for root in (together, alone):
        write(root, runs)
        key = runs[0].identity.result_key()  # n1's first document, copied into n3's folder
        copy = root / key.replace("run=n1", "run=n3").replace("night-1", "night-1-copy")
        copy.parent.mkdir(parents=True)
        shutil.copyfile(root / key, copy)
    passes: list[list[str]] = []
    original = compact.write_compacts

    def recording(store, reads, *args, **kwargs):
        passes.append([r.listing.run for r in reads])
        return original(store, reads, *args, **kwargs)

    monkeypatch.setattr(compact, "write_compacts", recording)
    aggregate(open_store(str(together)), "syn")
    assert passes == [["n1", "n2"], ["n3"]]  # n3 holds a copy: on its own
    passes.clear()
    monkeypatch.setattr(compact, "BATCH_RUNS", 1)
    aggregate(open_store(str(alone)), "syn")
    assert passes == [["n1"], ["n2"], ["n3"]]
    for run in ("n1", "n2", "n3"):
        for table in compact.COMPACT_TABLES:
            made = _compact_file(together, run, table), _compact_file(alone, run, table)
            assert differing_rows(*made) == 0, (run, table)
    n3_rows = _compact_file(together, "n3", "result_rows")
    n3 = connect().execute("SELECT count(DISTINCT source_key) FROM read_parquet(?)", [n3_rows]).fetchone()[0]
    assert n3 == 6 + 1  # its own and the copy


class LoggingStore(CountingStore):
    """The store, logging each result.json as it is listed and as it is read."""

    def __init__(self, store):
        super().__init__(store)
        self.events: list[tuple[str, str]] = []

    def list_objects(self, prefix):
        for obj in self._store.list_objects(prefix):
            if obj.key.endswith(RESULT_FILE):
                self.events.append(("listed", obj.key))
            yield obj

    def get_many(self, keys):
        for key, content in self._store.get_many(keys):
            self.events.append(("read", key))
            yield key, content


def test_the_listing_streams_into_the_compaction_run_by_run(tmp_path, monkeypatch):
    write(tmp_path, night("n1", 1) + night("n2", 2) + night("n3", 3))
    monkeypatch.setattr(compact, "BATCH_RUNS", 1)  # a batch per run
    store = LoggingStore(open_store(str(tmp_path)))
    assert [(r.run, len(r.objects)) for r in compact.iter_runs(store, "syn")] == [("n1", 6), ("n2", 6), ("n3", 6)]
    assert list(compact.list_runs(store, "syn").values()) == list(compact.iter_runs(store, "syn"))
    store.events.clear()
    aggregate(store, "syn")
    kinds = [kind for kind, _ in store.events]
    # n1 was read before n3 was listed: the compaction did not wait for the whole listing
    assert kinds.index("read") < len(kinds) - 1 - kinds[::-1].index("listed")
    assert sorted(k for kind, k in store.events if kind == "read") == sorted(
        k for kind, k in store.events if kind == "listed"
    )
    con = build_tables(store, "syn", extras=False)
    assert headline_n(con) == {"fast": 9, "slow": 9}


def test_a_listing_out_of_key_order_is_an_error_not_a_run_counted_twice(tmp_path):
    write(tmp_path, night("n1", 1) + night("n2", 2))
    store = open_store(str(tmp_path))
    objects = list(store.list_objects("results/campaign=syn"))

    class Shuffled(CountingStore):
        def list_objects(self, prefix):
            return iter(objects[1:] + objects[:1])  # a key of n1 after n2's

    with pytest.raises(AnalyticsError, match="not contiguous"):
        list(compact.iter_runs(Shuffled(store), "syn"))


def test_a_full_local_aggregation_reads_later_batches_in_a_second_process(tmp_path, monkeypatch):
    # what the reader process makes is what the reader thread makes, and it leaves no batch behind
    import tempfile
    from concurrent.futures import ProcessPoolExecutor

    from pvbench.analytics import runner

    runs = night("n1", 1) + night("n2", 2) + night("n3", 3)
    by_process, by_thread, scratch = tmp_path / "process", tmp_path / "thread", tmp_path / "tmp"
    scratch.mkdir()
    for root in (by_process, by_thread):
        write(root, runs)
    monkeypatch.setattr(compact, "BATCH_RUNS", 1)  # a batch per run
    monkeypatch.setenv("TMPDIR", str(scratch))  # the reader process's batches too
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    in_process: list[str] = []

    class Recording(ProcessPoolExecutor):
        def submit(self, fn, *args):
            # the run, and its listing as flat lists of keys, sizes and versions (cheap to pickle)
            in_process.append(args[2] if args else fn.__name__)
            assert all(type(field) is list for field in args[3:]) and len(args[3:]) in (0, 3), args
            future = super().submit(fn, *args)
            if not args:  # _started: up before the next run is listed (else it is read in the thread)
                future.result()
            return future

    monkeypatch.setattr(compact, "ProcessPoolExecutor", Recording)
    monkeypatch.setattr(runner, "cpu_limit", lambda: 2)
    aggregate(open_store(str(by_process)), "syn")
    # the first batch in the thread; the process starts once a second batch is certain
    assert in_process == ["_started", "n2", "n3"]
    monkeypatch.setattr(runner, "cpu_limit", lambda: 1)  # one core: no second process
    aggregate(open_store(str(by_thread)), "syn")
    assert in_process == ["_started", "n2", "n3"]
    for run in ("n1", "n2", "n3"):
        for table in compact.COMPACT_TABLES:
            made = _compact_file(by_process, run, table), _compact_file(by_thread, run, table)
            assert differing_rows(*made) == 0, (run, table)
    assert not list(scratch.glob("pvbench-compact-*"))
    con = build_tables(open_store(str(by_process)), "syn", extras=False)
    assert headline_n(con) == {"fast": 9, "slow": 9}


class _FakePool:
    """A stand-in for the reader's ProcessPoolExecutor (what the process does is faked by submit)."""

    def __init__(self, *args, **kwargs):
        pass

    def shutdown(self, **kwargs):
        pass


def _aggregate_with_pool(store_root, pool, monkeypatch, caplog) -> None:
    """A full aggregation of ``store_root`` on two cores, its reader process ``pool``; the reader
    process failed, said once."""
    from pvbench.analytics import runner

    monkeypatch.setattr(compact, "ProcessPoolExecutor", pool)
    monkeypatch.setattr(runner, "cpu_limit", lambda: 2)
    with caplog.at_level("WARNING", logger="pvbench.analytics"):
        aggregate(open_store(str(store_root)), "syn")
    assert caplog.text.count("the reader process failed") == 1


def test_a_reader_process_that_fails_leaves_the_reading_to_the_thread(tmp_path, monkeypatch, caplog):
    # e.g. a script without the `if __name__ == "__main__":` guard, whose spawned process cannot start
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    write(tmp_path, night("n1", 1) + night("n2", 2) + night("n3", 3))
    monkeypatch.setattr(compact, "BATCH_RUNS", 1)
    started: list[str] = []

    class Broken(_FakePool):
        def submit(self, fn, *args):
            started.append(args[2] if args else fn.__name__)
            future = Future()
            future.set_exception(BrokenProcessPool("the process died"))
            return future

    _aggregate_with_pool(tmp_path, Broken, monkeypatch, caplog)
    assert started == ["_started"]  # its start failed: no run is given to it
    con = build_tables(open_store(str(tmp_path)), "syn", extras=False)
    assert headline_n(con) == {"fast": 9, "slow": 9}


def test_a_reader_process_that_dies_with_runs_given_to_it_has_them_read_here(tmp_path, monkeypatch, caplog):
    # up, then gone (killed, out of memory): the runs it had are read in this process, nothing lost
    import tempfile
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    write(tmp_path / "store", night("n1", 1) + night("n2", 2) + night("n3", 3))
    monkeypatch.setattr(compact, "BATCH_RUNS", 1)
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    given: list[str] = []

    class Dies(_FakePool):
        def submit(self, fn, *args):
            future = Future()
            if not args:  # _started: it came up
                future.set_result(None)
            else:
                given.append(args[2])  # (store, campaign, run, keys, sizes, versions)
                future.set_exception(BrokenProcessPool("the process died"))
            return future

    _aggregate_with_pool(tmp_path / "store", Dies, monkeypatch, caplog)
    assert given[:1] == ["n2"]  # n1 was read in the thread, before a second batch was certain
    assert not list(scratch.glob("pvbench-compact-*"))
    con = build_tables(open_store(str(tmp_path / "store")), "syn", extras=False)
    assert headline_n(con) == {"fast": 9, "slow": 9}


def test_a_campaign_of_one_batch_starts_no_reader_process(tmp_path, monkeypatch):
    from pvbench.analytics import runner

    write(tmp_path, night("n1", 1) + night("n2", 2))  # two runs, one batch

    def no_process(*args, **kwargs):
        raise AssertionError("a reader process was started for a single batch")

    monkeypatch.setattr(compact, "ProcessPoolExecutor", no_process)
    monkeypatch.setattr(runner, "cpu_limit", lambda: 2)
    aggregate(open_store(str(tmp_path)), "syn")
    con = build_tables(open_store(str(tmp_path)), "syn", extras=False)
    assert headline_n(con) == {"fast": 6, "slow": 6}


def test_a_reader_process_that_refuses_a_batch_leaves_no_folder_behind(tmp_path, monkeypatch, caplog):
    # a pool found broken when a batch is submitted: the runs submitted before it are cleaned up
    import tempfile
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    write(tmp_path / "store", night("n1", 1) + night("n2", 2) + night("n3", 3) + night("n4", 4))
    monkeypatch.setattr(compact, "BATCH_RUNS", 2)  # batches n1+n2, then n3+n4
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))

    class BreaksOnSecond(_FakePool):
        submitted = 0

        def submit(self, fn, *args):
            future = Future()
            if not args:  # _started
                future.set_result(None)
                return future
            self.submitted += 1
            if self.submitted > 1:
                raise BrokenProcessPool("the process died")
            future.set_result(fn(*args))  # read here: a batch folder exists for it
            return future

    _aggregate_with_pool(tmp_path / "store", BreaksOnSecond, monkeypatch, caplog)
    assert not list(scratch.glob("pvbench-compact-*"))
    con = build_tables(open_store(str(tmp_path / "store")), "syn", extras=False)
    assert headline_n(con) == {"fast": 12, "slow": 12}


def test_a_valid_documents_row_is_the_row_any_other_row_is_written_as():
    # the reader formats a valid document's row directly (the hot path); it must be row_line's row
    import json

    from pvbench.analytics.tables import row_line

    key, version = 'results/campaign=c/run=r "quoted" é/result.json', "1732000000123456789"
    row = {"source_key": key, "size": 2048, "version": version, "cell_key": key, "problem": None, "reason": None}
    fast = compact._valid_row(json.dumps(key), 2048, json.dumps(version), json.dumps(key))
    assert fast.endswith("\n") and json.loads(fast) == json.loads(row_line(row, compact.DOCUMENT_COLUMNS))
    assert list(json.loads(fast)) == list(compact.DOCUMENT_COLUMNS)


def _cut_short(path) -> None:
    """A file as a full disk or an interrupted copy leaves it: its first bytes only."""
    path.write_bytes(path.read_bytes()[:300])


def test_a_compact_that_cannot_be_read_is_made_again_from_the_documents(tmp_path):
    # the documents are the archive: a damaged compact table costs a warning and a rebuild, never
    # the campaign (it failed every aggregation, until the file was removed by hand)
    write(tmp_path, night("n1", 1) + night("n2", 2))
    store = open_store(str(tmp_path))
    aggregate(store, "syn", keep_snapshot=False)  # the runs are read from their compacts
    _cut_short(tmp_path / "compact" / "campaign=syn" / "run=n2" / "occasion_measurements.parquet")
    said: list[str] = []
    aggregate(store, "syn", warn=said.append)  # and writes the snapshot
    assert any("run=n2 cannot be read" in w and "made again from its documents" in w for w in said), said
    assert headline_n(build_tables(store, "syn", extras=False)) == {"fast": 6, "slow": 6}
    # adding a run while another run's compact is damaged (and read: no snapshot holds the run):
    # that run is made again, the new one added
    shutil.rmtree(tmp_path / "snapshot")
    write(tmp_path, night("n3", 3))
    _cut_short(tmp_path / "compact" / "campaign=syn" / "run=n1" / "run_cells.parquet")
    said.clear()
    aggregate(store, "syn", "n3", warn=said.append, keep_snapshot=False)
    assert any("run=n1 cannot be read" in w for w in said), said
    assert headline_n(build_tables(store, "syn", extras=False)) == {"fast": 9, "slow": 9}
