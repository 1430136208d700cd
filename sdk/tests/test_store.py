"""Both store backends, against a real directory and a real MinIO server."""

import pytest

from pvbench.results.schema import CellIdentity
from pvbench.store import LocalStore, open_store
from pvbench.store.base import StoreError
from pvbench.store.layout import PARQUET_TYPE, analytics_prefix, slug
from pvbench.store.s3 import S3Store


def _identity(campaign, run, occasion, storage_class, profile, workload, rep) -> CellIdentity:
    return CellIdentity(
        campaign=campaign,
        run=run,
        occasion=occasion,
        storage_class=storage_class,
        profile=profile,
        workload=workload,
        rep=rep,
    )


def test_key_layout_is_hive_partitioned_and_slugged():
    key = _identity("Thesis 2023", "azure", "1", "Azure Disk Storage", "imported", "Random read IOPS", 3)
    assert key.result_key() == (
        "results/campaign=thesis-2023/run=azure/occasion=1/storage_class=azure-disk-storage/volume=filesystem-rwo/"
        "profile=imported/workload=random-read-iops/rep=3/result.json"
    )
    assert slug("rook-ceph.rbd") == "rook-ceph.rbd"  # DNS-1123 names are their own slug
    assert analytics_prefix("c") == "analytics/campaign=c/run=all"
    with pytest.raises(ValueError):
        slug("  ")


@pytest.mark.parametrize(("campaign", "run"), [("Thesis 2023", "Run 1"), ("c", "r.1_x")])
def test_keys_parse_back_as_the_layout_builds_them(campaign, run):
    """Every parser of store.layout reads back what its builders write (one format, both ways)."""
    import duckdb

    from pvbench.store import layout

    c, r = slug(campaign), slug(run)
    assert layout.parse_report_key(f"{layout.report_prefix(campaign, run)}/{layout.REPORT_INDEX}") == (c, r)
    assert layout.parse_report_key(f"{layout.report_prefix(campaign)}/{layout.REPORT_INDEX}") == (c, layout.ALL_RUNS)
    file = layout.compact_table_file("result_rows")
    key = f"{layout.compact_prefix(campaign, run)}/{file}"
    assert layout.parse_compact_key(key) == (c, r, file)
    result_key = _identity(campaign, run, "o", "sc", "p", "w", 1).result_key()
    assert layout.run_of(key) == layout.run_of(result_key) == (c, r)
    # a compact named in an error: by its key, a local path, an s3:// URL, quoted or not
    for text in (key, f"IO Error: cannot open '/tmp/pvbench-x/{key}'", f"reading s3://bucket/{key} failed"):
        assert layout.find_compact(text) == (layout.compact_prefix(campaign, run), c, r)
    assert layout.find_compact(text).prefix == layout.compact_prefix(campaign, run)
    # the same pattern in SQL (DuckDB's RE2), as snapshot.py reads a compact file's run from its path
    pattern = layout.COMPACT_FILE_PATTERN
    got = duckdb.connect().execute(
        f"SELECT regexp_extract(?, '{pattern}', 1), regexp_extract(?, '{pattern}', 2)", [f"/tmp/copy/{key}"] * 2
    )
    assert got.fetchone() == (c, r)
    # keys that are not what each parser reads
    assert layout.parse_report_key(f"{layout.report_prefix(campaign)}/_app/x.js") is None
    assert layout.parse_report_key(f"{layout.analytics_prefix(campaign)}/report_overview.parquet") is None
    assert layout.parse_compact_key(f"{layout.compact_prefix(campaign)}/{file}") is None
    assert layout.parse_compact_key(f"{layout.compact_prefix(campaign, run)}/more/{file}") is None
    assert layout.parse_compact_key(result_key) is None
    assert layout.find_compact(f"{layout.results_prefix(campaign, run)}/x") is None


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


