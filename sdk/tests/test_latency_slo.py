"""Latency-bounded IOPS (the latency-slo profile): checks before fio, the search, real fio, analytics."""

from __future__ import annotations

import duckdb
import pytest
import yaml
from cli_helpers import pvbench
from pydantic import ValidationError
from test_step import step

from pvbench.cells import slo as slo_search
from pvbench.fio.runner import FioError, run_fio
from pvbench.profiles import (
    PROFILES,
    FioTest,
    LatencySlo,
    ProfileError,
    Timing,
    load_profile,
    parse_latency_us,
    render_jobfile,
)
from pvbench.results import ResultDocument

pytestmark = pytest.mark.quiet

# ------------------------------------------------------------------ declared, and checked before fio


def test_the_catalog_has_the_latency_slo_profile():
    profile = PROFILES["latency-slo"]
    tests = {t.name: t for t in profile.tests}
    assert tests["randread-4k-p99-1ms"].slo == LatencySlo(percentile=99, target_us=1000)
    etcd = tests["etcd-fsync-p99-10ms"]
    assert etcd.slo == LatencySlo(percentile=99, target_us=10_000, latency="sync")
    assert etcd.bs_bytes == 2300 and etcd.extra["fdatasync"] == "1" and etcd.extra["direct"] == "0"
    assert {t.headline_metric for t in profile.tests} == {"slo_iops"}


@pytest.mark.parametrize(
    "text, us", [("1ms", 1000), ("250us", 250), ("250µs", 250), ("10 ms", 10_000), ("750", 750), ("500ns", 0.5)]
)
def test_latency_targets_parse(text, us):
    assert parse_latency_us(text) == pytest.approx(us)


@pytest.mark.parametrize("text", ["0", "0ms", "-1ms", "soon", "1 fortnight", "nan"])
def test_bad_latency_targets_are_clear_errors(text):
    with pytest.raises(ProfileError, match="latency"):
        parse_latency_us(text)


@pytest.mark.parametrize(
    "over, message",
    [
        ({"rw": "randrw", "rwmixread": 70}, "mixes directions"),
        ({"load_target": 0.8}, "already searches a load level"),
        ({"extra": {"rate_iops": "100"}}, "sets rate_iops itself"),
        ({"slo": LatencySlo(percentile=99, target_us=1000, latency="sync")}, "never syncs"),
    ],
)
def test_an_objective_the_search_cannot_measure_is_refused(over, message):
    base = dict(name="t", title="t", rw="randread", bs="4k", iodepth=8, slo=LatencySlo(percentile=99, target_us=1000))
    with pytest.raises(ValidationError, match=message):
        FioTest(**{**base, **over})


@pytest.mark.parametrize(
    "field, value", [("percentile", 0), ("percentile", 100), ("percentile", 120), ("target_us", 0)]
)
def test_bad_percentiles_and_targets_are_refused(field, value):
    with pytest.raises(ValidationError):
        LatencySlo(**{"percentile": 99, "target_us": 1000, field: value})


@pytest.mark.parametrize(
    "lines, message",
    [
        (["pvbench_slo_target=0ms"], "pvbench_slo_target is not a latency above 0"),
        (["pvbench_slo_target=fast"], "pvbench_slo_target is not a latency above 0"),
        (["pvbench_slo_target=1ms", "pvbench_slo_percentile=100"], "above 0 and below 100"),
        (["pvbench_slo_target=1ms", "pvbench_slo_percentile=p99"], "above 0 and below 100"),
        (["pvbench_slo_target=1ms", "pvbench_slo_latency=fsync"], "must be io or sync"),
        (["pvbench_slo_percentile=99"], "need pvbench_slo_target"),
        (["pvbench_slo_target=1ms", "rw=randrw"], "job [j] cannot have a latency objective"),
    ],
)
def test_a_job_files_objective_is_checked(tmp_path, lines, message):
    job = tmp_path / "slo.fio"
    job.write_text("[global]\nruntime=1s\n[j]\nrw=randread\nbs=4k\n" + "\n".join(lines) + "\n")
    with pytest.raises(ProfileError) as exc:
        load_profile(f"file:{job}")
    assert message in str(exc.value)


