"""The cell second by second (pvbench.fio.series) and fio's steady state, from fio's own logs.

Real fio on a temporary directory, a few seconds each. Every run whose levels are asserted is
rate-limited (rate_iops): its one true answer does not depend on how loaded the machine is, and
no assertion depends on wall time.
"""

from __future__ import annotations

import statistics

import pytest

from pvbench.cells.cell import Cell
from pvbench.cells.run import TimingOverrides, plan_cell, run_cell
from pvbench.fio.parse import direction_metrics
from pvbench.fio.runner import run_fio
from pvbench.fio.series import (
    FIO_IO_U_PLAT_NR,
    cell_series,
    logs_archive,
    plat_idx_to_val,
    read_hist_log,
    read_logs_archive,
    series_log_options,
)
from pvbench.profiles import ProfileError, load_profile
from pvbench.results.schema import ResultDocument

pytestmark = pytest.mark.quiet


def _cell(job, workload: str) -> Cell:
    return Cell(
        campaign="c", run="r", occasion="o", storage_class="local", profile=f"file:{job}", workload=workload, rep=1
    )


def _hist_line(t_ms: int, direction: int, counts: dict[int, int]) -> str:
    bins = [counts.get(i, 0) for i in range(FIO_IO_U_PLAT_NR)]
    return ", ".join(str(v) for v in [t_ms, direction, 4096, *bins])


def _avg_line(t_ms: int, value: float, direction: int = 1) -> str:
    return f"{t_ms}, {value:g}, {direction}, 0, 0"


# ------------------------------------------------------------------ the parser, on hand-made logs
def test_plat_idx_to_val_is_fios_rule():
    # the first two groups are exact; then each group of 64 bins doubles the width (fio's stat.c)
    assert [plat_idx_to_val(i) for i in (0, 1, 127)] == [0, 1, 127]
    assert plat_idx_to_val(128) == 129  # 128 + (0 + 0.5) * 2
    assert plat_idx_to_val(191) == 128 + int(63.5 * 2)
    assert plat_idx_to_val(192) == 256 + 2  # 256 + 0.5 * 4
    assert plat_idx_to_val(FIO_IO_U_PLAT_NR - 1) == (1 << 33) + int(63.5 * (1 << 27))
    with pytest.raises(ValueError):
        plat_idx_to_val(FIO_IO_U_PLAT_NR)


def test_hist_log_bins_are_merged_across_jobs_and_give_fios_percentiles():
    # job 1: 90 I/Os at bin 100 (100 ns) and 10 at bin 1000; job 2: 100 at bin 1000, one interval
    job1_hist = _hist_line(1003, 1, {100: 90, 1000: 10})
    job2_hist = _hist_line(1004, 1, {1000: 100})
    assert read_hist_log(job1_hist)[0].bins == {100: 90, plat_idx_to_val(1000): 10}
    logs = {
        "pvbench_iops.1.log": _avg_line(1000, 100).encode(),
        "pvbench_iops.2.log": _avg_line(1000, 100).encode(),
        "pvbench_bw.1.log": _avg_line(1000, 400).encode(),
        "pvbench_bw.2.log": _avg_line(1000, 400).encode(),
        "pvbench_lat.1.log": _avg_line(1000, 1000).encode(),
        "pvbench_lat.2.log": _avg_line(1000, 3000).encode(),
        "pvbench_clat_hist.1.log": job1_hist.encode(),
        "pvbench_clat_hist.2.log": job2_hist.encode(),
    }
    [write] = cell_series([logs]).directions
    assert write.direction == "write" and write.t_s == [1.0]
    assert write.iops == [200.0] and write.bw_mib_s == [800 / 1024]
    assert write.lat_mean_us == [2.0]  # (1000 + 3000) / 2 ns, each job 100 IOPS
    # 200 samples: 90 at 100 ns, 110 at bin 1000 -> p50 is bin 1000 (the 100th sample), as fio counts
    big_us = plat_idx_to_val(1000) / 1000
    assert write.lat_p50_us == [big_us] and write.lat_p99_us == [big_us]


