"""The DuckDB models: schema in step with pydantic, statistics right, Table 6.1 reproduced, S3 works."""

import math
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest
from scipy import stats

from pvbench.analytics import AnalyticsError, discover_models
from pvbench.analytics.models import analytics_dir
from pvbench.pipeline import aggregate, build_tables
from pvbench.results.schema import (
    CellIdentity,
    DirectionMetrics,
    Provenance,
    ResultDocument,
    VolumeLifecycle,
    WorkloadSpec,
)
from pvbench.store import open_store

PVBENCH = [sys.executable, "-m", "pvbench.cli"]

# The thesis's Table 6.1 (Azure, averages of 20 runs), as printed.
TABLE_6_1 = {
    "Random read bandwidth": (186.3, 668.25, 17.88, 256.55),
    "Random write bandwidth": (122.7, 57.1, 38.25, 86.425),
    "Random read IOPS": (3991.75, 35745, 2389.9, 3364.35),
    "Random write IOPS": (975.25, 6029.05, 1537.55, 2782.8),
    "Read latency": (1007.52, 257.18, 2528.44, 3121.93),
    "Write latency": (4157.31, 756.25, 3024.92, 7076.00),
    "Sequential read": (194.5, 805.1, 9.99, 261.85),
    "Sequential write": (192.65, 59.55, 47.05, 86.67),
    "Mixed read IOPS": (1703, 18800, 1652.1, 2783.5),
    "Mixed write IOPS": (569.25, 6235.9, 551.3, 928.95),
}
SOLUTIONS = ("Azure Disk Storage", "Portworx", "OpenEBS", "Rook-Ceph")


def _decimals(value: float) -> int:
    text = repr(float(value))
    return 0 if text.endswith(".0") else len(text.split(".")[1])


def test_import_reproduces_table_6_1(thesis_store):
    con = build_tables(open_store(thesis_store), "thesis")
    rows = con.execute("select workload, storage_class, mean, n, unit from summary where is_headline").fetchall()
    got = {(w, sc): (mean, n, unit) for w, sc, mean, n, unit in rows}
    assert len(got) == 40
    for metric_prefix, expected in TABLE_6_1.items():
        for solution, printed in zip(SOLUTIONS, expected):
            [(label, (mean, n, unit))] = [
                (w, v) for (w, sc), v in got.items() if sc == solution and w.startswith(metric_prefix)
            ]
            assert n == 20
            # to the printed precision: within half a unit of the last printed decimal
            # (the table prints most cells with 2 decimals; 86.425 with 3)
            decimals = max(_decimals(printed), 2)
            assert abs(mean - printed) <= 0.5 * 10**-decimals + 1e-9, (label, solution, mean, printed)
    labels = {w for w, _ in got}
    assert "Random read IOPS" in labels and ("Random read IOPS", "Portworx") in got  # labels verbatim


