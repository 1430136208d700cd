"""What reaches fio, what pvbench removes, what errors print, and how a run stops (issue 10, fio area)."""

import os
import re
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest
import yaml

from pvbench.cells.cell import MAX_REPETITIONS
from pvbench.cells.matrix import expand
from pvbench.fio.runner import run_fio
from pvbench.fio.target import check_target, fio_files, remove_fio_files
from pvbench.local.config import ConfigError, load_config
from pvbench.local.runner import default_run_id, existing_results
from pvbench.profiles import PROFILES, ProfileError, load_profile, render_jobfile, resolve_timing
from pvbench.profiles.jobfile import fio_path
from pvbench.stopping import Interrupted, stop_on_signals
from pvbench.store import open_store

pytestmark = pytest.mark.quiet

REPO = Path(__file__).resolve().parents[2]
SECRET = "s3cr3t-value-9f8e7d"


# ------------------------------------------------------------------ paths in the job file
def test_colon_is_escaped_as_fio_documents():
    assert fio_path("/mnt/c:d") == "/mnt/c\\:d"
    assert fio_path("/mnt/a b/x=y") == "/mnt/a b/x=y"
    job = render_jobfile(PROFILES["dbench"], PROFILES["dbench"].tests[:1], PROFILES["dbench"].timing, "/m/c:d")
    assert "directory=/m/c\\:d\n" in job


@pytest.mark.parametrize(
    "path, why",
    [
        ("/m/a\nexec_prerun=touch x", "line break"),
        ("/m/a\rb", "line break"),
        ("/m/${HOME}", "'$'"),
        ("/m/$ncpus", "'$'"),
        ("/m/a;b", "comment"),
        ("/m/a#b", "comment"),
        ("/m/a\\b", "escape"),
        ("/m/a ", "whitespace"),
    ],
)
def test_paths_fio_would_reinterpret_are_refused(path, why):
    with pytest.raises(ProfileError, match=re.escape(why)):
        fio_path(path)
    with pytest.raises(ProfileError):
        render_jobfile(PROFILES["dbench"], PROFILES["dbench"].tests[:1], PROFILES["dbench"].timing, path)


def test_escaped_path_is_the_directory_fio_writes_to(tmp_path, fio_bin):
    target = tmp_path / "c:d"
    target.mkdir()
    profile = load_profile("dbench")
    timing = resolve_timing(profile, "0s", "200ms", "1M")
    run_fio(render_jobfile(profile, [profile.test("randread-lat")], timing, target), 60)
    assert [p.name for p in fio_files(target)] == ["pvbench-fio.0.0"]
    assert not (tmp_path / "c").exists()


def test_target_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(ProfileError, match="is a file, not a directory"):
        check_target(tmp_path / "f", 2**20, 1)