def test_a_local_store_takes_its_root_as_a_string(tmp_path):
    store = LocalStore(str(tmp_path))  # what a script writes; keys are joined to the root with /
    store.put_bytes("results/a/result.json", b"one")
    assert store.root == tmp_path and store.get_bytes("results/a/result.json") == b"one"


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


def test_labels_with_one_slug_are_refused():
    from pvbench.store.layout import check_distinct, check_distinct_keys

    check_distinct("occasion", ["night", "day"])
    with pytest.raises(ValueError, match="'Night' and 'night'.*occasion=night"):
        check_distinct("occasion", ["Night", "night"])
    with pytest.raises(ValueError, match="listed twice"):
        check_distinct("occasion", ["night", "night"])
    a = _identity("c", "r", "o", "sc", "custom", "read", 1)
    with pytest.raises(ValueError, match="one would overwrite the other"):
        check_distinct_keys([("first", a), ("second", _identity("c", "r", "o", "sc", "custom", "read", 1))])


def test_failed_local_write_leaves_no_temporary_file(tmp_path):
    store = LocalStore(tmp_path)
    (tmp_path / "results").write_text("a file where a directory goes")
    with pytest.raises(StoreError, match="cannot write"):
        store.put_bytes("results/a/result.json", b"x")
    (tmp_path / "results").unlink()
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "result.json").mkdir()  # rename onto a directory fails after the write
    with pytest.raises(StoreError):
        store.put_bytes("results/result.json", b"x")
    assert not list(tmp_path.rglob("*.tmp"))


@pytest.mark.parametrize("endpoint", ["user:pass@127.0.0.1:9000", "127.0.0.1:9000/path", "http://a b"])
def test_endpoint_must_be_host_port(monkeypatch, endpoint):
    monkeypatch.setenv("PVBENCH_S3_ENDPOINT", endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "y")
    with pytest.raises(StoreError, match="not host:port") as err:
        open_store("s3://bucket/p")
    assert "pass@" not in str(err.value)


def test_check_finds_a_missing_bucket_and_wrong_credentials(s3_store_url, monkeypatch):
    open_store(s3_store_url).check()  # the fixture's bucket: fine, and no check object left behind
    assert not list(open_store(s3_store_url).list_keys(""))
    with pytest.raises(StoreError, match="does not exist"):
        open_store("s3://no-such-bucket-here/p").check()
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    with pytest.raises(StoreError, match="SignatureDoesNotMatch"):
        open_store(s3_store_url).check()


def test_spool_failure_does_not_lose_an_uploaded_result(tmp_path, s3_store_url):
    from pvbench.cells.publish import publish
    from pvbench.results.schema import CellIdentity, DirectionMetrics, Provenance, ResultDocument, WorkloadSpec

    doc = ResultDocument(
        identity=CellIdentity(
            campaign="c", run="r", occasion="o", storage_class="sc", profile="p", workload="w", rep=1
        ),
        workload=WorkloadSpec(),
        provenance=Provenance(source="test", pvbench_version="0"),
        metrics=[DirectionMetrics(direction="read", iops=1.0)],
    )
    spool = tmp_path / "spool"
    spool.write_text("not a directory: every spool write fails")
    outcome = publish(doc, "{}", open_store(s3_store_url), spool)
    assert outcome.stored and "not spooled" in outcome.error
    assert open_store(s3_store_url).exists(outcome.key)
    # both down: not stored, and the error says it was not spooled either
    bad = open_store(str(tmp_path / "store"))
    (tmp_path / "store").write_text("not a directory either")
    outcome = publish(doc, "{}", bad, spool)
    assert not outcome.stored and outcome.spooled_at is None and "not spooled either" in outcome.error