def test_summary_statistics_match_scipy(thesis_store):
    con = build_tables(open_store(thesis_store), "thesis")
    values = np.array(
        [
            v
            for (v,) in con.execute(
                "select value from measurements where storage_class = 'OpenEBS' and workload = 'Random read IOPS'"
            ).fetchall()
        ]
    )
    row = con.execute(
        "select n, mean, sd, cv, median, q1, q3, min, max, ci95_low, ci95_high from summary "
        "where storage_class = 'OpenEBS' and workload = 'Random read IOPS'"
    ).fetchone()
    n, mean, sd, cv, median, q1, q3, lo, hi, ci_lo, ci_hi = row
    assert n == len(values) == 20
    assert mean == pytest.approx(values.mean()) and sd == pytest.approx(values.std(ddof=1))
    assert cv == pytest.approx(values.std(ddof=1) / values.mean())
    assert (median, q1, q3) == pytest.approx(tuple(np.percentile(values, [50, 25, 75])))
    assert (lo, hi) == (values.min(), values.max())
    # the CI stands on the 4 occasion means (k − 1 = 3 degrees of freedom), not on 20 values
    occasion_means = np.array(
        [
            m
            for (m,) in con.execute(
                "select avg(value) from measurements where storage_class = 'OpenEBS' and workload = 'Random read IOPS' "
                "group by run, occasion"
            ).fetchall()
        ]
    )
    assert len(occasion_means) == 4
    # the day-to-day variance of a log occasion mean (3 df of its own), moderated by the campaign's
    # prior (variance_prior: the same fit as the Python one, over every cell's occasion means),
    # never below the repetitions' noise; t on d0 + 3 df
    from pvbench.stats.moderated import prior_of_rows

    rows = con.execute(
        "select concat_ws('|', storage_class, profile, workload, direction, metric), concat_ws('|', run, occasion), "
        "ln(avg(value)) from measurements group by all having avg(value) > 0"
    ).fetchall()
    prior = prior_of_rows(*zip(*rows))
    s2, d0 = con.execute("select prior_s2, prior_df from variance_prior").fetchone()
    assert (s2, d0) == pytest.approx((prior.s2, prior.df), rel=1e-9) and 0 < d0 < math.inf
    by_occasion = con.execute(
        "select list(value) from measurements where storage_class = 'OpenEBS' and workload = 'Random read IOPS' "
        "group by run, occasion"
    ).fetchall()
    floor = np.mean([np.var(v, ddof=1) / len(v) / np.mean(v) ** 2 for (v,) in by_occasion])
    var_log = max((d0 * s2 + 3 * np.log(occasion_means).var(ddof=1)) / (d0 + 3), floor)
    half = stats.t.ppf(0.975, d0 + 3) * occasion_means.mean() * math.sqrt(var_log / 4)
    assert (ci_lo, ci_hi) == pytest.approx((occasion_means.mean() - half, occasion_means.mean() + half), rel=1e-6)
    assert (
        con.execute("select ci_basis from summary where storage_class = 'OpenEBS' and workload = 'Random read IOPS'")
        .fetchone()[0]
        .startswith("4 occasions, day-to-day variation moderated by a prior of")
    )


def test_raw_layer_schema_matches_the_pydantic_model():
    sql = (analytics_dir() / "models" / "1_raw" / "raw_results.sql").read_text()

    def fields(struct_name: str) -> list[str]:
        body = re.search(rf"{struct_name}: 'STRUCT\((.*?)\)(\[\])?',?\n", sql).group(1)
        body = re.sub(r"MAP\([^)]*\)", "MAP", body)
        return [part.strip().split()[0].strip('"') for part in body.split(",")]

    assert fields("identity") == list(CellIdentity.model_fields)
    assert fields("workload") == list(WorkloadSpec.model_fields)
    assert fields("provenance") == list(Provenance.model_fields)
    assert fields("metrics") == list(DirectionMetrics.model_fields)
    assert fields("lifecycle") == list(VolumeLifecycle.model_fields)
    # the document's fields, after the two the compactor puts in front of each (pvbench.analytics.compact)
    assert re.findall(r"^\s+(\w+): '", sql, re.M) == ["source_key", "cell_key", *ResultDocument.model_fields]


def test_models_are_layered_and_the_report_reads_only_report_tables():
    models = discover_models()
    layers = [m.layer for m in models]
    assert layers[0] == "1_raw"
    names = [m.name for m in models]
    for model in models:
        if model.layer == "4_report":
            assert model.name.startswith("report_")
    assert names.index("result_rows") < names.index("measurements") < names.index("summary")
    sources = Path(__file__).resolve().parents[2] / "reports" / "sources"
    queries = sorted(sources.rglob("*.sql"))
    assert queries, f"no source queries under {sources}: what the report reads cannot be checked"
    for sql in queries:
        tables = re.findall(r"(\w+)\.parquet", sql.read_text())
        assert tables, f"{sql} reads no Parquet table"
        for table in tables:
            assert table.startswith("report_"), f"{sql} reads {table}: the report reads the last layer only"


def _to_12_digits(rows):
    return [tuple(float(f"{v:.12g}") if isinstance(v, float) else v for v in row) for row in rows]


def test_a_table_asked_for_runs_only_its_models(thesis_store):
    """build_tables(tables=…) runs the models that make those tables and what they read, no
    others (pvbench compare reads measurements, pvbench summary report_overview), and those
    tables are the ones a full build makes."""
    from pvbench.analytics.models import compaction_models, models_for

    _, campaign_models = compaction_models(discover_models())
    assert [m.name for m in models_for(campaign_models, ["report_overview"])] == [
        "variance_prior",
        "summary",
        "report_overview",
    ]
    assert [m.name for m in models_for(campaign_models, ["measurements"])] == ["measurements"]
    full = build_tables(open_store(thesis_store), "thesis", extras=False)
    only = build_tables(open_store(thesis_store), "thesis", extras=False, tables=("report_overview",))
    try:
        made = {name for (name,) in only.execute("select table_name from duckdb_tables()").fetchall()}
        assert "summary" in made and "report_anomalies" not in made and "occasion_components" not in made
        # DuckDB sums in parallel, so the last bits of a float may differ from one build to the next.
        query = "select * from report_overview order by all"
        assert _to_12_digits(only.execute(query).fetchall()) == _to_12_digits(full.execute(query).fetchall())
    finally:
        full.close()
        only.close()