def test_a_later_job_and_a_late_histogram_land_in_their_own_intervals():
    # job 2 started 2 s after job 1 (startdelay); the histogram entries come a few ms after each
    # window and later each time; the last window has none (fio writes none for it)
    job1 = {
        "pvbench_iops.1.log": "\n".join(_avg_line(t, 100) for t in (10_000, 11_000, 12_000, 12_999, 14_000)),
        "pvbench_clat_hist.1.log": "\n".join(_hist_line(t, 1, {10: 1}) for t in (10_004, 11_030, 12_100, 13_250)),
    }
    job2 = {"pvbench_iops.2.log": "\n".join(_avg_line(t, 300) for t in (12_010, 13_010, 14_010))}
    logs = {name: text.encode() for name, text in {**job1, **job2}.items()}
    [write] = cell_series([logs]).directions
    assert write.t_s == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert write.iops == [100.0, 100.0, 400.0, 400.0, 400.0]
    assert [p is not None for p in write.lat_p50_us] == [True, True, True, True, False]
    # two clients' runs are summed interval by interval, by index, whatever their clocks say
    other_client = {"pvbench_iops.1.log": "\n".join(_avg_line(t, 10) for t in (99_000, 100_000)).encode()}
    both = cell_series([logs, other_client]).directions[0]
    assert both.iops == [110.0, 110.0, 400.0, 400.0, 400.0]
    # a last interval that not every job logged is a partial sum: left out
    cut = {**logs, "pvbench_iops.2.log": "\n".join(_avg_line(t, 300) for t in (12_010, 13_010)).encode()}
    assert cell_series([cut]).directions[0].iops == [100.0, 100.0, 400.0, 400.0]


def test_logs_archive_round_trip():
    one = {"pvbench_iops.1.log": b"1000, 5, 1, 0, 0\n"}
    two = {"pvbench_iops.1.log": b"1000, 7, 1, 0, 0\n"}
    assert read_logs_archive(logs_archive([one])) == [one]
    assert read_logs_archive(logs_archive([one, two])) == [one, two]
    assert logs_archive([one, two]) == logs_archive([one, two])  # the same logs, the same bytes
    assert logs_archive([{}]) is None


# ------------------------------------------------------------------ real fio
def _job(tmp_path, body: str) -> str:
    target = tmp_path / "target"
    target.mkdir(exist_ok=True)
    options = "\n".join(f"{k}={v}" for k, v in series_log_options().items())
    return f"[global]\nioengine=psync\ndirectory={target}\nsize=4M\nrw=randwrite\nbs=4k\n{options}\n{body}"


def test_a_rate_step_shows_in_the_series(tmp_path):
    # fio 3.33 cannot change a job's rate mid-run; two jobs of one group can: 100 IOPS for 8 s,
    # and from 3 s on a second job adds 300 IOPS for 4 s. Summed per interval, the step is there.
    body = "time_based=1\n[base]\nrate_iops=100\nruntime=8s\n[step]\nrate_iops=300\nstartdelay=3s\nruntime=4s\n"
    run = run_fio(_job(tmp_path, body), 60)
    [write] = cell_series([run.logs]).directions
    by_t = dict(zip(write.t_s, write.iops))
    before = [by_t[t] for t in (1.0, 2.0) if t in by_t]
    after = [by_t[t] for t in (5.0, 6.0) if t in by_t]
    assert before and after
    # the seconds around the step (3 and 4) are left out: where exactly it falls depends on scheduling
    # the level of each side (a loaded machine can delay one second's I/Os into the next, which fio's
    # rate limit then makes up: a single second may be off, the two sides' levels are not)
    assert abs(statistics.mean(before) / 100 - 1) < 0.3 and abs(statistics.mean(after) / 400 - 1) < 0.3, (before, after)
    assert statistics.mean(after) > 2 * statistics.mean(before), (before, after)
    assert len(write.t_s) == len(write.iops) == len(write.bw_mib_s) == len(write.lat_p99_us)


def test_a_cells_series_has_one_point_a_second_and_agrees_with_fios_summary(tmp_path):
    job = tmp_path / "cell.fio"
    job.write_text("[global]\nioengine=psync\ndirect=0\n[two-jobs]\nrw=randrw\nbs=4k\nnumjobs=2\nrate_iops=300,200\n")
    plan = plan_cell(_cell(job, "two-jobs"), tmp_path, TimingOverrides(ramp="1s", runtime="5s", size="8M"))
    doc, raw = run_cell(plan)
    series = doc.series
    assert series is not None and series.interval_ms == 1000
    summary = {m.direction: m for m in doc.metrics}
    assert {s.direction for s in series.directions} == {"read", "write"}
    for side in series.directions:
        # 5 s measured: 5 intervals, or 4 when a job did not log its cut-short last one; the
        # ramp (1 s) is not in it
        n = len(side.t_s)
        assert n in (4, 5) and side.t_s == [float(i) for i in range(1, n + 1)]
        lists = (side.iops, side.bw_mib_s, side.lat_mean_us, side.lat_p50_us, side.lat_p99_us, side.lat_p999_us)
        assert all(len(values) == n for values in lists)
        # both jobs summed: the intervals' mean is fio's own IOPS for the direction
        assert statistics.mean(side.iops) == pytest.approx(summary[side.direction].iops, rel=0.1)
        assert all(v is not None and v > 0 for v in side.lat_p50_us[:3])
        assert all(
            p50 <= p99 <= p999 for p50, p99, p999 in zip(side.lat_p50_us, side.lat_p99_us, side.lat_p999_us) if p50
        )
    # the raw logs are kept (beside fio.json), only the parsed series is in result.json
    [logs] = read_logs_archive(raw.fio_logs)
    assert {"pvbench_iops.1.log", "pvbench_iops.2.log", "pvbench_clat_hist.2.log"} <= set(logs)
    assert ResultDocument.from_json(doc.to_json()).series == series
    assert not list(tmp_path.glob("pvbench_*.log"))  # never in the target


