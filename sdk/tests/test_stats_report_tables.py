"""The statistics tables the report reads: occasions, comparisons, methodology, cost."""

from datetime import timedelta

import duckdb
import numpy as np
import pytest
from cli_helpers import pvbench
from stats_helpers import T0, doc, write

from pvbench.analytics.outputs import table_columns
from pvbench.pipeline import aggregate, build_tables, table_schemas
from pvbench.store import open_store
from pvbench.testing.tables import occasions_read_apart
from pvbench_lab.occasions import split_variance


@pytest.fixture(scope="module")
def thesis(thesis_store):
    return build_tables(open_store(thesis_store), "thesis")


def test_occasion_split_sql_matches_the_python_reference(thesis):
    for sc, wl in (
        ("Rook-Ceph", "Sequential read"),
        ("Azure Disk Storage", "Random read IOPS"),
        ("Portworx", "Random read IOPS"),
    ):
        groups: dict[str, list[float]] = {}
        for occ, value in thesis.execute(
            "select occasion, value from measurements where storage_class = ? and workload = ?", [sc, wl]
        ).fetchall():
            groups.setdefault(occ, []).append(value)
        ref = split_variance(groups)
        row = thesis.execute(
            """select n_occasions, n, var_between, var_within, share_between, f_stat, p_value
                                from occasion_components where storage_class = ? and workload = ?""",
            [sc, wl],
        ).fetchone()
        assert row[:2] == (4, 20)
        assert row[2:] == pytest.approx(
            (ref.var_between, ref.var_within, ref.share_between, ref.f_stat, ref.p_value), rel=1e-9, abs=1e-12
        )
    # Rook-Ceph's sequential reads: occasion 3 ran at ~380 MiB/s, the others at ~225 — nearly all occasion
    share, finding, unit, n = thesis.execute("""select share_between, finding, unit, n from report_occasions
        where storage_class = 'Rook-Ceph' and workload = 'Sequential read'""").fetchone()
    assert share > 0.95 and finding == "mostly occasions" and unit == "MiB/s" and n == 20


def test_occasion_split_known_answer():
    # balanced: occasion means 10 and 20, within sd 1 → MS_b = 5·50 = 250, MS_w = 1
    ref = split_variance([[9, 10, 11, 10, 10], [19, 20, 21, 20, 20]])
    assert ref.var_within == pytest.approx(0.5)
    assert ref.var_between == pytest.approx((250 - 0.5) / 5)
    assert ref.share_between > 0.99 and ref.p_value < 1e-6
    with pytest.raises(ValueError):
        split_variance([[1.0, 2.0]])


def test_occasion_boxplot_has_five_numbers_per_occasion(thesis):
    rows = thesis.execute("""select occasion, n, min, q1, median, q3, max, weekday from report_occasion_boxplot
        where storage_class = 'Portworx' and workload = 'Random read IOPS' order by occasion""").fetchall()
    assert [r[0] for r in rows] == ["1", "2", "3", "4"] and all(r[1] == 5 for r in rows)
    assert all(r[2] <= r[3] <= r[4] <= r[5] <= r[6] for r in rows)
    assert rows[0][7] == "Friday" and rows[3][7] == "Sunday"  # the thesis's 21–23 April 2023


def test_report_comparisons_pairs_every_storage_class(thesis):
    rows = thesis.execute("""select baseline, candidate, workload, verdict, n_baseline, n_candidate, unit
        from report_comparisons where kind = 'storage_class'""").fetchall()
    assert len(rows) == 6 * 10  # 4 classes → 6 pairs, 10 headline metrics each
    verdicts = {(b, c, w): v for b, c, w, v, *_ in rows}
    assert verdicts[("OpenEBS", "Portworx", "Random read IOPS")] == "better"  # candidate = later in the alphabet
    assert verdicts[("Azure Disk Storage", "OpenEBS", "Sequential read")] == "worse"
    row = thesis.execute("""select verdict, change, p_holm, change_ci_low, change_ci_high from report_comparisons
        where baseline = 'Azure Disk Storage' and candidate = 'Portworx' and workload = 'Read latency'""").fetchone()
    assert row[0] == "better" and row[1] < -0.7 and row[2] < 0.01 and row[3] < row[1] < row[4]
    assert all(r[4] == 20 and r[5] == 20 and r[6] for r in rows)