def test_a_bad_objective_fails_the_step_before_fio_starts(tmp_path):
    job = tmp_path / "slo.fio"
    job.write_text("[global]\nruntime=1s\n[j]\nrw=randread\nbs=4k\npvbench_slo_target=0\n")
    proc = step(tmp_path, "--profile", f"file:{job}", "--workload", "j", "--store", str(tmp_path / "s"))
    assert proc.returncode == 2, proc.stderr
    assert "pvbench_slo_target is not a latency above 0" in proc.stderr and "Traceback" not in proc.stderr
    assert not list((tmp_path / "target").glob("pvbench-fio.*")) and not (tmp_path / "s").exists()


def test_the_job_file_fio_gets_has_no_pvbench_options(tmp_path):
    job = tmp_path / "slo.fio"
    job.write_text("[j]\nrw=randread\nbs=4k\niodepth=16\npvbench_slo_target=2ms\npvbench_slo_percentile=99.9\n")
    proc = pvbench("profiles", "show", f"file:{job}", "--fio")
    assert proc.returncode == 0, proc.stderr
    assert "pvbench_slo" not in proc.stdout and "rate_iops" not in proc.stdout


# ------------------------------------------------------------------ the search, on a model of a device


def fake_fio(max_iops: float, latency_at) -> slo_search.Runner:
    """fio's JSON for a device doing at most ``max_iops`` whose p99 (µs) at a load is ``latency_at(iops)``."""
    calls = []

    def run(rate, full):
        iops = min(rate, max_iops) if rate is not None else max_iops
        lat_ns = int(latency_at(iops) * 1000)
        calls.append((rate, full))
        side = {"iops": iops, "lat_ns": {"bins": {str(lat_ns): 100}}}
        return {"jobs": [{"read": side, "write": {"iops": 0}}]}, "{}"

    run.calls = calls
    return run


TEST = FioTest(name="t", title="t", rw="randread", bs="4k", iodepth=32, slo=LatencySlo(percentile=99, target_us=1000))
TIMING = Timing(ramp_s=1, runtime_s=20, size="16M")


def test_the_search_finds_the_rate_where_the_percentile_crosses_the_target():
    # p99 rises with load: 1 ms is crossed at 60,000 of a 100,000 IOPS maximum
    run = fake_fio(100_000, lambda iops: 200 + 800 * iops / 60_000)
    result, _ = slo_search.search(TEST, TIMING, run)
    assert result.met and result.bound == "latency"
    assert 58_000 <= result.iops <= 60_000 and result.latency_us <= 1000
    phases = [p.phase for p in result.probes]
    assert phases[:2] == ["max", "floor"] and phases[-1] == "confirm"
    assert 1 <= phases.count("search") <= slo_search.MAX_SEARCH_PROBES
    assert [p.met for p in result.probes[:2]] == [False, True]
    # bounded: the short probes, then one full-length run (it met the target)
    assert [full for _, full in run.calls].count(True) == 1
    assert all(p.runtime_s == 5 for p in result.probes if p.phase != "confirm")


def test_a_target_met_unthrottled_is_the_device_maximum():
    result, _ = slo_search.search(TEST, TIMING, fake_fio(50_000, lambda iops: 300))
    assert result.met and result.bound == "device" and result.iops == 50_000 and result.rate_iops is None
    assert [p.phase for p in result.probes] == ["max", "confirm"]


def test_a_target_missed_even_at_the_floor_is_not_met_and_has_no_number():
    result, _ = slo_search.search(TEST, TIMING, fake_fio(50_000, lambda iops: 5000))
    assert not result.met and result.bound == "not-met" and result.iops is None and result.latency_us is None
    assert [p.phase for p in result.probes] == ["max", "floor", "confirm"]
    assert result.probes[1].rate_iops == 500  # 1% of the maximum


