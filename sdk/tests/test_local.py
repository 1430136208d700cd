"""Local mode end to end on real fio, and what happens when things go wrong."""

import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest
import yaml
from cli_helpers import pvbench

from pvbench.cells.matrix import expand
from pvbench.cells.publish import flush, pending
from pvbench.local.config import ConfigError, load_config
from pvbench.local.runner import plan_run, run_local
from pvbench.profiles import ProfileError
from pvbench.store import open_store


def write_config(tmp_path: Path, **over) -> Path:
    cfg = {
        "campaign": "t",
        "store": str(tmp_path / "store"),
        "spool": str(tmp_path / "spool"),
        "storage_classes": {"alpha": str(tmp_path / "a"), "beta": str(tmp_path / "b")},
        "profiles": ["dbench"],
        "tests": ["randread-iops", "randwrite-lat"],
        "repetitions": 2,
        "occasions": ["morning", "evening"],
        "seed": 7,
        "ramp": "100ms",
        "runtime": "300ms",
        "size": "8M",
    }
    cfg.update(over)
    path = tmp_path / "pvbench.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture
def small_tmpfs(tmp_path):
    """A real 24 MiB tmpfs we can fill or make read-only (needs root, as CI has)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24M", "tmpfs", str(mnt)], capture_output=True)
    if proc.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail(f"CI must be able to mount a tmpfs: {proc.stderr.decode()}")
        pytest.skip("needs root to mount a tmpfs")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)])


def test_numbers_in_the_config_read_as_the_template_and_the_cli_read_them(tmp_path):
    """`runtime: 5` is a YAML number: seconds, as `--runtime 5` and the Argo parameter are (fio-style),
    not pydantic's "Input should be a valid string"."""
    config = load_config(write_config(tmp_path, ramp=0.5, runtime=5, size=16777216))
    assert (config.ramp, config.runtime, config.size) == ("0.5", "5", "16777216")
    [plan, *_] = plan_run(config, "r")
    assert (plan.timing.ramp_s, plan.timing.runtime_s, plan.timing.size_bytes) == (0.5, 5.0, 16 * 2**20)


def test_matrix_is_interleaved_and_seeded():
    args = dict(
        campaign="c", run="r", occasion="o", storage_classes=["a", "b", "c"], profiles=["dbench"], repetitions=3
    )
    one, again, other = expand(seed=1, **args), expand(seed=1, **args), expand(seed=2, **args)
    assert [c.model_dump() for c in one] == [c.model_dump() for c in again]
    assert [c.model_dump() for c in one] != [c.model_dump() for c in other]
    assert len(one) == 3 * 9 * 3
    # every repetition round is complete before the next begins, and classes are mixed within it
    assert [c.rep for c in one] == sorted(c.rep for c in one)
    first_round = [c.storage_class for c in one if c.rep == 1]
    assert first_round != sorted(first_round)
    assert [c.order for c in one] == list(range(len(one)))


def test_local_run_end_to_end(tmp_path):
    config = write_config(tmp_path)
    proc = pvbench("local", "run", config, "--run", "run-1", timeout=300)
    assert proc.returncode == 0, proc.stderr
    results = sorted((tmp_path / "store" / "results").rglob("result.json"))
    assert len(results) == 2 * 2 * 2 * 2
    assert (tmp_path / "store" / "analytics" / "campaign=t" / "run=all" / "summary.parquet").is_file()
    assert "stored 16, failed 0" in " ".join(proc.stderr.split())
    # fio's work files are cleaned from the targets
    assert not list((tmp_path / "a").glob("pvbench-fio.*"))