def _upgrade_store(tmp_path, slowdown: float):
    """Two classes: five nightly baseline runs (b1…b5, one occasion each, role=baseline), then one
    run after the upgrade ('after', role=candidate) in which 'fast' loses `slowdown`. Each night
    shifts a little (day-to-day variation) on top of the repetition noise."""
    rng = np.random.default_rng(11)
    docs = []
    runs = [(f"b{day + 1}", "baseline", day) for day in range(5)] + [("after", "candidate", 5)]
    for run, role, day in runs:
        for sc, level in (("fast", 1000.0), ("slow", 500.0)):
            factor = 1 - slowdown if (run == "after" and sc == "fast") else 1.0
            night = rng.normal(1, 0.01)
            for rep in range(1, 4):
                for wl, metric, base in (
                    ("randread-iops", "iops", level),
                    ("randread-lat", "lat_mean_us", 1e6 / level),
                ):
                    value = base * (factor if metric == "iops" else 1 / factor) * night * rng.normal(1, 0.01)
                    docs.append(
                        doc(
                            run=run,
                            role=role,
                            storage_class=sc,
                            workload=wl,
                            metric=metric,
                            rep=rep,
                            value=value,
                            started=T0 + timedelta(days=day, minutes=rep),
                            cpu=1.5,
                            provisioner="local.csi",
                            order=rep,
                        )
                    )
    write(tmp_path, docs)


def test_report_comparisons_find_the_upgrade_regression_by_role_and_by_run(tmp_path):
    _upgrade_store(tmp_path, 0.2)
    con = build_tables(open_store(str(tmp_path)), "syn")
    got = {
        (k, sc, wl): v
        for k, sc, wl, v in con.execute(
            "select kind, storage_class, workload, verdict from report_comparisons where kind in ('role', 'run')"
        ).fetchall()
    }
    for kind in ("role", "run"):
        assert got[(kind, "fast", "randread-iops")] == "worse"
        assert got[(kind, "fast", "randread-lat")] == "worse"  # latency up: worse, not better
        assert got[(kind, "slow", "randread-iops")] == "no meaningful difference"
    base, cand = con.execute("select baseline, candidate from report_comparisons where kind = 'run' limit 1").fetchone()
    assert (base, cand) == ("run=b5", "run=after")  # ordered by when the runs started
    # the run-against-run verdict stands on the nights before (b1…b4) for day-to-day variation
    method, history = con.execute(
        "select method, history_occasions from report_comparisons where kind = 'run' and storage_class = 'fast' limit 1"
    ).fetchone()
    assert history == 4 and "4 other occasions" in method


def test_the_report_and_pvbench_compare_judge_alike(tmp_path):
    """The report's run-against-run comparisons and `pvbench compare` of the same two runs stand on
    the same code: the same moderated variance (one prior over every class's baseline and earlier
    nights), so the same change, interval, degrees of freedom and p-value, metric by metric."""
    import json

    _upgrade_store(tmp_path, 0.2)
    con = build_tables(open_store(str(tmp_path)), "syn")
    report = {
        (sc, wl): (r, lo, hi, df, p)
        for sc, wl, r, lo, hi, df, p in con.execute(
            "select storage_class, workload, ratio, ratio_ci_low, ratio_ci_high, df, p_value "
            "from report_comparisons where kind = 'run'"
        ).fetchall()
    }
    proc = pvbench(
        "compare", "run=b5", "run=after", "--store", tmp_path, "--campaign", "syn", "--json", "--fail-on", "never"
    )
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert len(rows) == len(report) == 4
    for row in rows:
        want = report[(row["storage_class"], row["workload"])]
        got = (row["ratio"], row["ratio_ci_low"], row["ratio_ci_high"], row["df"], row["p_value"])
        assert got == pytest.approx(want, rel=1e-9), row
        assert "moderated" in row["method"]


def test_report_comparisons_withhold_without_history(tmp_path):
    # the same, but only b5 and 'after': one occasion each and nothing else to say how nights differ
    _upgrade_store(tmp_path, 0.2)
    for run in ("b1", "b2", "b3", "b4"):
        for path in (tmp_path / "results" / "campaign=syn" / f"run={run}").rglob("*"):
            if path.is_file():
                path.unlink()
    con = build_tables(open_store(str(tmp_path)), "syn")
    rows = con.execute(
        "select verdict, reason, occasions_baseline, occasions_candidate from report_comparisons where kind = 'run'"
    ).fetchall()
    assert rows and all(
        v == "withheld" and "day-to-day variation unknown" in r and (ob, oc) == (1, 1) for v, r, ob, oc in rows
    ), rows


