"""An aggregation stopped part-way leaves nothing running and nothing half-done, proven with real
processes: `pvbench aggregate` of a local store big enough for its reader process (the second
process that reads and validates documents in a full aggregation), stopped while it runs.

- SIGTERM (``kill``, ``timeout``, systemd stopping a timer's job, a deleted pod): the command
  unwinds as on Ctrl-C, says so in one line and exits 143; its reader process and the resource
  tracker end with it, its temporary files go.
- SIGKILL (the OOM killer, ``kill -9``): nothing of pvbench can run, but its reader process ends
  as soon as its parent is gone. It used to wait for a next task for good, holding the caller's
  stdout and stderr open (a ``pvbench aggregate … | tee log`` never returned).

Either way the next aggregation makes the tables one from nothing makes.
"""

from __future__ import annotations

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
    tmp.mkdir(exist_ok=True)
    return subprocess.Popen(
        [*PVBENCH, "aggregate", "--store", store, "--campaign", "syn", "--out", out],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp)},
    )


def _stopped_while_reading(store: Path, work: Path, signum: int) -> tuple[subprocess.Popen, str, list[int]]:
    """A full aggregation of a copy of ``store``, sent ``signum`` once its reader process runs;
    its exit, what it said, and the processes it had started."""
    copy = work / "store"
    shutil.copytree(store, copy)
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


def _finish_and_compare(work: Path, big_store: Path) -> None:
    """The next aggregation of the stopped one's store makes the tables of one from nothing."""
    again = _aggregate(work / "store", work / "tables", work / "tmp2")
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


def test_sigkill_leaves_no_reader_process_behind(big_store, tmp_path):
    proc, said, helpers = _stopped_while_reading(big_store, tmp_path, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    assert _gone(helpers) == []  # before: the reader waited for its next task, for good
    _finish_and_compare(tmp_path, big_store)