def test_a_full_length_miss_backs_off_once():
    def run(rate, full):  # short probes all meet; the full-length run meets only below 40,000 IOPS
        iops = rate if rate is not None else 50_000
        lat = 2000 if full and iops > 40_000 else 500
        return {"jobs": [{"read": {"iops": iops, "lat_ns": {"bins": {str(lat * 1000): 1}}}}]}, "{}"

    result, _ = slo_search.search(TEST, TIMING, run)
    assert [p.phase for p in result.probes] == ["max", "confirm", "confirm"]
    assert result.met and result.iops == 40_000 and result.bound == "latency"


def test_numjobs_share_the_rate():
    four = TEST.model_copy(update={"numjobs": 4})
    assert slo_search.rate_options(four, 1000) == {"rate_iops": "250"}
    assert slo_search.offered(four, 1001) == 1000
    assert slo_search.rate_options(four, None) == {}


def test_a_cells_time_is_bounded():
    probe = slo_search.slo_probe_timing(TIMING)
    assert (probe.ramp_s, probe.runtime_s) == (1, 5)
    assert slo_search.slo_fio_seconds(TIMING) == 8 * 6 + 2 * 21


@pytest.mark.parametrize("ramp, runtime", [(1, 3), (1, 1), (2, 1), (30, 15)])
def test_no_run_of_the_search_ramps_longer_than_it_measures(ramp, runtime):
    """fio 3.33 times nothing of a rate-limited job whose ramp_time is about its runtime or more:
    every probe and full-length run of the search ramps at most half as long as it measures."""
    timing = Timing(ramp_s=ramp, runtime_s=runtime, size="16M")
    for run in (slo_search.slo_probe_timing(timing), slo_search.slo_run_timing(timing)):
        assert run.ramp_s <= run.runtime_s / 2


def test_a_rate_limited_probe_after_a_ramp_is_timed_by_real_fio(tmp_path):
    """The case that failed on the real node (QUICK timing: ramp 1 s, runtime 3 s -> 0.75 s probes):
    fio must report the latency of every I/O of a rate-limited probe."""
    profile = PROFILES["latency-slo"]
    test = profile.test("randread-4k-p99-1ms")
    probe = slo_search.slo_probe_timing(Timing(ramp_s=1, runtime_s=3, size="8M"))
    options = {test.name: slo_search.rate_options(test, 400)}
    out = run_fio(render_jobfile(profile, [test], probe, tmp_path, overrides=options), 60).output
    read = out["jobs"][0]["read"]
    assert read["total_ios"] > 0 and read["lat_ns"]["N"] >= read["total_ios"]


def test_a_search_that_times_nothing_fails_the_cell_with_one_line(tmp_path, monkeypatch):
    """A probe with no latency is a failed cell (a FioError: message, exit 1), not a traceback."""
    assert issubclass(slo_search.SloSearchError, FioError)
    monkeypatch.setattr(slo_search, "measured", lambda *a, **k: (0.0, None))
    with pytest.raises(FioError, match="max run of the latency search moved no read I/O"):
        slo_search.search(TEST, TIMING, lambda rate, full: ({}, ""))


# ------------------------------------------------------------------ real fio, local mode, analytics

JOBS = """
[global]
size=8M
[loose]
rw=randread
bs=4k
iodepth=8
pvbench_slo_target=10s
[tight]
rw=randread
bs=4k
iodepth=8
pvbench_slo_target=1us
pvbench_slo_percentile=99.9
"""