def test_compare_cli_gates_on_the_regression(tmp_path):
    _upgrade_store(tmp_path, 0.2)
    proc = pvbench("compare", "b5", "after", "--store", tmp_path, "--campaign", "syn", "--json")
    assert proc.returncode == 1, proc.stderr
    assert "regression" in proc.stderr
    import json

    rows = {(r["storage_class"], r["workload"]): r for r in json.loads(proc.stdout)}
    assert rows[("fast", "randread-iops")]["verdict"] == "worse"
    assert rows[("fast", "randread-iops")]["change"] == pytest.approx(-0.2, abs=0.02)
    assert rows[("slow", "randread-iops")]["verdict"] == "no meaningful difference"
    # the same by role labels; --fail-on never reports without failing
    proc = pvbench(
        "compare",
        "role=baseline",
        "role=candidate",
        "--store",
        tmp_path,
        "--campaign",
        "syn",
        "--fail-on",
        "never",
        "--out",
        tmp_path / "c.parquet",
    )
    assert proc.returncode == 0, proc.stderr
    assert duckdb.sql(f"select count(*) from '{tmp_path / 'c.parquet'}' where verdict = 'worse'").fetchone()[0] == 2
    # a class against another: both sides name one
    proc = pvbench("compare", "storage_class=fast", "storage_class=slow", "--store", tmp_path, "--campaign", "syn")
    assert proc.returncode == 1 and "worse" in proc.stdout
    proc = pvbench("compare", "storage_class=fast", "after", "--store", tmp_path, "--campaign", "syn")
    assert proc.returncode == 2 and "on both sides" in proc.stderr
    # a run against itself (a gate given one run id twice), or against one of its own occasions:
    # refused, not "no meaningful difference" (exit 0: the gate passed)
    for base, cand, run in (("after", "after", "after"), ("b5", "run=b5,occasion=o1", "b5")):
        proc = pvbench("compare", base, cand, "--store", tmp_path, "--campaign", "syn")
        said = " ".join(proc.stderr.split())
        assert proc.returncode == 2 and "select the same results" in said and f"e.g. run {run}," in said, said


def _approx_row(row: dict) -> dict:
    return {k: pytest.approx(v, rel=1e-9, nan_ok=True) if isinstance(v, float) else v for k, v in row.items()}


def test_compare_selects_in_duckdb_what_python_selected_row_by_row(tmp_path):
    """compare_sides selects the sides, the metrics and the history in DuckDB (a campaign of
    100,000 results no longer comes into Python whole): the verdicts are those of the selection
    it replaced, made row by row in Python (pvbench_lab.bench_compare's row_by_row), for every kind of selector, labels matched by slug, two roles in
    one occasion, a side of one occasion judged against the class's history, and two campaigns."""
    from pvbench.pipeline import compare_sides
    from pvbench.stats.sides import Side
    from pvbench_lab.bench_compare import row_by_row  # the selection it replaced (the benchmark's, too)

    rng = np.random.default_rng(5)
    docs = []
    runs = [  # run, occasion, role, day
        ("b1", "night", "baseline", 0),
        ("b1", "Week End", "baseline", 1),
        ("b2", "night", "baseline", 2),
        ("b3", "night", None, 3),
        ("after", "night", "candidate", 4),
        ("after", "night", "baseline", 4),  # two roles in one occasion (the reps below differ)
    ]
    for run, occasion, role, day in runs:
        for sc, level in (("fast", 1000.0), ("Slow Disk", 500.0)):
            for rep in (1, 2, 3) if role != "baseline" or run != "after" else (4, 5):
                for wl, metric, base in (
                    ("randread-iops", "iops", level),
                    ("randread-lat", "lat_mean_us", 1e6 / level),
                ):
                    docs.append(
                        doc(
                            run=run,
                            occasion=occasion,
                            role=role,
                            storage_class=sc,
                            workload=wl,
                            metric=metric,
                            rep=rep,
                            value=base * rng.normal(1, 0.05) * (0.8 if run == "after" else 1.0),
                            started=T0 + timedelta(days=day, minutes=rep),
                        )
                    )
    docs += [
        doc(campaign="other", run="o1", storage_class=sc, rep=rep, value=900.0 + rep)
        for sc in ("fast", "Slow Disk")
        for rep in (1, 2, 3)
    ]
    write(tmp_path, docs)
    store = open_store(str(tmp_path))
    pairs = [
        ("b1", "after", "headline"),
        ("b3", "after", "all"),
        ("role=baseline", "role=candidate", "headline"),
        ("storage_class=fast", "storage_class=slow-disk", "all"),
        ("run=b1,occasion=week-end", "after", "headline,lat_mean_us"),
        ("storage_class=fast,run=b2", "storage_class=Slow Disk,run=after", "lat_mean_us"),
        ("campaign=other,run=o1", "after", "headline"),
    ]
    for base_text, cand_text, metrics in pairs:
        baseline, candidate = Side.parse(base_text, "syn"), Side.parse(cand_text, "syn")
        got = compare_sides(store, baseline, candidate, metrics)
        want = row_by_row(store, baseline, candidate, metrics)
        assert got.comparisons, (base_text, cand_text)
        assert [_approx_row(c.as_row()) for c in want.comparisons] == [c.as_row() for c in got.comparisons], (
            base_text,
            cand_text,
            metrics,
        )
        assert (got.only_baseline, got.only_candidate, got.too_few) == (
            want.only_baseline,
            want.only_candidate,
            want.too_few,
        )
    # b3 against after (one occasion each) borrows the variation of the class's three earlier
    # occasions (b1's two, b2's), and a role is selected where some results have none (b3's)
    judged = compare_sides(store, Side.parse("b3", "syn"), Side.parse("after", "syn"))
    assert {c.history_occasions for c in judged.comparisons} == {3}


