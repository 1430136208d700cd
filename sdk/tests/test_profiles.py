"""Profiles carry the published studies' numbers and render to runnable fio job files."""

import json
import shutil
import subprocess

import pytest
from conftest import REPO

from pvbench.profiles import (
    PROFILES,
    ProfileError,
    load_profile,
    parse_seconds,
    parse_size,
    render_jobfile,
    resolve_timing,
)
from pvbench.profiles.catalog import SWEEP, SWEEP_GROUPS, SWEEP_LOADS, sweep_labels


def test_dbench_is_the_thesis_suite():
    p = PROFILES["dbench"]
    assert (p.timing.ramp_s, p.timing.runtime_s) == (2, 15)
    table = {t.name: (t.rw, t.bs, t.iodepth, t.numjobs, t.rwmixread) for t in p.tests}
    assert table == {
        "randread-iops": ("randread", "4k", 64, 1, None),
        "randwrite-iops": ("randwrite", "4k", 64, 1, None),
        "randread-bw": ("randread", "128k", 64, 1, None),
        "randwrite-bw": ("randwrite", "128k", 64, 1, None),
        "randread-lat": ("randread", "4k", 4, 1, None),
        "randwrite-lat": ("randwrite", "4k", 4, 1, None),
        "seqread": ("read", "1M", 16, 4, None),
        "seqwrite": ("write", "1M", 16, 4, None),
        "mixed-randrw": ("randrw", "4k", 64, 1, 75),
    }


def test_vshn_has_fsync_series():
    p = PROFILES["vshn"]
    assert (p.timing.ramp_s, p.timing.runtime_s, p.timing.size) == (5, 30, "2G")
    writes = [t for t in p.tests if t.rw == "randwrite"]
    assert sorted((t.bs, t.fsync) for t in writes) == sorted((bs, f) for bs in ("4k", "128k") for f in (0, 1, 32, 128))
    assert all(t.iodepth == 64 for t in p.tests)
    assert {t.name for t in p.tests if t.rw == "randread"} == {"read-iops", "read-bw"}


def test_sweep_covers_block_sizes_and_loads():
    p = PROFILES["sweep"]
    assert (p.timing.ramp_s, p.timing.runtime_s) == (10, 120)
    assert len(p.tests) == 4 * 4 * 4
    loads = {(t.load, t.iodepth, t.numjobs, t.load_target) for t in p.tests}
    assert loads == {("qd1", 1, 1, None), ("qd32", 32, 1, None), ("qd1x32", 1, 32, None), ("p80", 32, 1, 0.8)}
    assert {t.bs for t in p.tests} == {"4k", "8k", "64k", "128k"}
    assert {(t.group, t.rwmixread) for t in p.tests} == {
        ("randread", None),
        ("randwrite", None),
        ("mix70", 70),
        ("mix50", 50),
    }


def test_the_report_titles_sweep_curves_with_the_catalogs_labels():
    """reports/components/pvbench.js reads the sweep's labels and order from the catalog (through the
    rendered profiles.js), run in node as the report's pages use them."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed: run `make setup` (ci/install-report.sh)")
    script = """
    const m = await import(process.argv[1]);
    const rows = [["mix50", "qd32"], ["randread", "p80"], ["randread", "qd1"]].map(([g, l]) =>
        ({ wl_group: g, load: l, direction: "read", bs_bytes: 4096 }));
    console.log(JSON.stringify({ groups: m.SWEEP_GROUPS, loads: m.SWEEP_LOADS, profile: m.SWEEP_PROFILE,
        panels: m.sweepPanels(rows).map((p) => p.title),
        levels: m.sweepRows(rows, "randread", "read").map((r) => r.load_level) }));"""
    component = REPO / "reports" / "components" / "pvbench.js"
    proc = subprocess.run(
        [node, "--input-type=module", "-e", script, str(component)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    labels = sweep_labels()
    assert got["groups"] == labels["groups"] and got["loads"] == labels["loads"] and got["profile"] == SWEEP.name
    assert list(got["groups"]) == [g for g, *_ in SWEEP_GROUPS] and list(got["loads"]) == [x for x, *_ in SWEEP_LOADS]
    assert got["panels"] == [f"{labels['groups']['randread']} — read", f"{labels['groups']['mix50']} — read"]
    assert got["levels"] == [labels["loads"]["qd1"], labels["loads"]["p80"]]


def test_rendered_jobfile_keeps_latency_on_and_stonewalls(tmp_path):
    p = PROFILES["vshn"]
    text = render_jobfile(p, p.tests, resolve_timing(p, "1s", "2s", "64M"), tmp_path)
    assert "gtod_reduce" not in text
    assert "lat_percentiles=1" in text
    assert text.count("stonewall") == len(p.tests)
    assert "randrepeat=0" in text and "ramp_time=1000ms" in text and f"size={64 * 2**20}" in text
    # fio itself accepts it
    job = tmp_path / "j.fio"
    job.write_text(text)
    assert subprocess.run(["fio", "--parse-only", str(job)], capture_output=True).returncode == 0


@pytest.mark.parametrize("spec", ["dbench", "vshn", "sweep", "soak"])
def test_every_profile_parses_in_fio(tmp_path, spec):
    p = load_profile(spec)
    job = tmp_path / "j.fio"
    job.write_text(render_jobfile(p, p.tests, p.timing, tmp_path))
    proc = subprocess.run(["fio", "--parse-only", str(job)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_custom_job_file(tmp_path):
    job = tmp_path / "mine.fio"
    job.write_text(
        "[global]\nioengine=libaio\nruntime=10s\nsize=128M\ntime_based\n\n"
        "[My Random Reads]\nrw=randread\nbs=16k\niodepth=8\n\n[w]\nrw=write\nbs=1M\nfsync=4\n"
    )
    p = load_profile(f"file:{job}")
    assert p.name == "custom" and [t.name for t in p.tests] == ["my-random-reads", "w"]
    assert p.timing.runtime_s == 10 and p.timing.size_bytes == 128 * 2**20
    assert p.test("w").fsync == 4 and p.test("my-random-reads").iodepth == 8


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: load_profile("dbnech"), "unknown profile 'dbnech'"),
        (lambda: parse_size("-1G"), "must be positive"),
        (lambda: parse_size("lots"), "not a size"),
        (lambda: parse_seconds("-2s"), "must not be negative"),
        (lambda: load_profile("dbench").test("nope"), "has no test 'nope'"),
        (lambda: load_profile("file:/nonexistent.fio"), "does not exist"),
    ],
)
def test_bad_input_is_a_clear_error(call, message):
    with pytest.raises(ProfileError, match=message):
        call()


def test_sizes_are_fio_binary_units():
    assert parse_size("4k") == 4096 and parse_size("2G") == 2 * 2**30 and parse_size("1.5M") == 1572864