def test_local_listing_in_threads_is_in_key_order_like_s3(tmp_path, monkeypatch):
    """The runs' folders are walked in threads; the listing is still in key order (a folder's
    files, then its subfolders'), from any prefix, with one thread or many."""
    from pvbench.store import local

    store = open_store(str(tmp_path))
    keys = [
        f"results/campaign=c/run=r{r}/occasion=o/storage_class=s{s}/rep={rep}/{name}"
        for r in (3, 1, 2)
        for s in (2, 1)
        for rep in (1, 2)
        for name in ("result.json", "fio.json")
    ] + ["results/campaign=c/README", "results/top.json"]
    for key in keys:
        store.put_bytes(key, key.encode())
    reads = iter(range(0, 10**9, 5000))  # every folder's walk "reads the disk": threads from the second
    for threads, disk_reads in ((1, None), (4, None), (4, lambda: next(reads))):
        monkeypatch.setattr(local, "LIST_THREADS", threads)
        if disk_reads is not None:
            monkeypatch.setattr(local, "_disk_reads", disk_reads)
        for prefix in ("results", "results/campaign=c", "results/campaign=c/run=r2"):
            listed = [o.key for o in store.list_objects(prefix)]
            assert sorted(listed) == sorted(k for k in keys if k.startswith(prefix + "/"))
            # depth first, name order: every file of a folder before those of its subfolders
            assert listed == sorted(
                listed, key=lambda k: [(i != k.count("/"), part) for i, part in enumerate(k.split("/"))]
            )


def test_local_delete_leaves_no_empty_folders_and_keeps_the_root(tmp_path):
    # removed snapshot generations must not leave a folder each behind in a local store
    store = LocalStore(tmp_path / "store")
    store.put_bytes("snapshot/campaign=c/g1/a.parquet", b"x")
    store.put_bytes("snapshot/campaign=c/g1/b.parquet", b"x")
    store.put_bytes("snapshot/campaign=c/manifest.json", b"{}")
    store.delete("snapshot/campaign=c/g1/a.parquet")
    assert (tmp_path / "store/snapshot/campaign=c/g1").is_dir()  # b is still there
    store.delete("snapshot/campaign=c/g1/b.parquet")
    assert not (tmp_path / "store/snapshot/campaign=c/g1").exists()
    assert (tmp_path / "store/snapshot/campaign=c/manifest.json").exists()
    store.delete("snapshot/campaign=c/manifest.json")
    store.delete("snapshot/campaign=c/not-there.json")  # no error
    assert (tmp_path / "store").is_dir() and not any((tmp_path / "store").iterdir())


@pytest.mark.parametrize("kind", ["local", "s3"])
def test_get_many_reads_in_order_and_an_unreadable_key_does_not_stop_the_others(kind, tmp_path, request):
    url = str(tmp_path / "store") if kind == "local" else request.getfixturevalue("s3_store_url")
    store = open_store(url)
    keys = [f"results/run=r/rep={i}/result.json" for i in range(40)]
    for i, key in enumerate(keys):
        store.put_bytes(key, f"document {i} ".encode() * (i + 1))
    # larger than one os.read of the local store (READ_CHUNK), and empty: read whole all the same
    store.put_bytes(keys[3], bytes(range(256)) * 1000)
    store.put_bytes(keys[4], b"")
    wanted = keys[:7] + ["results/run=r/missing/result.json"] + keys[7:]
    got = list(store.get_many(wanted))
    assert [key for key, _ in got] == wanted
    for key, content in got:
        if "missing" in key:
            assert isinstance(content, Exception)
            if kind == "s3":  # the SDK's word for it, as get_bytes gives it
                assert "NoSuchKey" in str(content)
        else:
            assert content == store.get_bytes(key)
            if kind == "local":  # os.read's file is the file as Python's own reader sees it
                assert content == (tmp_path / "store" / key).read_bytes()
    assert dict(got)[keys[3]] == bytes(range(256)) * 1000 and dict(got)[keys[4]] == b""
    if kind == "s3":
        assert store._multi_get  # a missing object is not a failure of the way objects are read