def test_aggregate_over_s3_writes_parquet_back(s3_store_url, thesis_store, tmp_path):
    store = open_store(s3_store_url)
    for key in open_store(thesis_store).list_keys("results"):
        store.put_bytes(key, (thesis_store / key).read_bytes())
    where, counts = aggregate(store, "thesis")
    assert where.endswith("analytics/campaign=thesis/run=all")
    assert counts["report_overview"] == 40 and "result_rows" not in counts  # the rows are in the compacts
    compacts = [k for k in store.list_keys("compact/campaign=thesis") if k.endswith("/result_rows.parquet")]
    for i, key in enumerate(compacts):
        (tmp_path / f"rows-{i}.parquet").write_bytes(store.get_bytes(key))
    assert duckdb.sql(f"select count(*) from '{tmp_path}/rows-*.parquet'").fetchone()[0] == 800
    keys = set(store.list_keys("analytics/campaign=thesis/run=all"))
    assert "analytics/campaign=thesis/run=all/summary.parquet" in keys
    data = store.get_bytes("analytics/campaign=thesis/run=all/report_overview.parquet")
    local = tmp_path / "report_overview.parquet"
    local.write_bytes(data)
    n = duckdb.sql(f"select count(*) from '{local}'").fetchone()[0]
    assert n == 40


def test_empty_store_is_a_clear_error(tmp_path):
    with pytest.raises(AnalyticsError, match="no results in"):
        aggregate(open_store(tmp_path), "nothing")
    proc = subprocess.run(
        PVBENCH + ["aggregate", "--store", str(tmp_path), "--campaign", "x"], capture_output=True, text=True
    )
    assert proc.returncode == 2 and "no results in" in proc.stderr


def test_each_cell_counted_once_and_bad_documents_named(tmp_path, thesis_store):
    import shutil

    store = tmp_path / "s"
    keys = sorted(p.relative_to(thesis_store) for p in thesis_store.rglob("result.json"))[:40]
    for key in keys:
        (store / key).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(thesis_store / key, store / key)
    # the same document under a second key that sorts first: the copy at the layout's key is the one counted
    copy = store / "results" / "campaign=thesis" / "a-copy" / "result.json"
    copy.parent.mkdir(parents=True)
    shutil.copyfile(store / keys[0], copy)
    bad = {
        "empty": "",
        "foo": '{"foo": 1}',
        "v2": '{"schema_version": "pvbench.result/v2"}',
        "cut": (store / keys[1]).read_text()[:50],
    }
    for name, text in bad.items():
        path = store / "results" / "campaign=thesis" / name / "result.json"
        path.parent.mkdir(parents=True)
        path.write_text(text)
    warnings = []
    con = build_tables(open_store(store), "thesis", extras=False, warn=warnings.append)
    assert con.execute("select count(distinct source_key) from result_rows").fetchone()[0] == 40
    skipped = dict(con.execute("select source_key, problem from skipped_results").fetchall())
    assert skipped[copy.relative_to(store).as_posix()] == "duplicate"
    assert sorted(skipped.values()) == ["duplicate", "invalid", "invalid", "invalid", "other-schema"]
    assert len(warnings) == 5 and any("counted once" in w for w in warnings)
    counted = {k for (k,) in con.execute("select source_key from result_rows").fetchall()}
    assert keys[0].as_posix() in counted and "a-copy" not in " ".join(counted)


def test_result_values_are_finite_and_non_negative():
    from pydantic import ValidationError

    for value in (float("nan"), float("inf"), -1.0):
        with pytest.raises(ValidationError):
            DirectionMetrics(direction="read", iops=value)
        with pytest.raises(ValidationError):
            DirectionMetrics(direction="write", lat_p99_us=value)
    assert DirectionMetrics(direction="read", iops=0.0, lat_mean_us=0.0).iops == 0.0


