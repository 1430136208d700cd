"""Guards (pvbench.cells.guards): the rules that flag a cell which measured something other than the
storage. The rule arithmetic on injected numbers, then each rule on a real fio run.

The fio tests must hold on a loaded 2-core machine (they were run beside two `yes > /dev/null`):
no assertion on speed, only on the rules' documented outcomes.
"""

from __future__ import annotations

import os
import subprocess
import typing
from pathlib import Path

import pytest

from pvbench.cells import guards
from pvbench.cells.cell import Cell
from pvbench.cells.run import TimingOverrides, plan_cell, run_cell
from pvbench.fio.cpu_watch import JobCpu
from pvbench.fio.target import filesystem_of
from pvbench.results.schema import GuardFlag, GuardRule

SHM = Path("/dev/shm")
# the demo's timing, shortened: long enough for several schedstat samples of each job
QUICK = TimingOverrides(ramp="300ms", runtime="1500ms", size="32M")
needs_fio = pytest.mark.skipif(
    subprocess.run(["sh", "-c", "command -v fio"], capture_output=True).returncode != 0, reason="fio not installed"
)


def _cell(profile: str, workload: str, storage_class: str = "local") -> Cell:
    return Cell(
        campaign="c", run="r", occasion="o", storage_class=storage_class, profile=profile, workload=workload, rep=1
    )


def _custom(tmp_path: Path, job: str) -> str:
    path = tmp_path / "job.fio"
    path.write_text(job)
    return f"file:{path}"


def _rules(doc) -> dict[str, GuardFlag]:
    return {f.rule: f for f in doc.guards}


@pytest.fixture
def shm_target():
    if not SHM.is_dir() or filesystem_of(SHM) != "tmpfs":
        pytest.skip("/dev/shm is not tmpfs here")
    target = SHM / f"pvbench-guards-{os.getpid()}"
    target.mkdir()
    yield target
    for path in target.glob("**/*"):
        if path.is_file():
            path.unlink()
    for path in sorted(target.glob("**/"), reverse=True):
        path.rmdir()


def _disk_target(tmp_path: Path) -> Path:
    """A directory on a disk filesystem (the test's tmp_path may itself be tmpfs)."""
    if filesystem_of(tmp_path) not in guards.MEMORY_FILESYSTEMS:
        return tmp_path
    pytest.skip("no disk filesystem for the test's files")


# --- the catalog -----------------------------------------------------------------------------------


def test_the_schema_names_the_catalog_rules():
    assert set(typing.get_args(GuardRule)) == set(guards.GUARDS)
    assert [g.rule for g in guards.GUARD_LIST] == list(typing.get_args(GuardRule))
    assert guards.TRIPS_AT_OR_BELOW <= set(guards.GUARDS)


# --- the rules' arithmetic -------------------------------------------------------------------------


def _job(on_cpu_s: float, waiting_s: float, wall_s: float = 10.0) -> JobCpu:
    return JobCpu(pid=1, tid=2, wall_s=wall_s, on_cpu_s=on_cpu_s, waiting_s=waiting_s)


def test_a_job_on_or_waiting_for_a_cpu_all_the_time_trips_client_cpu():
    # 60% of a core on a loaded machine, the rest waiting for it: usr+sys alone would say 60%
    flag = guards.client_cpu_flag([_job(6.0, 3.8), _job(0.1, 0.0)], [60.0], cpus=2)
    assert flag is not None and flag.rule == "client_cpu" and flag.excluded == guards.GUARDS["client_cpu"].excluded
    assert flag.value == pytest.approx(0.98) and flag.threshold == 0.9
    assert "98%" in flag.detail and "usr+sys 60%" in flag.detail


def test_a_job_that_waited_for_the_storage_does_not_trip_client_cpu():
    assert guards.client_cpu_flag([_job(3.0, 2.0)], [30.0], cpus=2) is None
    assert guards.client_cpu_flag([], [5.0], cpus=2) is None


def test_client_cpu_falls_back_to_usr_sys_against_the_cpus():
    # no schedstat: 4 jobs of 50% each on 2 CPUs: all the CPU there was
    flag = guards.client_cpu_flag(None, [50.0, 50.0, 50.0, 50.0], cpus=2)
    assert flag is not None and flag.value == pytest.approx(1.0)
    assert "schedstat unavailable" in flag.detail and "4 jobs shared 2 CPU(s)" in flag.detail
    assert guards.client_cpu_flag(None, [40.0], cpus=2) is None


def test_buffered_io_that_fits_in_memory_trips_page_cache():
    flag = guards.page_cache_flag(direct=False, filesystem="ext4", working_set_bytes=2**30, memory_bytes=4 * 2**30)
    assert flag is not None and flag.excluded and flag.value == pytest.approx(0.25)
    assert guards.page_cache_flag(False, "ext4", 8 * 2**30, 4 * 2**30) is None  # larger than memory
    assert guards.page_cache_flag(True, "ext4", 2**30, 4 * 2**30) is None  # O_DIRECT


def test_tmpfs_is_memory_whatever_direct_says():
    for direct in (True, False):
        flag = guards.page_cache_flag(direct, "tmpfs", 8 * 2**30, 4 * 2**30)
        assert flag is not None and not flag.excluded and "memory itself" in flag.detail


def test_sparse_read_files_trip_unwritten_reads():
    flag = guards.unwritten_reads_flag(True, allocated_bytes=2**20, size_bytes=64 * 2**20, files=1)
    assert flag is not None and flag.excluded and flag.value == pytest.approx(1 / 64, abs=1e-3)
    assert guards.unwritten_reads_flag(True, 64 * 2**20, 64 * 2**20, 1) is None
    assert guards.unwritten_reads_flag(False, 0, 64 * 2**20, 1) is None  # a write test reads nothing


