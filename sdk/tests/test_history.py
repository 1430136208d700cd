"""A storage class's history (#64): occasion_history, the change points and their events
(report_change_points, report_history, report_history_banner) and `pvbench history`, on synthetic
nightly runs with a planted step at a labelled CSI driver image change."""

from __future__ import annotations

import math
import os
from datetime import timedelta

import duckdb
import pytest
from cli_helpers import pvbench
from stats_helpers import T0, doc, write

from pvbench.pipeline import aggregate, build_tables
from pvbench.store import open_store

# a fixed day-to-day wobble of the occasion means (log sd ≈ 2%), so every run sees the same numbers
WOBBLE = [0.02, -0.01, 0.015, -0.025, 0.005, 0.0, -0.015, 0.02, -0.005, 0.01, -0.02, 0.012]
STEP_RUN = 6  # night-06: the first run after the CSI driver's new image, 20% slower from there on
CSI_CHANGE = {
    "trigger": "csi-ebs",
    "old-image": "registry.example/ebs-csi-driver:v1.2",
    "new-image": "registry.example/ebs-csi-driver:v1.3",
    "changed": "DaemonSet/kube-system/ebs-csi-node",
}
EVENT = "CSI driver image v1.2 → v1.3 (DaemonSet/kube-system/ebs-csi-node)"


def nightly(
    nights: range, *, storage_class: str, campaign: str = "syn", step_at: int | None = None, nodes: str | None = None
) -> list:
    """One run a night (one occasion, 3 repetitions) of randread-iops at ~1000 IOPS; from night
    ``step_at`` on 20% slower. The night-STEP_RUN run carries the CSI change's labels, every other
    run trigger=cron (no event)."""
    docs = []
    for i in nights:
        level = 1000.0 * (0.8 if step_at is not None and i >= step_at else 1.0) * math.exp(WOBBLE[i % len(WOBBLE)])
        labels = CSI_CHANGE if i == STEP_RUN else {"trigger": "cron"}
        if nodes:  # the run's node selection, as the WorkflowTemplate labels it
            labels = {**labels, "node-selection": nodes}
        for rep in range(1, 4):
            docs.append(
                doc(
                    campaign=campaign,
                    run=f"night-{i:02d}{'-' + nodes.split('=')[-1] if nodes else ''}",
                    occasion="night",
                    storage_class=storage_class,
                    rep=rep,
                    value=level * (1 + 0.01 * (rep - 2)),
                    started=T0 + timedelta(days=i, minutes=rep),
                    labels=labels,
                )
            )
    return docs


@pytest.fixture(scope="module")
def twelve_nights(tmp_path_factory):
    """12 nights: 'fast' steps down 20% at the CSI change (6 + 6 occasions), 'slow' stays flat,
    'young' ran the last 4 nights only."""
    root = tmp_path_factory.mktemp("history")
    write(
        root,
        nightly(range(12), storage_class="fast", step_at=STEP_RUN)
        + nightly(range(12), storage_class="slow")
        + nightly(range(8, 12), storage_class="young"),
    )
    return root, build_tables(open_store(str(root)), "syn")


def test_a_step_at_a_csi_image_change_is_found_at_that_run_and_attributed_to_it(twelve_nights):
    _, con = twelve_nights
    rows = con.execute(
        """select storage_class, workload, change_index, run, run_before, change_pct, change_pct_ci95_low,
                  change_pct_ci95_high, p_value, verdict, events, event_runs, new_in_latest_run, summary
           from report_change_points"""
    ).fetchall()
    assert len(rows) == 1, rows  # the flat class and the short one have none
    sc, workload, index, run, before, pct, low, high, p, verdict, events, event_runs, new, summary = rows[0]
    assert (sc, workload, index, run, before) == ("fast", "randread-iops", 7, "night-06", "night-05")
    assert -22 < pct < -18 and low < pct < high and high < -15, (pct, low, high)
    assert p < 0.05 and verdict == "worse"
    assert events == EVENT and event_runs == "night-06"
    assert not new  # the history up to the run before had it already
    assert summary.startswith("−") and "from 2024-03-10, after " + EVENT in summary, summary