def test_occasion_box_plots_show_the_newest_12_occasions_and_the_split_uses_all(tmp_path):
    """A year of nightly runs must not make hundreds of boxes per chart (the site would grow with the
    campaign): the box plots keep each class's newest 12 occasions; the variance split keeps all."""
    from datetime import timedelta

    from stats_helpers import T0, doc, write

    write(
        tmp_path,
        [doc(occasion=f"o{i}", rep=r, started=T0 + timedelta(days=i, minutes=r)) for i in range(15) for r in (1, 2)],
    )
    con = build_tables(open_store(str(tmp_path)), "syn")
    [(n, shown)] = con.execute(
        "select count(*), list(occasion order by occasion_started_at) from report_occasion_boxplot"
    ).fetchall()
    assert n == 12 and shown == [f"o{i}" for i in range(3, 15)]
    assert con.execute("select n_occasions from report_occasions").fetchall() == [(15,)]


def test_models_that_do_not_read_each_other_are_made_at_once_and_the_others_wait(tmp_path):
    """Two models that do not read each other run side by side (each on a cursor with the
    connection's variables); a model that reads them starts once both are made; the threads
    setting is DuckDB's again after; a model that fails is the aggregation's error, and no model
    that reads it starts. Proved with a barrier, not with times: made one after the other, the two
    would never meet at it."""
    import threading

    from duckdb.sqltypes import BIGINT

    from pvbench.analytics.models import Model
    from pvbench.analytics.runner import run_models

    (tmp_path / "1_raw").mkdir()
    met = threading.Barrier(2, timeout=120)

    def meet(x):
        met.wait()  # both models are running, or this times out
        return x

    def model(name, sql):
        path = tmp_path / "1_raw" / f"{name}.sql"
        path.write_text(sql)
        return Model(name, path, "1_raw")

    a = model("a", "select meet(getvariable('base')) as x")
    b = model("b", "select meet(getvariable('base') + 1) as x")
    c = model("c", "select (select x from a) + (select x from b) as total")
    con = duckdb.connect()
    con.execute("SET threads = 2")
    con.execute("SET VARIABLE base = 20")
    con.create_function("meet", meet, [BIGINT], BIGINT)
    run_models(con, [a, b, c])
    assert con.execute("select total from c").fetchone() == (41,)
    assert con.execute("select current_setting('threads')").fetchone() == (2,)

    broken = model("broken", "select * from no_such_table")
    after = model("after_broken", "select * from broken")
    with pytest.raises(AnalyticsError, match=r"model 1_raw/broken\.sql failed: .*no_such_table"):
        run_models(con, [broken, after])
    tables = {t for (t,) in con.execute("select table_name from information_schema.tables").fetchall()}
    assert "after_broken" not in tables
    assert con.execute("select current_setting('threads')").fetchone() == (2,)


def test_an_overlapped_step_runs_beside_the_later_models_and_a_view_model_is_a_view(tmp_path):
    """A step computed in Python starts (in a thread, on its own cursor) once the table it reads
    exists, and writes its table after the models; its error is the aggregation's. A model that
    says ``-- materialized: view`` is made a view."""
    import threading

    from pvbench.analytics.models import Model
    from pvbench.analytics.runner import Overlapped, run_models

    (tmp_path / "1_raw").mkdir()
    a = tmp_path / "1_raw" / "a.sql"
    a.write_text("select range as x from range(5)")
    b = tmp_path / "1_raw" / "b.sql"
    b.write_text("-- b: every x, doubled\n-- materialized: view\nselect 2 * x as y from a")
    models = [Model("a", a, "1_raw"), Model("b", b, "1_raw")]
    assert [m.materialized for m in models] == ["table", "view"]
    seen = {}

    def compute(con):
        seen["thread"] = threading.get_ident()
        return con.execute("select sum(x) from a").fetchone()[0]

    con = duckdb.connect()
    run_models(
        con,
        models,
        after=[Overlapped("a", compute, lambda con, total: con.execute(f"create table c as select {total} as total"))],
    )
    assert con.execute("select total from c").fetchone()[0] == 10
    assert seen["thread"] != threading.get_ident()
    assert (
        con.execute("select table_type from information_schema.tables where table_name = 'b'").fetchone()[0] == "VIEW"
    )
    assert con.execute("select sum(y) from b").fetchone()[0] == 20

    def broken(con):
        raise AnalyticsError("the step failed")

    with pytest.raises(AnalyticsError, match="the step failed"):
        run_models(duckdb.connect(), models, after=[Overlapped("a", broken, lambda con, r: None)])