def test_hist_log_bins_are_the_bins_of_fios_json_plus(tmp_path):
    run = run_fio(_job(tmp_path, "runtime=2s\ntime_based=1\n[a]\nrate_iops=200\n"), 60)
    values = {plat_idx_to_val(i) for i in range(FIO_IO_U_PLAT_NR)}
    json_bins = run.output["jobs"][0]["write"]["clat_ns"]["bins"]
    assert json_bins and {int(v) for v in json_bins} <= values
    assert direction_metrics(run.output)


STEADY_JOB = """[global]
ioengine=psync
direct=0
[flat]
rw=randwrite
bs=4k
rate_iops=200
steadystate=iops:60%
steadystate_duration=2s
[never]
rw=randwrite
bs=4k
rate_iops=200
steadystate=iops_slope:0.3%
steadystate_duration=30s
"""


@pytest.mark.parametrize("workload, attained", [("flat", True), ("never", False)])
def test_steady_state_is_fios_verdict(tmp_path, workload, attained):
    job = tmp_path / "steady.fio"
    job.write_text(STEADY_JOB)
    plan = plan_cell(_cell(job, workload), tmp_path, TimingOverrides(ramp="0s", runtime="8s", size="8M"))
    doc, _ = run_cell(plan)
    steady = doc.steady_state
    assert steady is not None and steady.max_s == 8 and steady.attained is attained
    if attained:
        # flat at 200 IOPS: steady once a 2 s window is full, well before the 8 s ceiling
        assert steady.criterion == "iops:60%" and steady.window_s == 2
        assert steady.after_s is not None and steady.after_s < steady.max_s
    else:
        # a 30 s window never fills in 8 s: fio runs the whole runtime and says so
        assert steady.after_s is None
        assert doc.metrics[0].runtime_ms >= 7000


@pytest.mark.parametrize(
    "options, says",
    [
        ("steadystate=iops_slope:0.3%", "needs both steadystate"),
        ("steadystate_duration=60s", "needs both steadystate"),
        ("steadystate=iops_slop:1%\nsteadystate_duration=60s", "is not fio's form"),
        ("steadystate=iops:0%\nsteadystate_duration=60s", "must be above 0"),
        ("ss=bw:5%\nss_dur=sixty", "must be durations"),
        ("ss=bw:5%\nss_dur=0", "longer than 0"),
    ],
)
def test_bad_steady_state_options_are_one_line_profile_errors(tmp_path, options, says):
    job = tmp_path / "bad.fio"
    job.write_text(f"[global]\nioengine=psync\n[a]\nrw=write\nbs=4k\n{options}\n")
    with pytest.raises(ProfileError) as err:
        load_profile(f"file:{job}")
    assert says in str(err.value) and "\n" not in str(err.value)


def test_global_steady_state_applies_to_every_job_and_reaches_fio(tmp_path):
    job = tmp_path / "g.fio"
    job.write_text("[global]\nss=bw_slope:1%\nss_dur=30s\nss_ramp=5s\n[a]\nrw=write\nbs=4k\n[b]\nrw=read\nbs=4k\n")
    profile = load_profile(f"file:{job}")
    for test in profile.tests:
        assert test.steady_state is not None and test.steady_state.criterion == "bw_slope:1%"
        assert test.fio_options()["steadystate_duration"] == "30000ms"
        assert "ss" not in test.extra


def test_soak_profile_has_steady_state_and_a_long_ceiling():
    soak = load_profile("soak")
    assert {t.rw for t in soak.tests} == {"randwrite", "write"}
    assert 600 <= soak.timing.runtime_s <= 1800
    assert all(t.steady_state is not None for t in soak.tests)