@pytest.mark.parametrize("kind", ["local", "s3"])
def test_put_many_writes_each_and_raises_once_every_write_has_ended(kind, tmp_path, request, monkeypatch):
    """What an aggregation uploads (its ~30 tables, a run's compact, a snapshot part) goes through
    put_many: on S3 at once. Every object is written with its content type; a failing write does
    not stop the others, and its error is raised once they have ended."""
    url = str(tmp_path / "store") if kind == "local" else request.getfixturevalue("s3_store_url")
    store = open_store(url)
    items = [(f"analytics/t{i}.parquet", f"table {i}".encode() * (i + 1), PARQUET_TYPE) for i in range(12)]
    store.put_many(items)
    assert [store.get_bytes(key) for key, _, _ in items] == [data for _, data, _ in items]
    if kind == "s3":
        stat = store.client.stat_object(store.bucket, store._key(items[5][0]))
        assert stat.content_type == PARQUET_TYPE
    written, put_bytes = [], type(store).put_bytes

    def failing_once(self, key, data, content_type="application/json"):
        if key.endswith("t3.parquet"):
            raise StoreError(f"cannot write {key}")
        put_bytes(self, key, data, content_type)
        written.append(key)

    monkeypatch.setattr(type(store), "put_bytes", failing_once)
    with pytest.raises(StoreError, match="t3.parquet"):
        store.put_many([(key, b"again", content_type) for key, _, content_type in items])
    assert sorted(written) == sorted(key for key, _, _ in items if not key.endswith("t3.parquet"))
    assert store.get_bytes("analytics/t11.parquet") == b"again"


def test_s3_get_many_with_libcurl_in_order_and_bounded(s3_store_url):
    """The multi interface answers in the order asked, however the transfers finish, with at
    most ``ahead`` URLs fetched beyond the one answered next."""
    from pvbench.store import multi_get

    assert multi_get.available()  # a dependency: the fast way is the one tested
    store = open_store(s3_store_url)
    keys = [f"k/{i:03d}" for i in range(30)]
    for i, key in enumerate(keys):
        store.put_bytes(key, b"x" * (1 + 5000 * (i % 3)))  # sizes that finish out of order
    asked = []

    def urls():
        for key in keys:
            asked.append(key)
            yield store._presigned(key)

    answered = 0
    for response, key in zip(multi_get.get_all(urls(), connections=3, ahead=4), keys):
        assert response.status == 200 and response.body == store.get_bytes(key)
        answered += 1
        assert len(asked) <= answered - 1 + 4  # never more than `ahead` beyond the next answer
    assert answered == len(keys)


def test_s3_get_many_keeps_its_connections_from_one_call_to_the_next(s3_store_url, monkeypatch):
    """A full aggregation reads run after run: each get_many reuses the connections the one before
    opened (one libcurl share per store), with no more at once than it has documents."""
    from pvbench.store import multi_get

    store = open_store(s3_store_url)
    keys = [f"k/{i:03d}" for i in range(20)]
    for key in keys:
        store.put_bytes(key, key.encode())
    calls = []
    get_all = multi_get.get_all

    def recorded(urls, connections, **kw):
        calls.append((connections, kw["share"]))
        return get_all(urls, connections, **kw)

    monkeypatch.setattr(multi_get, "get_all", recorded)
    assert dict(store.get_many(keys)) == {key: key.encode() for key in keys}
    made = store._connections.made
    assert dict(store.get_many(keys[:5])) == {key: key.encode() for key in keys[:5]}
    (first, share), (second, again) = calls
    assert isinstance(share, multi_get.Connections) and again is share
    assert (first, second) == (20, 5)  # never more connections than documents (S3_CONNECTIONS: 64)
    assert 1 <= made <= 20 and share.made == made  # the second call opened none


def s3_settings(monkeypatch) -> None:
    """The environment an s3:// store needs (nothing is contacted: settings are read at open)."""
    monkeypatch.setenv("PVBENCH_S3_ENDPOINT", "127.0.0.1:9000")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "y")