def test_methodology_and_cost_from_the_data(tmp_path):
    _upgrade_store(tmp_path, 0.0)
    limits = tmp_path / "limits.yaml"
    limits.write_text("currency: EUR\ncluster_price_per_hour: 3.6\nstorage_classes:\n  fast: {price_per_hour: 0.36}\n")
    out = tmp_path / "parquet"
    aggregate(open_store(str(tmp_path)), "syn", out=out, limits=limits)
    for table in (
        "report_methodology",
        "report_cost",
        "report_comparisons",
        "report_anomalies",
        "report_occasions",
        "report_occasion_boxplot",
    ):
        assert (out / f"{table}.parquet").is_file(), table
    cost = duckdb.sql(f"""select run, n_results, fio_seconds, cpu_seconds, cluster_cost, storage_cost, currency
                          from '{out / "report_cost.parquet"}' order by run""").fetchall()
    # each run: 2 classes × 2 workloads × 3 reps = 12 results of 10 s; 'fast' holds half of them
    assert cost[0][:4] == ("after", 12, pytest.approx(120), pytest.approx(18))
    wall_hours = (2 * 60 + 10) / 3600  # rep 1 starts at minute 1, rep 3 ends at minute 3 + 10 s
    assert cost[0][4] == pytest.approx(wall_hours * 3.6)
    assert cost[0][5] == pytest.approx(60 / 3600 * 0.36)
    assert cost[0][6] == "EUR"
    rows = duckdb.sql(f"select section, item, value from '{out / 'report_methodology.parquet'}'").fetchall()
    sections = {s for s, _, _ in rows}
    assert {"setup", "design", "units", "confidence", "cost"} <= sections
    text = "\n".join(f"{s} {i} {v}" for s, i, v in rows)
    assert "provisioner local.csi" in text and "fio-3.33" in text
    assert "2 storage classes × 2 workloads (dbench) × 6 occasions × 3 repetitions" in text
    assert "randomized interleaving" in text
    assert "EUR" in text and "cost model" in text
    assert "µs, lower is better" in text


def test_report_tables_match_the_published_contract(thesis):
    """The contract (table_schemas: the models over no results) is what a real campaign's tables
    are: every written table, column for column, type for type — data never changes a schema."""
    schemas = table_schemas()
    assert {"report_overview", "report_comparisons", "report_anomalies", "report_methodology"} <= set(schemas)
    for table, columns in schemas.items():
        assert table_columns(thesis, table) == columns, table