@pytest.mark.parametrize(
    "over, message",
    [
        ({"storage_classes": {"Not_DNS": "/tmp/x"}}, "not a valid Kubernetes name"),
        ({"profiles": ["nope"]}, "unknown profile"),
        ({"size": "-1M"}, "must be positive"),
        ({"size": "500T"}, "does not fit"),
        ({"repetitions": 0}, "greater than or equal to 1"),
        ({"tests": ["no-such-test"]}, "has a test 'no-such-test'"),
        # a class line copied, its name changed and not its path: the storage compared with itself
        ({"storage_classes": {"alpha": "/tmp/x", "beta": "/tmp/x/"}}, "'alpha' and 'beta' are the same directory"),
        ({"profiles": ["vshn", "vshn"]}, "profiles are listed twice"),
        # results written onto the storage under test, between its cells
        (
            {"storage_classes": {"alpha": "/tmp/x"}, "store": "/tmp/x"},
            "the store /tmp/x is inside storage class 'alpha'",
        ),
        ({"storage_classes": {"alpha": "/tmp/x"}, "spool": "/tmp/x/spool"}, "the spool /tmp/x/spool is inside"),
        ({"occasions": []}, "at least one occasion is needed"),  # was an IndexError traceback
        # fio refuses a file smaller than a block: every cell failed, after the run had started
        ({"size": "2k"}, "size 2,048 bytes is smaller than one block of the test (bs 4k)"),
    ],
)
def test_bad_config_fails_before_any_fio(tmp_path, over, message):
    config = write_config(tmp_path, **over)
    proc = pvbench("local", "run", config, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert message in " ".join(proc.stderr.split())
    assert not (tmp_path / "store").exists()


def test_full_target_fails_its_cells_only(tmp_path, small_tmpfs):
    config = load_config(
        write_config(
            tmp_path,
            storage_classes={"alpha": str(tmp_path / "a"), "tiny": str(small_tmpfs)},
            occasions=["once"],
            repetitions=1,
            size="16M",
        )
    )
    plans = plan_run(config, "r")  # passes: 24 MiB free
    # another tenant fills the volume after the checks
    (small_tmpfs / "filler").write_bytes(b"\0" * (20 * 2**20))
    report = run_local(config, plans, "r")
    assert len(report.stored) == 2 and len(report.failed) == 2
    assert all(f.cell.storage_class == "tiny" for f in report.failed)
    assert all("No space left" in f.error or "fio failed" in f.error for f in report.failed)


def test_read_only_target_is_refused_before_and_isolated_during(tmp_path, small_tmpfs):
    config = load_config(
        write_config(
            tmp_path,
            storage_classes={"alpha": str(tmp_path / "a"), "ro": str(small_tmpfs)},
            occasions=["once"],
            repetitions=1,
        )
    )
    subprocess.run(["mount", "-o", "remount,ro", str(small_tmpfs)], check=True)
    with pytest.raises(ProfileError, match="not writable"):
        plan_run(config, "r")
    subprocess.run(["mount", "-o", "remount,rw", str(small_tmpfs)], check=True)
    plans = plan_run(config, "r")
    subprocess.run(["mount", "-o", "remount,ro", str(small_tmpfs)], check=True)
    report = run_local(config, plans, "r")
    assert len(report.stored) == 2 and {f.cell.storage_class for f in report.failed} == {"ro"}


def test_killing_fio_mid_cell_loses_only_that_cell(tmp_path, monkeypatch):
    # fio's job files go under tmp_path, so the killer below can only ever hit this test's
    # own fio (not one of another run on the same machine, e.g. inside a pod of the cluster stage)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    config = load_config(write_config(tmp_path, occasions=["once"], repetitions=1, runtime="1500ms"))
    plans = plan_run(config, "r")
    killed = []

    def kill_first_fio():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not killed:
            out = subprocess.run(
                ["pgrep", "-f", f"{tmp_path}/pvbench-fio-.*job.fio"], capture_output=True, text=True
            ).stdout
            pids = [int(p) for p in out.split()]
            if pids:
                time.sleep(0.5)
                for pid in pids:
                    try:
                        os.kill(pid, 9)
                    except ProcessLookupError:
                        pass
                killed.extend(pids)
            time.sleep(0.05)

    killer = threading.Thread(target=kill_first_fio)
    killer.start()
    report = run_local(config, plans, "r")
    killer.join()
    assert killed
    assert len(report.failed) == 1 and "killed by SIGKILL" in report.failed[0].error
    assert len(report.stored) == len(plans) - 1


def test_minio_down_keeps_results_and_flush_uploads_them(tmp_path, minio_server, s3_store_url):
    config = load_config(write_config(tmp_path, store=s3_store_url, occasions=["once"], repetitions=1))
    plans = plan_run(config, "r")
    minio_server.stop()
    try:
        report = run_local(config, plans, "r")
    finally:
        minio_server.start()
    assert not report.stored and len(report.spooled) == len(plans)
    assert len(pending(config.spool)) == len(plans)
    done, failed = flush(config.spool, open_store(s3_store_url))
    assert len(done) == len(plans) and not failed and not pending(config.spool)
    keys = [k for k in open_store(s3_store_url).list_keys("results") if k.endswith("result.json")]
    assert len(keys) == len(plans)


def test_config_errors_name_the_field(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("campaign: x\nstorage_classes: {}\nunknown_key: 1\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert "storage_classes" in str(err.value) and "unknown_key" in str(err.value)