@pytest.mark.parametrize("given, connections", [(None, 64), ("8", 8), (" 256 ", 256)])
def test_how_many_gets_an_s3_store_keeps_in_flight_is_set_by_the_environment(monkeypatch, given, connections):
    s3_settings(monkeypatch)
    if given is None:
        monkeypatch.delenv("PVBENCH_S3_CONNECTIONS", raising=False)
    else:
        monkeypatch.setenv("PVBENCH_S3_CONNECTIONS", given)
    assert open_store("s3://bucket/p").settings.connections == connections


@pytest.mark.parametrize("given", ["0", "-4", "many", "257"])
def test_a_bad_number_of_s3_connections_is_refused_before_anything_runs(monkeypatch, given):
    s3_settings(monkeypatch)
    monkeypatch.setenv("PVBENCH_S3_CONNECTIONS", given)
    with pytest.raises(StoreError, match="PVBENCH_S3_CONNECTIONS .* is not a whole number from 1 to 256"):
        open_store("s3://bucket/p")


def test_s3_get_many_falls_back_to_the_sdk_when_libcurl_cannot_read(s3_store_url, monkeypatch, caplog):
    """A way that fails (here every URL points where nothing listens, as a refused certificate
    or a proxy in the way would fail it) is left, with one warning: the SDK reads the rest."""
    store = open_store(s3_store_url)
    keys = [f"k/{i}" for i in range(12)]
    for key in keys:
        store.put_bytes(key, key.encode())
    monkeypatch.setattr(store, "_presigned", lambda key: f"http://127.0.0.1:9/{key}")  # discard port
    with caplog.at_level("WARNING", logger="pvbench.store"):
        got = dict(store.get_many(keys))
    assert got == {key: key.encode() for key in keys}
    assert not store._multi_get
    assert sum("reading through the S3 SDK instead" in r.getMessage() for r in caplog.records) == 1
    assert dict(store.get_many(keys[:2])) == {key: key.encode() for key in keys[:2]}  # stays on the SDK
    # its threads each keep their connection: urllib3 closed all but one after every request
    assert not [r for r in caplog.records if "Connection pool is full" in r.getMessage()]


def test_local_listing_walks_in_threads_only_once_the_disk_is_read(tmp_path, monkeypatch):
    """Cached folders are walked in the calling thread (threads would only contend for the GIL);
    once a folder's walk read the disk, the rest go to LIST_THREADS threads."""
    from pvbench.store import local

    store = open_store(str(tmp_path))
    keys = [f"results/campaign=c/run=r{r}/rep={rep}/result.json" for r in range(6) for rep in (1, 2)]
    for key in keys:
        store.put_bytes(key, b"{}")
    pools = []
    real_pool = local.ThreadPoolExecutor
    monkeypatch.setattr(local, "ThreadPoolExecutor", lambda n: pools.append(n) or real_pool(n))
    counter = {"blocks": 0}

    def disk_reads():
        return counter["blocks"]

    monkeypatch.setattr(local, "_disk_reads", disk_reads)
    assert [o.key for o in store.list_objects("results")] == keys  # cached: no thread
    assert pools == []
    walk = local.LocalStore._walk

    def cold_third(self, folder):
        if folder.endswith("run=r2"):
            counter["blocks"] += local.DISK_READ_BLOCKS + 1  # this walk had to read the disk
        return walk(self, folder)

    monkeypatch.setattr(local.LocalStore, "_walk", cold_third)
    assert [o.key for o in store.list_objects("results")] == keys
    assert pools == [local.LIST_THREADS]  # r3… walked in threads, still in key order