def cells_of(rows: list[dict]):
    """The comparisons' cells made in Python from single-value measurement rows (with their
    ``started_at`` epoch): the reference that stats.tables._cells, made in SQL, must equal."""
    from pvbench.stats.tables import _HEADLINE_VALUES_OF, HeadlineValues

    grouped: dict[tuple, dict] = {}
    for row in sorted(rows, key=lambda r: (r["run"], r["occasion"], r["role"] is None, r["role"] or "")):
        cell = grouped.setdefault(tuple(row[c] for c in _HEADLINE_VALUES_OF), {"first": row, "entries": {}})
        entry = cell["entries"].setdefault((row["run"], row["occasion"], row["role"]), [row["started_at"], []])
        entry[0] = min((t for t in (entry[0], row["started_at"]) if t is not None), default=None)
        entry[1].append(float(row["value"]))
    cells = []
    for key, cell in sorted(grouped.items()):
        entries = [(*where, started, sorted(values)) for where, (started, values) in cell["entries"].items()]
        runs, occasions, roles, started, values = (list(column) for column in zip(*entries))
        cells.append(
            HeadlineValues(
                *key[:2],
                key[2:],
                cell["first"]["better"],
                cell["first"]["unit"],
                cell["first"]["workload_title"],
                runs,
                occasions,
                roles,
                started,
                np.array([len(v) for v in values], dtype=np.int64),
                np.array([v for vs in values for v in vs], dtype=float),
            )
        )
    return cells


def as_lists(cells) -> list:
    """Cells with their entries as tuples, each entry's values as a list (_cells gives one float
    array per cell, its entries' values one after the other)."""
    out = []
    for c in cells:
        ends = np.cumsum(c.sizes)
        values = [list(c.values[end - size : end]) for size, end in zip(c.sizes, ends)]
        entries = list(zip(c.runs, c.occasions, c.roles, c.started, values))
        out.append((c.campaign, c.storage_class, c.key, c.better, c.unit, c.workload_title, entries))
    return out


def test_comparisons_over_occasion_grouped_values_equal_those_over_single_values(tmp_path, thesis):
    """report_comparisons reads each cell's headline values grouped by occasion (in SQL): the
    verdicts are those of the same comparisons fed one row per value, for every kind (all class
    pairs in the thesis; a reference class beyond six classes, and the last run, synthetic). An
    occasion whose values share a role is read from its row (sole_role, observation_values), one
    whose values have two roles from its observations: the entries are the same either way."""
    from pvbench.stats.sides import MEASUREMENT_COLUMNS
    from pvbench.stats.tables import COLUMNS, _cells, load_settings, report_comparison_rows

    rng = np.random.default_rng(3)
    roles = {0: lambda rep: "baseline", 1: lambda rep: None, 2: lambda rep: "candidate" if rep == 3 else "baseline"}
    write(
        tmp_path,
        [
            doc(
                run=f"r{r}",
                occasion=f"o{r}",
                storage_class=f"sc{c}",
                rep=rep,
                role=roles[r](rep),
                value=float(rng.normal(1000 + 50 * c, 40)),
                started=T0 + timedelta(days=r, minutes=c * 10 + rep),
            )
            for r in range(3)
            for c in range(8)
            for rep in range(1, 4)
        ],
    )
    synthetic = build_tables(open_store(str(tmp_path)), "syn", extras=False)

    def essentials(rows):
        return sorted(
            (
                r["kind"],
                r["baseline"],
                r["candidate"],
                r["storage_class"] or "",
                r["workload"],
                r["metric"],
                r["n_baseline"],
                r["n_candidate"],
                round(r["mean_candidate"], 6),
                None if r["p_value"] is None or np.isnan(r["p_value"]) else round(r["p_value"], 9),
                r["verdict"],
            )
            for r in rows
        )

    settings = load_settings()
    for con in (thesis, synthetic):
        cols = ", ".join(MEASUREMENT_COLUMNS)
        single = [
            dict(zip(MEASUREMENT_COLUMNS + ("started_at",), r))
            for r in con.execute(f"select {cols}, epoch(started_at) from measurements where is_headline").fetchall()
        ]
        grouped = _cells(con)
        assert len(grouped) < len(single)
        assert as_lists(grouped) == as_lists(cells_of(single))
        assert not occasions_read_apart(con)
        rows = report_comparison_rows(grouped, settings)
        kinds = {r["kind"] for r in rows}
        assert all(set(r) == {name for name, _ in COLUMNS} for r in rows)  # every column, none else
        assert essentials(report_comparison_rows(grouped, settings)) == essentials(
            report_comparison_rows(cells_of(single), settings)
        )
        assert kinds == ({"storage_class"} if con is thesis else {"storage_class", "run"})


