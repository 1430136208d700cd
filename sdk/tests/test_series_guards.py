"""The cells over time (#63): per-second rows, their stability, steady state, and the guards'
flags in the statistics (left out by default, kept on request), on synthetic documents."""

from __future__ import annotations

import statistics

import pytest
from typer.testing import CliRunner

from pvbench.analytics import AnalyticsError
from pvbench.cells.guards import GUARD_LIST
from pvbench.cli.main import app
from pvbench.pipeline import build_tables
from pvbench.results.schema import GuardFlag, SteadyStateResult
from pvbench.store import open_store
from pvbench.testing.documents import doc, seconds, write
from pvbench.testing.tables import occasions_read_apart


def _flag(rule="client_cpu", excluded=True) -> GuardFlag:
    return GuardFlag(rule=rule, value=0.98, threshold=0.9, excluded=excluded, detail=f"{rule} tripped")


def _store(tmp_path, flagged_value=5000.0, flag=None):
    """Two classes × 3 reps in one occasion: fast's rep 3 flagged (and far off) when ``flag``."""
    docs = []
    for sc, level in [("fast", 1000.0), ("slow", 500.0)]:
        for rep in (1, 2, 3):
            value = flagged_value if (sc == "fast" and rep == 3 and flag) else level + rep
            docs.append(
                doc(
                    storage_class=sc,
                    rep=rep,
                    value=value,
                    series=seconds(iops=[value * f for f in (0.5, 1.0, 1.0, 1.1, 0.9)]),
                    steady_state=SteadyStateResult(
                        criterion="iops_slope:0.3%",
                        window_s=10,
                        ramp_s=5,
                        max_s=60,
                        attained=not (sc == "slow" and rep == 2),
                        after_s=None if sc == "slow" and rep == 2 else 22,
                    ),
                    guards=[flag] if (sc == "fast" and rep == 3 and flag) else [],
                    fio_options={"direct": "1", "bs": "4k"},
                )
            )
    write(tmp_path, docs)
    return open_store(str(tmp_path))


def test_the_series_is_kept_as_lists_and_the_latest_run_unnested_one_row_per_interval(tmp_path):
    con = build_tables(_store(tmp_path), "syn", extras=False)
    assert con.execute("select count(*), sum(len(iops)) from cell_series").fetchone() == (6, 6 * 5)
    assert con.execute('select count(*), max("interval"), sum(bw_mib_s) > 0 from cell_seconds').fetchone() == (
        30,
        5,
        True,
    )
    rows = con.execute(
        "select t_s, iops, lat_p99_us from latest_run_seconds where storage_class = 'fast' and rep = 2 order by t_s"
    ).fetchall()
    assert [r[0] for r in rows] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert [r[1] for r in rows] == pytest.approx([1002 * f for f in (0.5, 1.0, 1.0, 1.1, 0.9)], rel=1e-6)


def test_stability_arithmetic(tmp_path):
    con = build_tables(_store(tmp_path), "syn", extras=False)
    cv, worst, iops_min, p99_max, n = con.execute(
        "select stability_cv, worst_second_ratio, iops_min_ratio, p99_max_ratio, n_seconds from result_rows"
        " where storage_class = 'fast' and rep = 1"
    ).fetchone()
    values = [1001 * f for f in (0.5, 1.0, 1.0, 1.1, 0.9)]
    assert n == 5
    assert cv == pytest.approx(statistics.stdev(values) / statistics.mean(values))
    assert worst == pytest.approx(min(values) / statistics.median(values)) == iops_min
    p99 = [1e6 / v * 2 for v in values]
    assert p99_max == pytest.approx(max(p99) / statistics.median(p99))
    row = con.execute(
        "select n_results, n_seconds, median_headline_cv, n_steady, n_not_steady, median_steady_after_s"
        " from report_stability where storage_class = 'slow'"
    ).fetchone()
    assert row[:2] == (3, 15)
    assert row[2] == pytest.approx(cv)  # the same shape at every rep: the same CV
    assert row[3:] == (2, 1, 22)


def test_the_band_over_time_is_over_the_latest_runs_repetitions(tmp_path):
    con = build_tables(_store(tmp_path), "syn", extras=False)
    rows = con.execute(
        "select t_s, n, iops_mean, iops_sd, iops_min, iops_max from report_seconds"
        " where storage_class = 'slow' order by t_s"
    ).fetchall()
    assert len(rows) == 5
    values = [(500 + rep) * 1.1 for rep in (1, 2, 3)]
    single = pytest.approx  # the seconds are kept in single precision (cell_series): 7 digits
    t, n, mean, sd, low, high = rows[3]
    assert (t, n) == (4.0, 3)
    assert mean == single(statistics.mean(values), rel=1e-6)
    assert sd == single(statistics.stdev(values), rel=1e-4)  # a difference of values: fewer digits
    assert (low, high) == (single(min(values), rel=1e-6), single(max(values), rel=1e-6))
    heat = con.execute(
        "select percentile, latency_us, n_reps from report_latency_heatmap"
        " where storage_class = 'slow' and t_s = 4 order by percentile_order"
    ).fetchall()
    p99 = statistics.median([1e6 / v * 2 for v in values])
    assert heat == [
        ("p50", single(p99 / 2.5, rel=1e-6), 3),
        ("p99", single(p99, rel=1e-6), 3),
        ("p99.9", single(p99 * 1.6, rel=1e-6), 3),
    ]
    assert (
        con.execute("select count(distinct series) from report_seconds_latest where storage_class = 'slow'").fetchone()[
            0
        ]
        == 3
    )