def test_the_history_has_each_occasion_its_level_and_the_events(twelve_nights):
    _, con = twelve_nights
    fast = con.execute(
        """select occasion_index, run, n, mean, ci95_low, ci95_high, segment, level, is_change_point,
                  event, event_at_occasion_index, judged, previous_level, current_level
           from report_history where storage_class = 'fast' order by occasion_index"""
    ).fetchall()
    assert [r[0] for r in fast] == list(range(1, 13)) and all(r[2] == 3 for r in fast)
    assert all(r[4] < r[3] < r[5] for r in fast)  # each occasion's interval around its mean
    assert [r[6] for r in fast] == [1] * 6 + [2] * 6
    assert fast[0][7] == pytest.approx(1000, rel=0.02) and fast[-1][7] == pytest.approx(800, rel=0.02)
    assert [r[0] for r in fast if r[8]] == [7]
    # the event's rule: between the last occasion before the CSI change's run and its first
    assert [(r[0], r[9], r[10]) for r in fast if r[9]] == [(7, EVENT, 6.5)]
    assert all(r[11] for r in fast)
    assert fast[0][12] == pytest.approx(1000, rel=0.02) and fast[0][13] == pytest.approx(800, rel=0.02)
    slow = con.execute(
        """select distinct judged, n_change_points, previous_level, drifting, series_summary
           from report_history where storage_class = 'slow'"""
    ).fetchall()
    assert slow == [(True, 0, None, False, slow[0][4])] and slow[0][4].startswith("no change point; no drift")
    young = con.execute(
        "select distinct n_occasions, judged, judged_note from report_history where storage_class = 'young'"
    ).fetchall()
    assert young == [(4, False, "4 occasions: change points need at least 6")]
    # nothing new with the latest run: no banner
    assert con.execute("select count(*) from report_history_banner").fetchone()[0] == 0


def test_the_latest_run_that_reveals_a_step_raises_the_overview_banner(tmp_path):
    """6 nights at the old level, then 3 at the new one: only the third shows the step (a level
    needs 3 occasions), so the latest run revealed it: the overview's banner says so."""
    write(tmp_path, nightly(range(9), storage_class="fast", step_at=STEP_RUN) + nightly(range(9), storage_class="slow"))
    out = tmp_path / "tables"
    aggregate(open_store(str(tmp_path)), "syn", out=out)
    change = duckdb.sql(
        f"select run, new_in_latest_run, latest_run, events from '{out / 'report_change_points.parquet'}'"
    ).fetchall()
    assert change == [("night-06", True, "night-08", EVENT)]
    banner = duckdb.sql(
        f"select storage_class, status, n_worse, headline, details from '{out / 'report_history_banner.parquet'}'"
    ).fetchall()
    assert len(banner) == 1, banner
    sc, status, worse, headline, details = banner[0]
    assert (sc, status, worse) == ("fast", "negative", 1)
    assert headline.startswith("fast: the latest run confirms a change of level in 1 headline metric"), headline
    assert "randread-iops — read: −" in details and "from 2024-03-10, after " + EVENT in details, details


