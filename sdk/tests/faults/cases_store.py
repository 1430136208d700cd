"""The store, results, import and aggregation: nothing lost, nothing injected, nothing counted twice.

Labels keep their case, store keys are slugs: two labels with one slug must be refused, not
overwrite each other. Aggregation counts each cell once and names every document it leaves out.
A full disk costs no result S3 accepted and leaves no temporary files. A store that is wrong
(URL, credentials, endpoint, bucket) is a one-line error before anything runs.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import time
from pathlib import Path

import yaml

from faults import Case, Ctx, Outcome, clear_error

HEADER = "platform,solution,occasion,occasion_start,run,metric,unit,value\n"


def _csv(ctx: Ctx, *rows: str) -> str:
    path = ctx.tmp / "runs.csv"
    path.write_text(HEADER + "".join(r + "\n" for r in rows))
    return str(path)


def _row(
    solution: str = "Portworx", rep: int = 1, value: str = "100", metric: str = "Random read IOPS", occasion: str = "1"
) -> str:
    return f"Azure,{solution},{occasion},Apr 21 12:38:29 2023,{rep},{metric},IOPS,{value}"


def _results(store: Path) -> list[Path]:
    return sorted(store.rglob("result.json")) if store.exists() else []


def _hidden(path: Path) -> list[Path]:
    return [p for p in path.rglob(".*.tmp")] if path.exists() else []


def _config(ctx: Ctx, **over) -> str:
    (ctx.tmp / "media").mkdir(exist_ok=True)
    cfg = {
        "campaign": "c",
        "store": str(ctx.tmp / "store"),
        "spool": str(ctx.tmp / "spool"),
        "storage_classes": {"local": str(ctx.tmp / "media")},
        "profiles": ["dbench"],
        "tests": ["randread-iops"],
        "repetitions": 1,
        "ramp": "100ms",
        "runtime": "300ms",
        "size": "4M",
    }
    cfg.update(over)
    path = ctx.tmp / "pvbench.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def _nothing_ran(ctx: Ctx, proc, *expect: str) -> Outcome:
    ok, shown = clear_error(proc, *expect)
    stored = _results(ctx.tmp / "store")
    return Outcome(ok and not stored, shown, "nothing ran; store untouched" if not stored else f"{len(stored)} stored")


# ---------------------------------------------------------------- 1. labels vs keys
def occasions_differing_in_case(ctx: Ctx) -> Outcome:
    proc = ctx.cli("local", "run", _config(ctx, occasions=["Night", "night"]), "--dry-run")
    return _nothing_ran(ctx, proc, "'Night'", "'night'", "same key")


def import_labels_one_slug(ctx: Ctx) -> Outcome:
    store = ctx.tmp / "store"
    proc = ctx.cli(
        "import",
        "thesis-csv",
        _csv(ctx, _row("Azure Disk"), _row("azure-disk"), _row("Portworx")),
        "--store",
        str(store),
    )
    ok, shown = clear_error(proc, "'Azure Disk'", "'azure-disk'", "lines 2 and 3")
    stored = _results(store)
    return Outcome(ok and not stored, shown, "nothing imported" if not stored else f"{len(stored)} files written")


def import_row_twice(ctx: Ctx) -> Outcome:
    store = ctx.tmp / "store"
    proc = ctx.cli("import", "thesis-csv", _csv(ctx, _row(), _row(), _row(rep=2)), "--store", str(store))
    err = " ".join(proc.stderr.split())
    stored = _results(store)
    said = "imported 2 result(s)" in err and "line 3: repeats line 2" in err
    ok = proc.returncode == 0 and said and len(stored) == 2 and "Traceback" not in proc.stderr
    return Outcome(ok, f"exit {proc.returncode}: {err[:200]}", f"{len(stored)} files written")


def import_same_cell_two_values(ctx: Ctx) -> Outcome:
    store = ctx.tmp / "store"
    proc = ctx.cli("import", "thesis-csv", _csv(ctx, _row(value="100"), _row(value="120")), "--store", str(store))
    ok, shown = clear_error(proc, "lines 2 and 3", "same cell")
    stored = _results(store)
    return Outcome(ok and not stored, shown, "nothing imported" if not stored else f"{len(stored)} files written")


# ---------------------------------------------------------------- 2. aggregation: once each, nothing silent
def _imported_store(ctx: Ctx, reps: int = 3) -> Path:
    store = ctx.tmp / "store"
    rows = [_row(sc, rep) for sc in ("Portworx", "OpenEBS") for rep in range(1, reps + 1)]
    proc = ctx.cli("import", "thesis-csv", _csv(ctx, *rows), "--store", str(store), "--campaign", "c")
    if proc.returncode != 0:
        raise RuntimeError(f"import failed: {proc.stderr}")
    return store


def _aggregate(ctx: Ctx, store: Path, out: Path | None = None, env: dict[str, str] | None = None):
    out = out or ctx.tmp / "parquet"
    proc = ctx.cli("aggregate", "--store", str(store), "--campaign", "c", "--out", str(out), env=env)
    counts = {}
    if proc.returncode == 0:
        import duckdb

        # results counted: report_cost's per-run n_results (the per-result rows are in the compacts)
        counts["result_rows"] = int(
            duckdb.sql(f"select sum(n_results) from '{out / 'report_cost.parquet'}'").fetchone()[0]
        )
        counts["skipped_results"] = duckdb.sql(f"select count(*) from '{out / 'skipped_results.parquet'}'").fetchone()[
            0
        ]
    return proc, counts


def _copy_key(src: Path, **change: str) -> Path:
    parts = [(p.split("=")[0] + "=" + change[p.split("=")[0]]) if p.split("=")[0] in change else p for p in src.parts]
    dst = Path(*parts)
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    return dst


def result_copied_to_second_key(ctx: Ctx) -> Outcome:
    store = _imported_store(ctx)
    first = _results(store)[0]
    copy = _copy_key(first, rep="9")
    proc, counts = _aggregate(ctx, store)
    err = " ".join(proc.stderr.split())
    key = copy.relative_to(store).as_posix()
    ok = (
        proc.returncode == 0
        and counts.get("result_rows") == 6
        and counts.get("skipped_results") == 1
        and "counted once" in err
        and key in err
        and "Traceback" not in proc.stderr
    )
    return Outcome(
        ok,
        f"exit {proc.returncode}: {err[:200]}",
        f"{counts.get('result_rows')} of 6 results counted; copy listed in skipped_results",
    )


def _bad_documents(ctx: Ctx, docs: dict[str, str], expect_reasons: list[str]) -> Outcome:
    store = _imported_store(ctx)
    template = _results(store)[0]
    keys = []
    for rep, text in enumerate(docs.values(), start=20):
        path = _copy_key(template, rep=str(rep))
        path.write_text(text)
        keys.append(path.relative_to(store).as_posix())
    proc, counts = _aggregate(ctx, store)
    err = " ".join(proc.stderr.split())
    named = all(k in err for k in keys) and all(r in err for r in expect_reasons)
    ok = (
        proc.returncode == 0
        and counts.get("result_rows") == 6
        and counts.get("skipped_results") == len(docs)
        and named
        and "Traceback" not in proc.stderr
    )
    return Outcome(
        ok,
        f"exit {proc.returncode}: {err[:200]}",
        f"{counts.get('result_rows')} of 6 valid results counted; {counts.get('skipped_results')} "
        "left out, each named with its reason (warning + skipped_results table)",
    )


def truncated_document(ctx: Ctx) -> Outcome:
    store_doc = json.dumps({"schema_version": "pvbench.result/v1", "identity": {"campaign": "c"}})
    return _bad_documents(ctx, {"truncated": store_doc[: len(store_doc) // 2]}, ["not valid JSON"])


def foreign_documents(ctx: Ctx) -> Outcome:
    v2 = json.dumps({"schema_version": "pvbench.result/v2", "identity": {}})
    return _bad_documents(
        ctx, {"empty": "", "foo": '{"foo": 1}', "v2": v2}, ["empty file", "no schema_version", "pvbench.result/v2"]
    )


def negative_iops_document(ctx: Ctx) -> Outcome:
    store = _imported_store(ctx)
    src = _results(store)[0]
    doc = json.loads(src.read_text())
    doc["identity"]["rep"] = 30
    doc["metrics"][0]["iops"] = -5
    dst = _copy_key(src, rep="30")
    dst.write_text(json.dumps(doc))
    proc, counts = _aggregate(ctx, store)
    err = " ".join(proc.stderr.split())
    ok = (
        proc.returncode == 0
        and counts.get("result_rows") == 6
        and counts.get("skipped_results") == 1
        and "greater than or equal to 0" in err
        and "Traceback" not in proc.stderr
    )
    return Outcome(
        ok, f"exit {proc.returncode}: {err[:200]}", f"{counts.get('result_rows')} of 6 valid results counted"
    )


# ---------------------------------------------------------------- 4. values: finite, non-negative
def _import_refused(*values: str):
    def run(ctx: Ctx) -> Outcome:
        store = ctx.tmp / "store"
        rows = [_row(rep=i + 1, value=v) for i, v in enumerate(("100",) + values)]
        proc = ctx.cli("import", "thesis-csv", _csv(ctx, *rows), "--store", str(store))
        ok, shown = clear_error(proc, "line 3", "finite, non-negative")
        stored = _results(store)
        return Outcome(ok and not stored, shown, "nothing imported" if not stored else f"{len(stored)} files written")

    return run


# ---------------------------------------------------------------- 3. full disk
@contextlib.contextmanager
def _tmpfs(path: Path, size: str = "64k"):
    path.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True, text=True
    )
    if proc.returncode != 0:
        yield None
        return
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def _fill(path: Path, leave: int = 0) -> None:
    """Fill the file system at path, leaving about ``leave`` bytes."""
    pad = path / "pad"
    pad.write_bytes(b"\0" * leave)
    with contextlib.suppress(OSError), open(path / "filler", "wb") as handle:
        while True:
            handle.write(b"\0" * 4096)
            handle.flush()
    pad.unlink()


SKIPPED_NO_TMPFS = Outcome(True, "skipped: cannot mount a small tmpfs here (needs root)", "-")


def import_into_full_disk(ctx: Ctx) -> Outcome:
    with _tmpfs(ctx.tmp / "full") as disk:
        if disk is None:
            return SKIPPED_NO_TMPFS
        _fill(disk, leave=8192)
        store = disk / "store"
        rows = [_row(sc, rep) for sc in ("Portworx", "OpenEBS", "Rook-Ceph") for rep in range(1, 6)]
        proc = ctx.cli("import", "thesis-csv", _csv(ctx, *rows), "--store", str(store))
        err = " ".join(proc.stderr.split())
        stored, hidden = _results(store), _hidden(disk)
        said = f"imported {len(stored)} result(s)" in err and "No space left" in err
        ok = proc.returncode != 0 and said and not hidden and "Traceback" not in proc.stderr
        return Outcome(
            ok,
            f"exit {proc.returncode}: {err[:200]}",
            f"{len(stored)} of 15 written and counted as such; {len(hidden)} temporary files left",
        )


def spool_on_full_disk(ctx: Ctx) -> Outcome:
    with _tmpfs(ctx.tmp / "spool") as spool:
        if spool is None:
            return SKIPPED_NO_TMPFS
        _fill(spool)
        ctx.minio.make_bucket("spoolfull")
        proc = ctx.cli("local", "run", _config(ctx, store="s3://spoolfull/p", spool=str(spool)), "--no-aggregate")
        err = " ".join(proc.stderr.split())
        from minio import Minio

        m = ctx.minio
        client = Minio(m.endpoint, access_key=m.access_key, secret_key=m.secret_key, secure=False)
        stored = [
            o.object_name
            for o in client.list_objects("spoolfull", prefix="p/results", recursive=True)
            if o.object_name.endswith("result.json")
        ]
        hidden = _hidden(spool)
        ok = (
            proc.returncode == 0
            and "stored 1" in err
            and len(stored) == 1
            and not hidden
            and "Traceback" not in proc.stderr
        )
        return Outcome(
            ok,
            f"exit {proc.returncode}: {err[-200:]}",
            f"{len(stored)} of 1 result in S3; {len(hidden)} temporary files left in the spool",
        )


def aggregate_with_full_temporary_folder(ctx: Ctx) -> Outcome:
    # the documents an aggregation compacts are batched in the temporary folder (TMPDIR)
    with _tmpfs(ctx.tmp / "tmpdir", size="1m") as tmpdir:
        if tmpdir is None:
            return SKIPPED_NO_TMPFS
        store = _imported_store(ctx, reps=10)  # 20 documents, ~40 KB a batch
        # room for Python's probe of the folder (a folder with none at all is passed over for
        # /tmp), not for the batch
        _fill(tmpdir, leave=8192)
        proc, _ = _aggregate(ctx, store, env={"TMPDIR": str(tmpdir)})
        ok, shown = clear_error(proc, "temporary folder", "no space left", "TMPDIR")
        left = [p.name for p in tmpdir.iterdir() if p.name != "filler"]
        (tmpdir / "filler").unlink()
        again, counts = _aggregate(ctx, store, env={"TMPDIR": str(tmpdir)})
        ok = ok and not left and again.returncode == 0 and counts.get("result_rows") == 20
        return Outcome(
            ok,
            shown,
            f"{len(left)} temporary files left; with room again: {counts.get('result_rows')} of 20 results counted",
        )


def aggregate_out_on_full_disk(ctx: Ctx) -> Outcome:
    with _tmpfs(ctx.tmp / "full", size="256k") as disk:
        if disk is None:
            return SKIPPED_NO_TMPFS
        store = _imported_store(ctx)
        first, _ = _aggregate(ctx, store, out=disk / "tables")  # the tables of 6 results fit
        before = {p.name: p.read_bytes() for p in (disk / "tables").iterdir()}
        more = [_row(sc, rep, value="200", occasion="2") for sc in ("Portworx", "OpenEBS") for rep in range(1, 4)]
        ctx.cli("import", "thesis-csv", _csv(ctx, *more), "--store", str(store), "--campaign", "c")
        _fill(disk)
        proc, _ = _aggregate(ctx, store, out=disk / "tables")
        ok, shown = clear_error(proc, "cannot write the campaign's tables", "no space left")
        after = {p.name: p.read_bytes() for p in (disk / "tables").iterdir()}
        return Outcome(
            ok and first.returncode == 0 and after == before,
            shown,
            f"the {len(before)} tables of the aggregation before: "
            + ("all as they were, none replaced" if after == before else "CHANGED"),
        )


def aggregate_run_that_is_not_there(ctx: Ctx) -> Outcome:
    store = _imported_store(ctx)
    first, _ = _aggregate(ctx, store)
    out = ctx.tmp / "parquet"
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    proc = ctx.cli("aggregate", "--store", str(store), "--campaign", "c", "--run", "azur", "--out", str(out))
    ok, shown = clear_error(proc, "run 'azur' has no results", "1 compacted run(s): azure")
    after = {p.name: p.read_bytes() for p in out.iterdir()}
    return Outcome(
        ok and first.returncode == 0 and after == before,
        shown,
        f"the {len(before)} tables of the aggregation before: " + ("as they were" if after == before else "CHANGED"),
    )


# ---------------------------------------------------------------- 5. store URLs and settings
NO_S3 = {"PVBENCH_S3_ENDPOINT": "", "S3_ENDPOINT": "", "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""}


def _store_url_refused(url: str, *expect: str):
    def run(ctx: Ctx) -> Outcome:
        proc = ctx.cli("local", "run", _config(ctx, store=url), "--dry-run", env=NO_S3)
        return _nothing_ran(ctx, proc, *expect)

    return run


def _timed(ctx: Ctx, *args: str, env: dict[str, str] | None = None):
    """The command and its wall time, which the table shows (a busy machine's says little: the
    cases assert on what was tried, not on how long it took)."""
    start = time.monotonic()
    proc = ctx.cli(*args, env=env)
    return proc, time.monotonic() - start


def wrong_secret(ctx: Ctx) -> Outcome:
    """Refused at the first answer: a wrong secret is not a transient failure, never retried
    (a retried one says "failed after N attempts", after seconds of backoff)."""
    ctx.minio.make_bucket("wrongsecret")
    proc, took = _timed(ctx, "store", "ls", "s3://wrongsecret/p", env={"AWS_SECRET_ACCESS_KEY": "not-the-secret"})
    ok, shown = clear_error(proc, "SignatureDoesNotMatch")
    retried = "failed after" in " ".join(proc.stderr.split())
    return Outcome(ok and not retried, f"{shown} ({took:.1f} s)", "store untouched")


def endpoint_with_userinfo(ctx: Ctx) -> Outcome:
    spool = ctx.tmp / "spool"
    spool.mkdir()
    endpoint = f"{ctx.minio.access_key}:{ctx.minio.secret_key}@{ctx.minio.endpoint}"
    proc, took = _timed(
        ctx, "store", "flush", "--spool", str(spool), "--store", "s3://bench/p", env={"PVBENCH_S3_ENDPOINT": endpoint}
    )
    ok, shown = clear_error(proc, "not host:port")  # refused as a setting, before any request
    secret_shown = ctx.minio.secret_key in proc.stderr
    return Outcome(
        ok and not secret_shown,
        f"{shown} ({took:.1f} s)",
        "spool untouched; the password is not echoed" if not secret_shown else "password echoed",
    )


def missing_bucket(ctx: Ctx) -> Outcome:
    proc = ctx.cli("local", "run", _config(ctx, store="s3://no-such-bucket/p"), "--dry-run")
    return _nothing_ran(ctx, proc, "no-such-bucket", "does not exist")


def lease_left_by_a_machine_gone(ctx: Ctx) -> Outcome:
    """An S3 store's campaign lease (store.locks.StoreLease) left by an aggregation on another
    machine that died: waited for, then taken over once it is the TTL old (2 s here), by the
    store's clock; the aggregation finishes and removes it.

    The holder is alive (this case renews its lease, as a live holder does) until the aggregation
    says it waits, and dies then: how soon the aggregation got to the lease (its start, on a busy
    machine) cannot make the lease look old already."""
    import io
    import threading

    from minio import Minio

    ctx.minio.make_bucket("leftlease")
    url = "s3://leftlease/p"
    rows = [_row(sc, rep) for sc in ("Portworx", "OpenEBS") for rep in (1, 2, 3)]
    ctx.cli("import", "thesis-csv", _csv(ctx, *rows), "--store", url, "--campaign", "c")
    client = Minio(ctx.minio.endpoint, access_key=ctx.minio.access_key, secret_key=ctx.minio.secret_key, secure=False)
    ttl_s = 2.0
    renewals = 0

    def renew() -> None:  # each write a new content (a new ETag), as a live holder's renewals
        nonlocal renewals
        renewals += 1
        holder = {
            "holder": "pid 4242 on elsewhere",
            "host": "elsewhere",
            "pid": 4242,
            "token": "t",
            "renewal": renewals,
        }
        lease = json.dumps(holder).encode()
        client.put_object("leftlease", "p/.locks/campaign=c.lock", io.BytesIO(lease), len(lease))

    renew()
    out = ctx.tmp / "tables"
    proc = ctx.start(
        "aggregate",
        *("--store", url, "--campaign", "c", "--out", str(out)),
        env={"PVBENCH_LOCK_TTL_S": f"{ttl_s:g}"},
        stdout=subprocess.DEVNULL,
    )
    said_lines: list[str] = []
    waits = threading.Event()

    def read_stderr() -> None:
        for line in proc.stderr:
            said_lines.append(line)
            if "waiting for it to finish" in " ".join("".join(said_lines).split()):
                waits.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    # alive until the aggregation says it waits (or ends without saying it: the rule then fails)
    deadline = time.monotonic() + 120
    while not waits.wait(ttl_s / 8) and proc.poll() is None and time.monotonic() < deadline:
        renew()
    renewed_while_waited = waits.is_set()
    try:  # the holder is gone now: its lease is the TTL old a few seconds later, and taken over
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    reader.join(timeout=30)
    err = " ".join("".join(said_lines).split())
    said = "(pid 4242 on elsewhere): waiting for it to finish" in err and "warning: took over the lock" in err
    said = said and err.find("waiting for it to finish") < err.find("warning: took over the lock")
    left = [o.object_name for o in client.list_objects("leftlease", prefix="p/.locks/", recursive=True)]
    ok = (
        proc.returncode == 0
        and renewed_while_waited
        and said
        and (out / "summary.parquet").exists()
        and not left
        and "Traceback" not in err
    )
    shown = err[err.find("warning: took over") :][:170] if "warning: took over" in err else err[:200]
    return Outcome(
        ok,
        f"exit {proc.returncode}: {shown}",
        "the 6 results aggregated; the dead holder's lease taken over, then removed" if ok else f"lease left: {left}",
    )


def flush_missing_spool(ctx: Ctx) -> Outcome:
    proc = ctx.cli("store", "flush", "--spool", str(ctx.tmp / "nonexistent"), "--store", str(ctx.tmp / "store"))
    ok, shown = clear_error(proc, "does not exist")
    return Outcome(ok and "uploaded 0" not in proc.stderr, shown, "nothing uploaded; nothing claimed")


def read_only_store(ctx: Ctx) -> Outcome:
    store = ctx.tmp / "store"
    store.mkdir()
    (store / "results").write_text("a file where the results directory goes\n")
    proc = ctx.cli("local", "run", _config(ctx, store=str(store)), "--dry-run")
    ok, shown = clear_error(proc, "not writable")
    return Outcome(ok, shown, "nothing ran")


CASES = [
    Case("store", "occasions `[Night, night]` (one key)", occasions_differing_in_case),
    Case("store", "CSV import: `Azure Disk` and `azure-disk` (one key)", import_labels_one_slug),
    Case("store", "CSV import: a row repeated verbatim", import_row_twice),
    Case("store", "CSV import: one cell, two values", import_same_cell_two_values),
    Case("store", "result.json copied to a second key, then aggregate", result_copied_to_second_key),
    Case("store", "a truncated result.json in the campaign", truncated_document),
    Case("store", 'an empty, a `{"foo":1}` and a schema v2 document', foreign_documents),
    Case("store", "a result.json with negative IOPS", negative_iops_document),
    Case("store", "CSV value `nan`", _import_refused("nan")),
    Case("store", "CSV value `inf`", _import_refused("inf")),
    Case("store", "CSV value `-5`", _import_refused("-5")),
    Case("store", "local store on a full disk (import)", import_into_full_disk),
    Case("store", "spool on a full disk, S3 up", spool_on_full_disk, needs=("fio", "minio")),
    Case("store", "`aggregate` with its temporary folder full", aggregate_with_full_temporary_folder),
    Case("store", "`aggregate --out` on a full disk", aggregate_out_on_full_disk),
    Case("store", "`aggregate --run` naming a run the campaign lacks (a typo)", aggregate_run_that_is_not_there),
    Case("store", "store `s3://` (no bucket)", _store_url_refused("s3://", "names no bucket")),
    Case("store", "store `ftp://host/x`", _store_url_refused("ftp://host/x", "unsupported store URL")),
    Case(
        "store",
        "store `s3://bench` without credentials (--dry-run)",
        _store_url_refused("s3://bench/p", "PVBENCH_S3_ENDPOINT", "AWS_ACCESS_KEY_ID"),
    ),
    Case("store", "bucket missing (--dry-run)", missing_bucket, needs=("minio",)),
    Case("store", "`store ls` with a wrong secret", wrong_secret, needs=("minio",)),
    Case("store", "endpoint `user:pass@host:port`, `store flush`", endpoint_with_userinfo, needs=("minio",)),
    Case(
        "store",
        "`aggregate` on S3 while a machine gone still holds the campaign's lease",
        lease_left_by_a_machine_gone,
        needs=("minio",),
    ),
    Case("store", "`store flush --spool /nonexistent`", flush_missing_spool),
    Case("store", "store directory not writable (--dry-run)", read_only_store),
]