def test_fio_step_records_the_search(tmp_path):
    job = tmp_path / "slo.fio"
    job.write_text(JOBS)
    proc = step(tmp_path, "--profile", f"file:{job}", "--workload", "tight", "--store", str(tmp_path / "s"))
    assert proc.returncode == 0, proc.stderr
    [path] = (tmp_path / "s").rglob("result.json")
    doc = ResultDocument.from_json(path.read_bytes())
    slo = doc.latency_slo
    assert slo is not None and not slo.met and slo.iops is None and slo.bound == "not-met"
    assert (slo.percentile, slo.target_us, slo.latency, slo.direction) == (99.9, 1.0, "io", "read")
    assert [p.phase for p in slo.probes] == ["max", "floor", "confirm"]
    assert slo.probes[0].rate_iops is None and slo.probes[0].iops > 0 and slo.probes[0].latency_us > 1
    floor = slo.probes[1]
    assert floor.rate_iops == pytest.approx(max(1, int(0.01 * slo.probes[0].iops)))
    assert "not met" in doc.provenance.notes["latency_slo"]
    # the cell's measurement is the full-length run at the floor rate, rate-limited as recorded
    assert doc.provenance.fio_options["rate_iops"] == str(int(floor.rate_iops))
    assert doc.workload.headline_metric == "slo_iops"


def test_etcd_test_times_fdatasync(tmp_path):
    proc = step(
        tmp_path, "--profile", "latency-slo", "--workload", "etcd-fsync-p99-10ms", "--store", str(tmp_path / "s")
    )
    assert proc.returncode == 0, proc.stderr
    [path] = (tmp_path / "s").rglob("result.json")
    slo = ResultDocument.from_json(path.read_bytes()).latency_slo
    assert slo.latency == "sync" and slo.direction == "write" and slo.target_us == 10_000
    assert slo.probes and all(p.latency_us is not None for p in slo.probes)
    assert slo.met == (slo.iops is not None) and slo.met == (slo.bound != "not-met")


def test_local_mode_aggregates_one_number_per_class(tmp_path):
    job = tmp_path / "slo.fio"
    job.write_text(JOBS)
    cfg = {
        "campaign": "slo",
        "store": str(tmp_path / "store"),
        "spool": str(tmp_path / "spool"),
        "storage_classes": {"alpha": str(tmp_path / "a"), "beta": str(tmp_path / "b")},
        "profiles": [f"file:{job}"],
        "repetitions": 1,
        "occasions": ["morning", "evening"],
        "seed": 3,
        "ramp": "100ms",
        "runtime": "400ms",
        "size": "8M",
    }
    config = tmp_path / "pvbench.yaml"
    config.write_text(yaml.safe_dump(cfg))
    proc = pvbench("local", "run", config, timeout=300)
    assert proc.returncode == 0, proc.stderr
    tables = tmp_path / "store" / "analytics" / "campaign=slo" / "run=all"
    rows = duckdb.sql(
        f"select storage_class, workload, objective, n_cells, n_met, n, mean, ci95_low, ci95_high, ci_basis, unit "
        f"from '{tables}/report_latency_slo.parquet' order by workload, storage_class"
    ).fetchall()
    by = {(r[0], r[1]): r for r in rows}
    assert set(by) == {(c, w) for c in ("alpha", "beta") for w in ("loose", "tight")}
    for sc in ("alpha", "beta"):
        _, _, objective, n_cells, n_met, n, mean, low, high, basis, unit = by[(sc, "loose")]
        assert objective == "p99 ≤ 10 s" and (n_cells, n_met, n) == (2, 2, 2) and unit == "IOPS"
        assert mean > 0 and low <= mean <= high and basis.startswith("2 occasions")
        _, _, objective, n_cells, n_met, n, mean, *_ = by[(sc, "tight")]
        assert objective == "p99.9 ≤ 1 µs" and (n_cells, n_met) == (2, 0) and n is None and mean is None
    # an ordinary metric: in the summary, with its unit and direction of good
    summary = duckdb.sql(
        f"select count(*), any_value(unit), any_value(better), bool_and(is_headline) "
        f"from '{tables}/summary.parquet' where metric = 'slo_iops'"
    ).fetchone()
    assert summary == (2, "IOPS", "higher", True)