def test_history_command_prints_a_class_across_campaigns(tmp_path):
    """`pvbench history` reads every campaign's stored tables as one history: the step between
    January's nights and February's is found there, at the CSI change; February alone is flat."""
    write(
        tmp_path,
        nightly(range(6), storage_class="fast", campaign="jan")
        + nightly(range(6, 12), storage_class="fast", campaign="feb", step_at=STEP_RUN),
    )
    store = open_store(str(tmp_path))
    aggregate(store, "jan")
    aggregate(store, "feb")
    done = pvbench("history", "--store", tmp_path, "--storage-class", "fast", env={**os.environ, "COLUMNS": "250"})
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "campaign(s) feb, jan" in out and "12 occasions" in out, out
    assert "jan / night-05 / night" in out and "feb / night-06 / night" in out, out
    line = next(line for line in out.splitlines() if line.startswith("change point"))
    assert "randread-iops — read (iops) from 2024-03-10, after " + EVENT in line, line
    assert line.startswith("change point −") and "p 0." in line, line
    assert "1 change point; current level" in out and "against the level before" in out
    alone = pvbench("history", "--store", tmp_path, "--campaign", "feb", "--storage-class", "fast")
    assert alone.returncode == 0 and "no change point" in alone.stdout and "change point −" not in alone.stdout
    unknown = pvbench("history", "--store", tmp_path, "--storage-class", "nope")
    assert unknown.returncode == 2 and "error: storage class 'nope' has no history" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    nothing = pvbench("history", "--store", tmp_path / "elsewhere", "--storage-class", "fast")
    assert nothing.returncode == 2 and "error: no history of any campaign" in nothing.stderr


def test_a_campaigns_report_takes_in_the_history_the_other_campaigns_stored(tmp_path):
    """February's aggregation reads January's stored occasion_history (not its results): its
    report's history of 'fast' is the 12 nights, the step at the CSI change found there; January,
    aggregated before February existed, has its 6 nights only. 'other' ran in January only: not
    in February's report."""
    write(
        tmp_path,
        nightly(range(6), storage_class="fast", campaign="jan")
        + nightly(range(6), storage_class="other", campaign="jan")
        + nightly(range(6, 12), storage_class="fast", campaign="feb", step_at=STEP_RUN),
    )
    store = open_store(str(tmp_path))
    aggregate(store, "jan")
    aggregate(store, "feb")
    tables = tmp_path / "analytics"

    def read(campaign: str, query: str) -> list[tuple]:
        con = duckdb.connect()
        for table in ("report_history", "report_change_points"):
            path = tables / f"campaign={campaign}" / "run=all" / f"{table}.parquet"
            # not hive-partitioned: the folders' campaign= would hide the rows' own
            con.execute(f"create view {table} as select * from read_parquet('{path}', hive_partitioning = false)")
        return con.execute(query).fetchall()

    feb = read(
        "feb",
        "select storage_class, campaign, count(*), max(occasion_index) from report_history group by all order by 2",
    )
    assert feb == [("fast", "feb", 6, 12), ("fast", "jan", 6, 6)], feb
    change = read("feb", "select campaign, run, change_index, verdict, events from report_change_points")
    assert change == [("feb", "night-06", 7, "worse", EVENT)], change
    jan = read("jan", "select storage_class, count(*) from report_history group by all order by 1")
    assert jan == [("fast", 6), ("other", 6)], jan
    # aggregated again, January reads February's stored occasions in turn
    aggregate(store, "jan")
    assert read("jan", "select count(*) from report_change_points") == [(1,)]


def test_each_node_selection_is_a_series_of_its_own(tmp_path):
    """Nightly runs of one class on two node pools: pool a steps down at the CSI change, pool b
    stays flat; read as one series, the two would blur the step."""
    write(
        tmp_path,
        nightly(range(12), storage_class="fast", step_at=STEP_RUN, nodes="pool=a")
        + nightly(range(12), storage_class="fast", nodes="pool=b"),
    )
    store = open_store(str(tmp_path))
    con = build_tables(store, "syn")
    series = con.execute(
        "select node_selection, count(*), max(n_change_points) from report_history group by all order by 1"
    ).fetchall()
    assert series == [("pool=a", 12, 1), ("pool=b", 12, 0)], series
    [(nodes, run)] = con.execute("select node_selection, run from report_change_points").fetchall()
    assert (nodes, run) == ("pool=a", "night-06-a")
    aggregate(store, "syn")  # the stored tables `pvbench history` reads
    done = pvbench("history", "--store", tmp_path, "--storage-class", "fast", env={**os.environ, "COLUMNS": "250"})
    assert done.returncode == 0, done.stderr
    assert "randread-iops — read (iops) on pool=a ·" in done.stdout and "(iops) on pool=b ·" in done.stdout