# ------------------------------------------------------------------ cleanup: only pvbench's files
def test_cleanup_removes_only_fio_files_pvbench_named(tmp_path):
    ours = ["pvbench-fio.0.0", "pvbench-fio.31.2"]
    theirs = ["pvbench.yaml", "pvbench.notes.txt", "pvbench.0.0", "pvbench-fio.notes", "pvbench-fio.0.0.bak"]
    for name in ours + theirs:
        (tmp_path / name).write_text(name)
    (tmp_path / "pvbench-fio.1.0").mkdir()  # a directory of that name is not fio's file
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.write_text("keep")
    (tmp_path / "pvbench-fio.2.0").symlink_to(outside)  # nor is a link pointing elsewhere
    remove_fio_files(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(theirs + ["pvbench-fio.1.0", "pvbench-fio.2.0"])
    assert outside.read_text() == "keep"
    outside.unlink()


def test_write_probe_never_replaces_a_user_file(tmp_path):
    (tmp_path / f".pvbench-write-probe-{os.getpid()}").write_text("mine")
    check_target(tmp_path, 2**20, 1)
    assert (tmp_path / f".pvbench-write-probe-{os.getpid()}").read_text() == "mine"
    assert len(list(tmp_path.iterdir())) == 1


# ------------------------------------------------------------------ profile files are never echoed
@pytest.mark.parametrize(
    "text",
    [
        f"{SECRET}\n",  # a token: no section header
        f"[global]\nsize=x\n[job]\nrw=read\n{SECRET}\n[x\n",  # a line that is no option
        f"[default]\niodepth={SECRET}\n",  # a credentials file: a bad number
        f"[default]\nrw={SECRET}\n",  # not an rw fio knows
        f"[default]\nbs={SECRET}\n",
        f"[global]\nruntime={SECRET}\n[j]\n",
        f"[global]\nsize={SECRET}\n[j]\n",
        f"[{SECRET} {SECRET}]\nrw=nope\n",  # even a section name that looks like data
    ],
)
def test_profile_file_errors_never_print_its_content(tmp_path, text):
    path = tmp_path / "token"
    path.write_text(text)
    with pytest.raises(ProfileError) as err:
        load_profile(f"file:{path}")
    assert SECRET not in str(err.value) and str(path) in str(err.value)


def test_binary_profile_file_is_a_clear_error(tmp_path):
    path = tmp_path / "blob"
    path.write_bytes(bytes(range(256)))
    with pytest.raises(ProfileError, match="not a fio job file"):
        load_profile(f"file:{path}")


# ------------------------------------------------------------------ durations and repetitions
def test_zero_runtime_is_a_profile_error():
    with pytest.raises(ProfileError, match="runtime"):
        resolve_timing(PROFILES["dbench"], runtime="0s")


def test_repetitions_have_one_upper_bound():
    args = dict(campaign="c", run="r", occasion="o", storage_classes=["a"], profiles=["dbench"], seed=1)
    assert len(expand(repetitions=MAX_REPETITIONS, tests=["seqread"], **args)) == MAX_REPETITIONS
    with pytest.raises(ProfileError, match=str(MAX_REPETITIONS)):
        expand(repetitions=MAX_REPETITIONS + 1, **args)
    with pytest.raises(ProfileError, match="last repetition"):
        expand(repetitions=2, first_rep=MAX_REPETITIONS, **args)


def test_argo_template_choices_are_within_the_bound():
    doc = yaml.safe_load((REPO / "templates" / "benchmark.yaml").read_text())
    params = {p["name"]: p for p in doc["spec"]["arguments"]["parameters"]}
    for name in ("repetitions", "adaptive-max-repetitions"):
        assert all(1 <= int(v) <= MAX_REPETITIONS for v in params[name]["enum"]), name


def _config(tmp_path, **over) -> Path:
    cfg = {
        "campaign": "c",
        "store": str(tmp_path / "store"),
        "spool": str(tmp_path / "spool"),
        "storage_classes": {"a": str(tmp_path / "a")},
        "occasions": ["one", "two"],
        **over,
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.mark.parametrize(
    "over", [{"repetitions": MAX_REPETITIONS + 1}, {"adaptive": {"max_repetitions": MAX_REPETITIONS + 1}}]
)
def test_local_config_repetitions_are_bounded(tmp_path, over):
    with pytest.raises(ConfigError, match="repetitions"):
        load_config(_config(tmp_path, **over))


# ------------------------------------------------------------------ run ids
def test_generated_run_ids_are_unique_labels():
    ids = [default_run_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"local-\d{8}-\d{6}-\d{6}-[0-9a-f]{4}", i) for i in ids)


def test_existing_results_are_found_per_occasion_in_store_and_spool(tmp_path):
    config = load_config(_config(tmp_path))
    key = "results/campaign=c/run=r1/occasion=one/storage_class=a/profile=dbench/workload=w/rep=1/result.json"
    open_store(config.store).put_bytes(key, b"{}")
    assert existing_results(config, "r1") == [key]
    assert existing_results(config, "r1", ["two"]) == []  # another occasion of the run may still be added
    assert existing_results(config, "r2") == []
    spooled = key.replace("run=r1", "run=r2").replace("occasion=one", "occasion=two")
    open_store(config.spool).put_bytes(spooled, b"{}")
    assert existing_results(config, "r2", ["two"]) == [spooled]


# ------------------------------------------------------------------ stopping
def test_sigterm_stops_fio_and_removes_its_temp_files(tmp_path, monkeypatch, fio_bin):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    target = tmp_path / "t"
    target.mkdir()
    profile = load_profile("dbench")
    job = render_jobfile(profile, [profile.test("randread-lat")], resolve_timing(profile, "0s", "20s", "1M"), target)
    sent = threading.Event()

    def terminate_when_fio_runs():
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if list(tmp_path.glob("pvbench-fio-*/job.fio")) and fio_files(target):
                time.sleep(0.3)
                sent.set()
                os.kill(os.getpid(), signal.SIGTERM)  # handled: stop_on_signals is active
                return
            time.sleep(0.02)

    killer = threading.Thread(target=terminate_when_fio_runs)
    started = time.monotonic()
    with stop_on_signals():
        killer.start()
        with pytest.raises(Interrupted) as err:
            run_fio(job, 60)
        killer.join()
    assert sent.is_set() and err.value.name == "SIGTERM" and err.value.exit_code == 143
    assert time.monotonic() - started < 15  # fio stopped at once, not after its 20 s
    assert not list(tmp_path.glob("pvbench-fio-*"))
    fio_left = subprocess.run(["pgrep", "-f", f"{tmp_path}/pvbench-fio-"], capture_output=True, text=True).stdout
    assert not fio_left.strip()
    assert signal.getsignal(signal.SIGTERM) is not None  # the previous handler is back
    # and the signal is spent: fio runs again in this process (local mode's next run, a test)
    run_fio(
        render_jobfile(profile, [profile.test("randread-lat")], resolve_timing(profile, "0s", "200ms", "1M"), target),
        60,
    )


def test_fio_stops_when_pvbench_is_killed_outright(tmp_path, fio_bin):
    """SIGKILL (the OOM killer, `kill -9`) of the process running fio: nothing of pvbench can stop
    fio, which ran on in its own process group, writing to the storage until its runtime ended. The
    keeper leading that group (stopping.tied_to_this_process) ends it once pvbench is gone."""
    import sys

    target = tmp_path / "t"
    target.mkdir()
    profile = load_profile("dbench")
    job = render_jobfile(profile, [profile.test("randread-lat")], resolve_timing(profile, "0s", "60s", "1M"), target)
    (tmp_path / "job.txt").write_text(job)
    script = (
        "import sys, tempfile; tempfile.tempdir = sys.argv[1]\n"
        "from pathlib import Path\n"
        "from pvbench.fio.runner import run_fio\n"
        "run_fio(Path(sys.argv[1], 'job.txt').read_text(), 120)\n"
    )
    runner = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)])

    def fio_pids() -> list[int]:
        out = subprocess.run(["pgrep", "-f", f"^{fio_bin}.*{tmp_path}/pvbench-fio-"], capture_output=True, text=True)
        return [int(p) for p in out.stdout.split()]

    try:
        deadline = time.monotonic() + 30
        while not (fio_pids() and fio_files(target)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert fio_pids(), "fio did not start"
        runner.kill()
        runner.wait()
        deadline = time.monotonic() + 15  # the keeper looks every 0.5 s; fio stops on SIGTERM
        while fio_pids() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert fio_pids() == [], "fio outlived the pvbench that ran it"
    finally:
        for pid in fio_pids():
            os.kill(pid, signal.SIGKILL)


def test_a_stop_signal_inside_duckdb_is_still_the_signal():
    """DuckDB runs a query with the GIL released and checks for Python signals meanwhile: the
    ``Interrupted`` a SIGTERM raises inside it comes out as DuckDB's own error ("Query
    interrupted"). Leaving stop_on_signals, it is the signal again (pvbench aggregate exits 143
    with its one line, not a traceback)."""
    import duckdb

    def terminate_soon():
        time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGTERM)

    killer = threading.Thread(target=terminate_soon)
    with pytest.raises(Interrupted) as err:
        with stop_on_signals():
            killer.start()
            duckdb.sql("select count(*) from range(100000000000) a").fetchall()  # minutes, unless stopped
    killer.join()
    assert err.value.name == "SIGTERM" and err.value.exit_code == 143
    assert not isinstance(err.value.__cause__, Interrupted)  # DuckDB's error, kept as the cause