def test_s3_listing_pages_through_any_key_like_the_sdk(s3_store_url, monkeypatch):
    """Pages of a few keys each (here 3), keys S3 would garble unencoded in XML: the listing is
    every key once, in order, with the size and ETag the SDK's own listing gives."""
    from pvbench.store import s3

    store = open_store(s3_store_url)
    odd = ["a b.json", "a+b.json", "100%.json", "é/ü.json", "x&y<z>.json", "q?r=s#t.json"]
    keys = sorted([f"results/k{i:02d}" for i in range(8)] + [f"results/{name}" for name in odd])
    for i, key in enumerate(keys):
        store.put_bytes(key, b"x" * (i + 1))
    store.put_bytes("resultsX/not-under-the-prefix", b"x")
    monkeypatch.setattr(s3, "LIST_PAGE", 3)
    pages = []
    real = store._list_page
    monkeypatch.setattr(store, "_list_page", lambda prefix, token: pages.append(token) or real(prefix, token))
    listed = list(store.list_objects("results"))
    assert [o.key for o in listed] == keys
    assert len(pages) == 5 and pages[0] is None  # 14 keys, 3 a page: streamed, never asked twice
    sdk = list(store.sdk_list_objects("results", None, len("pvbench/")))
    assert listed == sdk and [o.size for o in listed] == list(range(1, len(keys) + 1))
    assert all(len(o.version) == 32 for o in listed)  # an MD5 ETag, unquoted
    assert store._fast_list


def test_s3_listing_retries_a_failed_page_and_leaves_a_changed_sdk_for_its_listing(s3_store_url, monkeypatch, caplog):
    """A page that fails is asked for again (nothing listed twice or lost); if the SDK's request
    call is not what the listing expects, the SDK's own listing goes on from the last key, with
    one warning, and stays the way for this store."""
    from pvbench.store import s3

    store = open_store(s3_store_url)
    store.backoff_s = 0
    keys = [f"results/k{i:02d}" for i in range(10)]
    for key in keys:
        store.put_bytes(key, b"x")
    monkeypatch.setattr(s3, "LIST_PAGE", 4)
    client = store.client
    real = client._execute
    calls = []

    def flaky(*args, **kwargs):
        calls.append(kwargs["query_params"].get("continuation-token"))
        if len(calls) == 2:
            raise ConnectionResetError("dropped")
        return real(*args, **kwargs)

    monkeypatch.setattr(client, "_execute", flaky)
    assert [o.key for o in store.list_objects("results")] == keys
    assert len(calls) == 4 and calls[1] == calls[2]  # the second page asked for again, same token

    def changed(*args, **kwargs):  # as if _execute had changed for pvbench's call, not for the SDK's own
        ours = "delimiter" not in kwargs["query_params"]  # the SDK's listing always sends one
        calls.append(ours)
        if ours and len(calls) > 1:
            raise TypeError("_execute() got an unexpected keyword argument 'query_params'")
        return real(*args, **kwargs)

    calls.clear()
    monkeypatch.setattr(client, "_execute", changed)
    with caplog.at_level("WARNING", logger="pvbench.store"):
        assert [o.key for o in store.list_objects("results")] == keys  # first page fast, the rest by the SDK
        assert [o.key for o in store.list_objects("results")] == keys
    assert not store._fast_list
    warned = [r.getMessage() for r in caplog.records if "listing through the SDK instead" in r.getMessage()]
    assert len(warned) == 1 and "unexpected keyword argument" in warned[0]


def test_s3_listing_reads_an_answer_without_the_s3_namespace():
    """Some S3-compatible stores answer without S3's XML namespace; a truncated page without a
    continuation token is an error, not the end of the listing."""
    from pvbench.store.s3 import _parse_list_page

    page = (
        b"<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>t2</NextContinuationToken>"
        b"<Contents><Key>a%20b%2Bc</Key><Size>12</Size><ETag>&quot;e1&quot;</ETag></Contents>"
        b"<Contents><Key>d</Key><Size>0</Size><ETag>e2</ETag></Contents></ListBucketResult>"
    )
    assert _parse_list_page(page) == ([("a b+c", 12, "e1"), ("d", 0, "e2")], "t2")
    with pytest.raises(StoreError, match="continuation token"):
        _parse_list_page(page.replace(b"<NextContinuationToken>t2</NextContinuationToken>", b""))
    last = page.replace(b"<IsTruncated>true", b"<IsTruncated>false")
    assert _parse_list_page(last)[1] is None