# report_storage_classes as it was computed from every result's row, before run_setup: the reference.
STORAGE_CLASSES_FROM_EVERY_ROW = """
    select
        campaign, storage_class,
        any_value(class_name) as class_name, any_value(volume_mode) as volume_mode,
        any_value(access_mode) as access_mode,
        count(distinct source_key) as n_results,
        count(distinct run) as n_runs,
        count(distinct occasion) as n_occasions,
        string_agg(distinct profile, ', ' order by profile) as profiles,
        string_agg(distinct provisioner, ', ' order by provisioner) as provisioner,
        string_agg(distinct filesystem, ', ' order by filesystem) as filesystem,
        string_agg(distinct coalesce(node, host), ', ' order by coalesce(node, host)) as nodes,
        string_agg(distinct fio_version, ', ' order by fio_version) as fio_version,
        min(started_at) as first_started_at,
        max(started_at) as last_started_at
    from result_rows
    group by campaign, storage_class
    order by campaign, storage_class"""


def test_the_setup_pages_read_each_runs_setup_as_every_result_row_gives_it(tmp_path):
    """report_storage_classes and report_methodology read run_setup (a few rows per run, made at
    compaction), not every result's row: a result with two directions is one result, nodes fall
    back to the host, an occasion label of two runs is one occasion, reps are per direction."""
    from pvbench.results.schema import DirectionMetrics

    docs = []
    for r, (run, occasion) in enumerate((("r1", "night"), ("r2", "night"), ("r3", "weekend"))):
        for sc in ("fast", "slow"):
            for rep in range(1, 4 if run != "r3" else 3):  # r3 ran 2 reps
                d = doc(
                    run=run,
                    occasion=occasion,
                    storage_class=sc,
                    rep=rep,
                    started=T0 + timedelta(days=r, minutes=rep),
                    provisioner="local.csi" if sc == "fast" else ("rbd.csi.ceph.com" if rep == 1 else None),
                    order=None if run == "r2" else rep,
                )
                d.provenance.node = {1: "node-a", 2: None}.get(rep, "node-b")
                d.provenance.host = "vm-1"  # where a result has no node (local mode), its host
                if sc == "slow" and rep == 2:
                    d.provenance.fio_version = "fio-3.36"
                if sc == "fast":  # a mixed workload: a read and a write row, one result
                    d.metrics.append(DirectionMetrics(direction="write", iops=400.0))
                docs.append(d)
    write(tmp_path, docs)
    con = build_tables(open_store(str(tmp_path)), "syn")

    # equal, row for row (EXCEPT ALL both ways: the timestamps stay in DuckDB)
    for a, b in (("report_storage_classes", f"({STORAGE_CLASSES_FROM_EVERY_ROW})"),):
        assert (
            con.execute(f"select count(*) from {a}").fetchone() == con.execute(f"select count(*) from {b}").fetchone()
        )
        assert con.execute(f"select count(*) from (from {a} except all from {b})").fetchone()[0] == 0
        assert con.execute(f"select count(*) from (from {b} except all from {a})").fetchone()[0] == 0
    fast, slow = con.execute(
        "select n_results, n_runs, n_occasions, nodes, provisioner, fio_version"
        " from report_storage_classes order by storage_class"
    ).fetchall()
    assert fast == (8, 3, 2, "node-a, node-b, vm-1", "local.csi", "fio-3.33")
    assert slow == (8, 3, 2, "node-a, node-b, vm-1", "rbd.csi.ceph.com", "fio-3.33, fio-3.36")
    page = dict(
        con.execute("select item, value from report_methodology where section in ('setup', 'design')").fetchall()
    )
    assert page["storage class: slow"] == (
        "provisioner rbd.csi.ceph.com; filesystem not recorded; nodes node-a, node-b, vm-1; "
        "volume Filesystem, ReadWriteOnce (fio on files in the volume's filesystem)"
    )
    assert page["matrix"] == "2 storage classes × 1 workloads (dbench) × 3 occasions × 2–3 repetitions"
    # each class × workload × direction pooled over runs: 3 + 3 + 2 values
    assert page["values per cell (n)"].startswith("8 (")
    assert page["occasions"].startswith("night (Mon 2024-03-04 09:01 UTC); weekend (Wed 2024-03-06 09:01 UTC)")
    assert page["cell order"].startswith("randomized interleaving")  # recorded in r1 and r3