def test_steady_state_misses_are_anomalies(tmp_path):
    con = build_tables(_store(tmp_path), "syn", extras=False)
    assert con.execute(
        "select storage_class, rep, steady_criterion, steady_max_s from report_unsteady_cells"
    ).fetchall() == [("slow", 2, "iops_slope:0.3%", 60.0)]


def _mean(con, sc="fast"):
    return con.execute("select n, mean from summary where storage_class = ? and metric = 'iops'", [sc]).fetchone()


def test_an_excluded_flag_leaves_the_result_out_unless_its_rule_is_kept(tmp_path):
    store = _store(tmp_path, flag=_flag())
    con = build_tables(store, "syn")
    assert _mean(con) == (2, pytest.approx(1001.5))
    assert con.execute("select n_results from report_stability where storage_class = 'fast'").fetchone()[0] == 2
    flagged = con.execute(
        "select storage_class, rep, rule_title, counted, excluded, fio_version, fio_options from report_flagged_cells"
    ).fetchall()
    title = {g.rule: g.title for g in GUARD_LIST}["client_cpu"]
    assert flagged == [("fast", 3, title, "left out", True, "fio-3.33", "bs=4k direct=1")]
    verdicts = con.execute(
        "select n_baseline, n_candidate from report_comparisons where kind = 'storage_class'"
    ).fetchall()
    assert sorted(verdicts[0]) == [2, 3]  # fast's flagged value is not in the verdict
    # kept: it counts again, exactly as if it had never been flagged, and stays marked
    kept = build_tables(store, "syn", keep_flagged=("client_cpu",))
    assert _mean(kept) == (3, pytest.approx((1001 + 1002 + 5000) / 3))
    clean = build_tables(_store(tmp_path / "clean", flagged_value=5000.0, flag=None), "syn", extras=False)
    assert _mean(clean)[0] == 3
    sd_kept = kept.execute("select sd, median from summary where storage_class = 'fast' and metric = 'iops'").fetchone()
    values = [1001, 1002, 5000]
    assert sd_kept == (pytest.approx(statistics.stdev(values)), pytest.approx(1002))
    assert kept.execute("select counted, excluded from report_flagged_cells").fetchall() == [
        ("kept (--keep-flagged)", False)
    ]
    assert (
        kept.execute("select count(*) from occasion_measurements where storage_class = 'fast'").fetchone()[0]
        == (con.execute("select count(*) from occasion_measurements where storage_class = 'fast'").fetchone()[0])
    )  # one row per occasion either way
    assert not occasions_read_apart(kept)  # merged again, as the compaction reads them
    # another rule kept: this flag is still left out
    other = build_tables(store, "syn", extras=False, keep_flagged=("page_cache",))
    assert _mean(other)[0] == 2


def test_a_flag_that_does_not_exclude_is_counted_and_shown(tmp_path):
    con = build_tables(_store(tmp_path, flag=_flag("page_cache", excluded=False)), "syn", extras=False)
    assert _mean(con)[0] == 3
    assert con.execute("select counted from report_flagged_cells").fetchall() == [("flagged, counted",)]


def test_the_guard_catalog_is_exported(tmp_path):
    con = build_tables(_store(tmp_path, flag=_flag()), "syn", extras=False, keep_flagged=("page_cache",))
    rows = con.execute(
        "select rule, title, threshold, unit, bias, excluded, description from guard_catalog order by guard_order"
    ).fetchall()
    assert rows == [(g.rule, g.title, g.threshold, g.unit, g.bias, g.excluded, g.description) for g in GUARD_LIST]
    report = con.execute("select rule, n_flagged, excluded from report_guards order by guard_order").fetchall()
    assert report == [
        (g.rule, 1 if g.rule == "client_cpu" else 0, g.excluded and g.rule != "page_cache") for g in GUARD_LIST
    ]


def test_an_unknown_rule_is_one_line_before_anything_runs(tmp_path):
    with pytest.raises(AnalyticsError, match="unknown guard rule"):
        build_tables(open_store(str(tmp_path)), "syn", keep_flagged=("client-cpu",))
    result = CliRunner().invoke(
        app, ["aggregate", "--store", str(tmp_path / "nothing"), "--keep-flagged", "client_cpu,nope"]
    )
    assert result.exit_code == 2
    assert "unknown guard rule(s) 'nope'" in result.output
    assert not (tmp_path / "nothing").exists()