def test_fio_options_as_the_rules_read_them():
    assert guards.is_direct({"direct": "1"}) and not guards.is_direct({"direct": "0"})
    assert guards.is_direct({"buffered": "0"}) and not guards.is_direct({})
    assert guards.reads({"rw": "randread"}) and guards.reads({"rw": "randrw"}) and guards.reads({})
    assert not guards.reads({"rw": "randwrite"}) and guards.reads({"rw": "randread:8"})
    assert guards.working_set({"size": "32M", "numjobs": "4"}, 0) == 128 * 2**20
    assert guards.working_set({"size": "50%"}, 7) == 7


def test_a_client_that_trips_makes_the_cell_trip_naming_it():
    hot = guards.client_cpu_flag([_job(9.5, 0.4)], [95.0], cpus=2)
    hotter = guards.client_cpu_flag([_job(9.9, 0.1)], [99.0], cpus=2)
    merged = guards.worst_of_clients({1: [], 2: [hot], 3: [hotter]})
    assert [f.rule for f in merged] == ["client_cpu"]
    assert merged[0].value == hotter.value and merged[0].detail.startswith("client 3 of 3: ")
    assert "2 of 3 clients tripped" in merged[0].detail
    assert guards.worst_of_clients({1: [], 2: []}) == []


def test_the_host_numbers_are_sane():
    assert 0 < guards.cpus_available() <= os.cpu_count()
    assert guards.page_cache_memory() > 0


# --- real fio ---------------------------------------------------------------------------------------


@needs_fio
def test_the_demos_tmpfs_class_trips_client_cpu_and_page_cache(shm_target):
    # the demo's tmpfs class: libaio, direct=1, 4k randread at iodepth 64 on /dev/shm
    doc, _ = run_cell(plan_cell(_cell("dbench", "randread-iops"), shm_target, QUICK))
    rules = _rules(doc)
    assert set(rules) == {"client_cpu", "page_cache"}, [f.detail for f in doc.guards]
    assert rules["client_cpu"].excluded and rules["client_cpu"].value >= 0.9  # left out unless kept
    assert not rules["page_cache"].excluded  # the class is memory: flagged, kept
    assert doc.provenance.fio_version and doc.provenance.fio_options["direct"] == "1"


@needs_fio
def test_a_rate_limited_job_on_tmpfs_does_not_trip_client_cpu(shm_target, tmp_path):
    # 20 I/Os a second: a job that sleeps between them. (At hundreds of wake-ups a second on a machine
    # with many times more runnable tasks than CPUs, the wait for a CPU after each wake-up fills the
    # job's time, and the guard rightly says so: its latencies are the scheduler's.)
    job = (
        "[global]\nramp_time=300ms\nruntime=1500ms\nsize=32M\n[limited]\nrw=randread\nbs=4k\niodepth=4\nrate_iops=20\n"
    )
    doc, _ = run_cell(plan_cell(_cell(_custom(tmp_path, job), "limited"), shm_target))
    assert "client_cpu" not in _rules(doc), [f.detail for f in doc.guards]


@needs_fio
def test_buffered_io_on_a_disk_trips_page_cache_excluded(tmp_path):
    target = _disk_target(tmp_path / "disk")
    target.mkdir()
    job = "[global]\nramp_time=0\nruntime=1s\nsize=8M\n[buffered]\nrw=randread\nbs=4k\nioengine=psync\ndirect=0\n"
    doc, _ = run_cell(plan_cell(_cell(_custom(tmp_path, job), "buffered"), target))
    flag = _rules(doc).get("page_cache")
    assert flag is not None and flag.excluded and flag.value <= 1.0, doc.guards
    assert doc.provenance.fio_options["direct"] == "0"


@needs_fio
def test_reading_a_sparse_file_trips_unwritten_reads(tmp_path):
    target = _disk_target(tmp_path / "disk")
    target.mkdir()
    job = "[global]\nramp_time=0\nruntime=1s\nsize=32M\n[sparse]\nrw=randread\nbs=4k\niodepth=4\n"
    # where fio puts its one job's file (FIO_FILE_FORMAT): an existing file of the right size is read as it is
    subprocess.run(["truncate", "-s", "32M", str(target / "pvbench-fio.0.0")], check=True)
    doc, _ = run_cell(plan_cell(_cell(_custom(tmp_path, job), "sparse"), target))
    flag = _rules(doc).get("unwritten_reads")
    assert flag is not None and flag.excluded and flag.value < 0.1, doc.guards


@needs_fio
def test_a_normal_read_cell_on_a_disk_trips_nothing_about_its_data(tmp_path):
    target = _disk_target(tmp_path / "disk")
    target.mkdir()
    doc, _ = run_cell(plan_cell(_cell("dbench", "randread-lat"), target, QUICK))
    rules = _rules(doc)
    # fio laid the file out (wrote it) and read it with O_DIRECT; client_cpu depends on the disk's speed
    assert "unwritten_reads" not in rules and "page_cache" not in rules, doc.guards


@needs_fio
def test_a_multi_client_cell_on_tmpfs_trips_naming_the_client(shm_target):
    doc, _ = run_cell(plan_cell(_cell("scaling", "randread-iops-x2"), shm_target, QUICK))
    rules = _rules(doc)
    assert doc.clients is not None and doc.clients.count == 2
    assert rules["client_cpu"].detail.startswith(("client 1 of 2: ", "client 2 of 2: ")), doc.guards
    assert not rules["page_cache"].excluded
