"""An aggregation stopped part-way leaves nothing running and nothing half-done, proven with real
processes: `pvbench aggregate` of a local store big enough for its reader process (the second
process that reads and validates documents in a full aggregation), stopped while it runs.

- SIGTERM (``kill``, ``timeout``, systemd stopping a timer's job, a deleted pod): the command
  unwinds as on Ctrl-C, says so in one line and exits 143; its reader process and the resource
  tracker end with it, its temporary files go.
- SIGKILL (the OOM killer, ``kill -9``): nothing of pvbench can run, but its reader process ends
  as soon as its parent is gone. It used to wait for a next task for good, holding the caller's
  stdout and stderr open (a ``pvbench aggregate … | tee log`` never returned). Its temporary
  folder stays until the next command that makes one finds its owner gone and removes it.

Either way the next aggregation makes the tables one from nothing makes.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import duckdb
import pytest
from cli_helpers import PVBENCH
from proc_helpers import alive, children
from stats_helpers import write
from test_compact import night

from pvbench.analytics.compact import FIRST_BATCH_DOCUMENTS
from pvbench.analytics.resources import cpu_limit
from pvbench.stopping import (
    ABANDONED_AFTER_S,
    OWNER_FILE,
    own_temporary_folder,
    remove_abandoned,
    tied_to_this_process,
)

RUNS, PER_RUN = 10, 1_000  # several batches after a small first one: the reader process starts, and has work left


@pytest.fixture(scope="module")
def big_store(tmp_path_factory) -> Path:
    if cpu_limit() < 2:
        pytest.skip("one core: a full aggregation reads its documents itself, without a reader process")
    store = tmp_path_factory.mktemp("stopped") / "store"
    write(store, [d for day in range(1, RUNS + 1) for d in night(f"n{day}", day, reps=PER_RUN // 2)])
    assert RUNS * PER_RUN > 2 * FIRST_BATCH_DOCUMENTS
    return store


def _aggregate(store: Path, out: Path, tmp: Path) -> subprocess.Popen:
    return _started(["aggregate", "--store", store, "--campaign", "syn", "--out", out], tmp)


def _started(args: list, tmp: Path) -> subprocess.Popen:
    tmp.mkdir(exist_ok=True)
    return subprocess.Popen(
        [*PVBENCH, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp)},
    )


def _stopped_while_reading(
    store: Path, work: Path, signum: int, command: list | None = None
) -> tuple[subprocess.Popen, str, list[int]]:
    """A full aggregation (or ``command``, which reads the campaign) of a copy of ``store``, sent
    ``signum`` once its reader process runs; its exit, what it said, and the processes it had started."""
    copy = work / "store"
    shutil.copytree(store, copy)
    if command:
        proc = _started([*command, "--store", copy, "--campaign", "syn"], work / "tmp")
    else:
        proc = _aggregate(copy, work / "tables", work / "tmp")
    deadline, helpers = time.monotonic() + 120, []
    while proc.poll() is None and time.monotonic() < deadline:
        helpers = children(proc.pid)  # the reader process and multiprocessing's resource tracker
        if len(helpers) >= 2:
            break
        time.sleep(0.05)
    assert len(helpers) >= 2 and proc.poll() is None, "the aggregation ended before its reader process started"
    time.sleep(0.2)  # the reader is reading the runs given to it
    proc.send_signal(signum)
    _, said = proc.communicate(timeout=120)  # returns: nothing left holds its stderr open
    return proc, said, helpers


def _gone(pids: list[int], within_s: float = 10) -> list[int]:
    """Those of ``pids`` still running after ``within_s``."""
    deadline = time.monotonic() + within_s
    while alive(pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive(pids)


def _headline(tables: Path) -> list[tuple]:
    return duckdb.sql(
        f"select storage_class, n, round(mean, 6) from '{tables}/summary.parquet' where is_headline order by all"
    ).fetchall()


def _finish_and_compare(work: Path, big_store: Path, tmp: str = "tmp2") -> None:
    """The next aggregation of the stopped one's store makes the tables of one from nothing."""
    again = _aggregate(work / "store", work / "tables", work / tmp)
    assert again.wait(timeout=300) == 0, again.stderr.read()
    fresh = work / "fresh"
    shutil.copytree(big_store, fresh)
    whole = _aggregate(fresh, work / "fresh-tables", work / "tmp3")
    assert whole.wait(timeout=300) == 0, whole.stderr.read()
    assert _headline(work / "tables") == _headline(work / "fresh-tables")
    assert {n for _, n, _ in _headline(work / "tables")} == {RUNS * PER_RUN // 2}


def test_sigterm_stops_the_aggregation_its_reader_and_its_files(big_store, tmp_path):
    proc, said, helpers = _stopped_while_reading(big_store, tmp_path, signal.SIGTERM)
    assert proc.returncode == 128 + signal.SIGTERM, said
    assert "aggregation interrupted by SIGTERM" in said and "aggregate again" in said, said
    assert "Traceback" not in said, said
    assert _gone(helpers) == []
    assert sorted(p.name for p in (tmp_path / "tmp").iterdir()) == []  # no batch, part or spill left
    _finish_and_compare(tmp_path, big_store)


def test_sigterm_stops_a_command_that_reads_the_campaign_too(big_store, tmp_path):
    """`pvbench summary` (as `compare` and the `stats` commands) compacts the runs no aggregation
    has compacted yet, with the same reader process: stopped, it ends as `aggregate` does."""
    proc, said, helpers = _stopped_while_reading(big_store, tmp_path, signal.SIGTERM, ["summary"])
    assert proc.returncode == 128 + signal.SIGTERM, said
    assert "summary interrupted by SIGTERM" in said and "Traceback" not in said, said
    assert _gone(helpers) == []
    assert list((tmp_path / "tmp").iterdir()) == []


def test_sigkill_leaves_no_reader_process_behind(big_store, tmp_path):
    proc, said, helpers = _stopped_while_reading(big_store, tmp_path, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    assert _gone(helpers) == []  # before: the reader waited for its next task, for good
    [left] = (tmp_path / "tmp").iterdir()  # its own temporary folder: nothing could remove it
    assert left.name.startswith("pvbench-aggregate-") and (left / OWNER_FILE).is_file()
    _age(left / OWNER_FILE)
    _finish_and_compare(tmp_path, big_store, tmp="tmp")  # in the same temporary folder
    assert list((tmp_path / "tmp").iterdir()) == []  # the next aggregation removed it


def _age(path: Path) -> None:
    """As if made longer ago than a folder must be to count as abandoned."""
    past = time.time() - 2 * ABANDONED_AFTER_S
    os.utime(path, (past, past))


def test_only_folders_whose_owner_is_gone_are_removed(tmp_path):
    """remove_abandoned: a folder is removed only when its owner file is unlocked (its process is
    gone) and old enough; a running command's folder, a young one and any other folder stay."""
    script = (
        "import sys, tempfile; tempfile.tempdir = sys.argv[1]\n"
        "from pvbench.stopping import own_temporary_folder\n"
        "with own_temporary_folder('pvbench-test-') as f: print(f, flush=True); sys.stdin.read()"
    )
    running = subprocess.Popen(
        [PVBENCH[0], "-c", script, str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        live = Path(running.stdout.readline().strip())
        _age(live / OWNER_FILE)  # old, but its process holds the lock
        dead = _abandoned(tmp_path, "pvbench-aggregate-dead")
        young = _abandoned(tmp_path, "pvbench-aggregate-young", old=False)
        other = tmp_path / "pvbench-parts-x"  # no owner file: not one own_temporary_folder made
        other.mkdir()
        assert remove_abandoned(str(tmp_path), "pvbench-") == [str(dead)]
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, young.name, other.name])
    finally:
        running.communicate("", timeout=30)
    assert not live.exists()  # its process removed it on leaving
    # and a command making its folder removes the abandoned ones first
    dead = _abandoned(tmp_path, "pvbench-compare-dead")
    import tempfile

    saved, tempfile.tempdir = tempfile.tempdir, str(tmp_path)
    try:
        with own_temporary_folder("pvbench-aggregate-") as mine:
            assert not dead.exists() and mine.parent == tmp_path
    finally:
        tempfile.tempdir = saved


def _abandoned(root: Path, name: str, old: bool = True) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "batch.ndjson").write_text("{}\n")
    (folder / OWNER_FILE).touch()
    if old:
        _age(folder / OWNER_FILE)
    return folder


@pytest.mark.parametrize("tied", [True, False], ids=["keeper", "without"])
def test_a_process_group_started_by_pvbench_ends_when_pvbench_is_killed(tmp_path, tied):
    """What pvbench runs in a group of its own (Evidence's build) ends when pvbench is killed
    outright: its keeper (stopping.tied_to_this_process) sees the parent gone and ends the group.
    A command that writes nothing meanwhile (here `sleep`; Evidence's silent compile) ran on for
    good without it, which the second case shows."""
    pidfile = tmp_path / "sleep.pid"
    script = (
        "import subprocess, sys, time\n"
        "from pvbench.stopping import tied_to_this_process\n"
        "cmd = ['sh', '-c', 'echo $$ > %s; exec sleep 300']\n"
        "subprocess.Popen(tied_to_this_process(cmd) if %s else cmd, start_new_session=True)\n"
        "time.sleep(300)\n"
    ) % (pidfile, tied)
    parent = subprocess.Popen([PVBENCH[0], "-c", script])
    try:
        deadline = time.monotonic() + 30
        while not (pidfile.is_file() and pidfile.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        sleeper = int(pidfile.read_text())
        parent.kill()
        parent.wait()
        if tied:  # the keeper looks every 0.5 s (keeper.POLL_S): gone well within the deadline
            assert _gone([sleeper], within_s=60) == []
        else:  # still running 5 s on (it sleeps 300 s)
            assert _gone([sleeper], within_s=5) == [sleeper]
    finally:
        with contextlib.suppress(ProcessLookupError, ValueError, FileNotFoundError):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)


def test_the_keeper_exits_as_its_command_did():
    """Whoever waits for the keeper sees what it would have seen of the command: its exit code, the
    signal that ended it (fio's runner says "fio was killed by SIGKILL"), or 127 if it cannot run."""

    def run(script: str) -> int:
        return subprocess.run(tied_to_this_process(["sh", "-c", script]), timeout=30).returncode

    assert run("exit 0") == 0 and run("exit 3") == 3
    assert run("kill -KILL $$") == -signal.SIGKILL and run("kill -TERM $$") == -signal.SIGTERM
    missing = subprocess.run(tied_to_this_process(["/nonexistent/fio"]), capture_output=True, text=True, timeout=30)
    assert missing.returncode == 127 and "cannot run /nonexistent/fio" in missing.stderr
