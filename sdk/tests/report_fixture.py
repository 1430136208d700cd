"""Writes the report_* Parquet tables of the analytics data contract, for report tests only.

Values: the thesis's Azure appendix (every per-run value, dbench profile) plus synthetic
vshn (fsync series) and sweep (block size × load) rows shaped like the published numbers.
The statistics mirror what the analytics layer computes (sample sd, linear quantiles,
t-based 95 % CI), so the report shows realistic numbers; the analytics SQL is the reference.
"""

from __future__ import annotations

import csv
import math
import random
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from scipy import stats

CAMPAIGN = "fixture"

# thesis CSV metric -> (workload, direction, metric)
THESIS_METRICS = {
    "Random read IOPS": ("randread-iops", "read", "iops"),
    "Random write IOPS": ("randwrite-iops", "write", "iops"),
    "Random read bandwidth": ("randread-bw", "read", "bw_mib_s"),
    "Random write bandwidth": ("randwrite-bw", "write", "bw_mib_s"),
    "Read latency": ("randread-lat", "read", "lat_mean_us"),
    "Write latency": ("randwrite-lat", "write", "lat_mean_us"),
    "Sequential read": ("seqread", "read", "bw_mib_s"),
    "Sequential write": ("seqwrite", "write", "bw_mib_s"),
    "Mixed read IOPS": ("mixed-randrw", "read", "iops"),
    "Mixed write IOPS": ("mixed-randrw", "write", "iops"),
}
TITLES = {
    "randread-iops": "Random read IOPS",
    "randwrite-iops": "Random write IOPS",
    "randread-bw": "Random read bandwidth",
    "randwrite-bw": "Random write bandwidth",
    "randread-lat": "Read latency",
    "randwrite-lat": "Write latency",
    "seqread": "Sequential read",
    "seqwrite": "Sequential write",
    "mixed-randrw": "Mixed random 75/25 IOPS",
    "read-iops": "Read IOPS",
    "read-bw": "Read bandwidth",
}
UNITS = {"iops": "IOPS", "bw_mib_s": "MiB/s", "lat_mean_us": "µs"}
BETTER = {"iops": "higher", "bw_mib_s": "higher", "lat_mean_us": "lower"}
FSYNC = (("none", 0), ("1", 1), ("32", 2), ("128", 3))

# VSHN-like classes: (read iops, read MiB/s, write iops by fsync, write MiB/s by fsync), rel. sd
VSHN_CLASSES = {
    "rook-ceph-rbd": (42344.0, 1650.0, (14800.0, 305.0, 4100.0, 9200.0), (590.0, 38.0, 260.0, 420.0), 0.03),
    "cephfs": (38100.0, 1580.0, (12900.0, 8808.0, 11500.0, 12300.0), (540.0, 410.0, 500.0, 520.0), 0.04),
    "longhorn": (11298.0, 620.0, (6100.0, 180.0, 1900.0, 3900.0), (260.0, 22.0, 130.0, 210.0), 0.06),
}
SWEEP_CLASSES = {"nvme-tcp": 1.0, "rook-ceph-rbd": 0.35}
SWEEP_BS = (("4k", 4096), ("8k", 8192), ("64k", 65536), ("128k", 131072))
SWEEP_LOADS = ("qd1", "qd32", "qd1x32", "p80")
SWEEP_GROUPS = {"randread": 1.0, "randwrite": 0.0, "mix70": 0.7, "mix50": 0.5}


def _runs_from_thesis(csv_path: Path) -> list[dict]:
    rows = []
    with csv_path.open(newline="") as f:
        for r in csv.DictReader(f):
            workload, direction, metric = THESIS_METRICS[r["metric"]]
            started = datetime.strptime(r["occasion_start"], "%b %d %H:%M:%S %Y")
            rep = int(r["run"])
            occ = int(r["occasion"])
            rows.append(
                dict(
                    campaign=CAMPAIGN,
                    run=f"thesis-{occ}-{r['occasion_start'][:6].replace(' ', '')}",
                    occasion=occ,
                    storage_class=r["solution"],
                    profile="dbench",
                    workload=workload,
                    workload_title=TITLES[workload],
                    rep=rep,
                    cell_order=list(TITLES).index(workload),
                    direction=direction,
                    metric=metric,
                    unit=UNITS[metric],
                    value=float(r["value"]),
                    started_at=started + timedelta(minutes=3 * rep),
                )
            )
    return rows


def _runs_vshn(rng: random.Random) -> list[dict]:
    rows = []
    t0 = datetime(2024, 5, 6, 9, 0, 0)
    for sc, (riops, rbw, wiops, wbw, rel) in VSHN_CLASSES.items():
        cells = [("read-iops", "read", "iops", riops), ("read-bw", "read", "bw_mib_s", rbw)]
        for (label, _), v in zip(FSYNC, wiops):
            cells.append((f"write-iops-fsync-{label}", "write", "iops", v))
        for (label, _), v in zip(FSYNC, wbw):
            cells.append((f"write-bw-fsync-{label}", "write", "bw_mib_s", v))
        for rep in range(1, 11):
            for order, (wl, direction, metric, mean) in enumerate(cells):
                title = TITLES.get(wl) or wl.replace("write-iops-fsync-", "Write IOPS, fsync=").replace(
                    "write-bw-fsync-", "Write bandwidth, fsync="
                )
                rows.append(
                    dict(
                        campaign=CAMPAIGN,
                        run=f"vshn-{sc}",
                        occasion=1,
                        storage_class=sc,
                        profile="vshn",
                        workload=wl,
                        workload_title=title,
                        rep=rep,
                        cell_order=order,
                        direction=direction,
                        metric=metric,
                        unit=UNITS[metric],
                        value=max(1.0, rng.gauss(mean, mean * rel)),
                        started_at=t0 + timedelta(minutes=rep * 12 + order),
                    )
                )
    return rows


def _stats(values: list[float]) -> dict:
    a = np.asarray(values, dtype=float)
    n = len(a)
    mean = float(a.mean())
    sd = float(a.std(ddof=1)) if n > 1 else 0.0
    half = float(stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)) if n > 1 else 0.0
    return dict(
        n=n,
        mean=mean,
        sd=sd,
        cv=sd / mean if mean else None,
        median=float(np.median(a)),
        q1=float(np.quantile(a, 0.25)),
        q3=float(np.quantile(a, 0.75)),
        min=float(a.min()),
        max=float(a.max()),
        ci95_low=mean - half,
        ci95_high=mean + half,
    )


def _overview_and_box(runs: list[dict]) -> tuple[list[dict], list[dict]]:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in runs:
        groups[(r["campaign"], r["storage_class"], r["profile"], r["workload"], r["direction"], r["metric"])].append(r)
    overview, box = [], []
    for (campaign, sc, profile, wl, direction, metric), rs in groups.items():
        s = _stats([r["value"] for r in rs])
        base = dict(
            campaign=campaign,
            storage_class=sc,
            profile=profile,
            workload=wl,
            workload_title=rs[0]["workload_title"],
            direction=direction,
            metric=metric,
            unit=UNITS[metric],
        )
        overview.append(
            {**base, **s, "better": BETTER[metric], "rank": 0, "mean_pm_sd": f"{s['mean']:.1f} ± {s['sd']:.1f}"}
        )
        box.append({**base, **{k: s[k] for k in ("n", "min", "q1", "median", "q3", "max", "mean")}})
    by_cell: dict[tuple, list[dict]] = defaultdict(list)
    for o in overview:
        by_cell[(o["campaign"], o["profile"], o["workload"], o["direction"], o["metric"])].append(o)
    for rows in by_cell.values():
        rows.sort(key=lambda o: o["mean"], reverse=rows[0]["better"] == "higher")
        for i, o in enumerate(rows, 1):
            o["rank"] = i
    return overview, box


def _fsync(runs: list[dict]) -> list[dict]:
    out = []
    groups: dict[tuple, list[float]] = defaultdict(list)
    for r in runs:
        if r["profile"] == "vshn" and "-fsync-" in r["workload"]:
            kind = "iops" if r["workload"].startswith("write-iops") else "bw"
            label = r["workload"].rsplit("-", 1)[1]
            groups[(r["campaign"], r["storage_class"], kind, r["metric"], label)].append(r["value"])
    order = dict(FSYNC)
    for (campaign, sc, kind, metric, label), vals in groups.items():
        s = _stats(vals)
        out.append(
            dict(
                campaign=campaign,
                storage_class=sc,
                kind=kind,
                metric=metric,
                unit=UNITS[metric],
                fsync_label=label,
                fsync_order=order[label],
                n=s["n"],
                mean=s["mean"],
                sd=s["sd"],
                low=s["mean"] - s["sd"],
                high=s["mean"] + s["sd"],
            )
        )
    return out


def _sweep(rng: random.Random) -> list[dict]:
    out = []
    for sc, scale in SWEEP_CLASSES.items():
        for group, read_share in SWEEP_GROUPS.items():
            for bs, nbytes in SWEEP_BS:
                for load in SWEEP_LOADS:
                    base_lat = {"qd1": 80.0, "qd32": 420.0, "qd1x32": 520.0, "p80": 260.0}[load] / scale
                    lat = base_lat * (1 + nbytes / 65536)
                    depth = {"qd1": 1, "qd32": 32, "qd1x32": 32, "p80": 16}[load]
                    iops_total = min(depth / (lat / 1e6), 2_000_000 * scale / (1 + nbytes / 16384))
                    dirs = [("read", read_share), ("write", 1 - read_share)]
                    for direction, share in dirs:
                        if share == 0:
                            continue
                        iops = iops_total * share * rng.uniform(0.97, 1.03)
                        dlat = lat * (1.25 if direction == "write" else 1.0)
                        out.append(
                            dict(
                                campaign=CAMPAIGN,
                                storage_class=sc,
                                wl_group=group,
                                bs=bs,
                                bs_bytes=nbytes,
                                load=load,
                                direction=direction,
                                n=3,
                                iops=iops,
                                bw_mib_s=iops * nbytes / 2**20,
                                lat_mean_us=dlat,
                                lat_p99_us=dlat * 2.7,
                            )
                        )
    return out


def _storage_classes(runs: list[dict]) -> list[dict]:
    by_sc: dict[tuple, list[dict]] = defaultdict(list)
    for r in runs:
        by_sc[(r["campaign"], r["storage_class"])].append(r)
    out = []
    for (campaign, sc), rs in by_sc.items():
        profile = rs[0]["profile"]
        out.append(
            dict(
                campaign=campaign,
                storage_class=sc,
                n_results=len({(r["run"], r["workload"], r["rep"]) for r in rs}),
                n_runs=len({(r["run"], r["rep"]) for r in rs}),
                n_occasions=len({r["occasion"] for r in rs}),
                profiles=", ".join(sorted({r["profile"] for r in rs} | ({"sweep"} if sc in SWEEP_CLASSES else set()))),
                provisioner={"dbench": "disk.csi.azure.com", "vshn": "rook-ceph.rbd.csi.ceph.com"}[profile],
                filesystem="ext4",
                nodes=3,
                fio_version="fio-3.33",
                first_started_at=min(r["started_at"] for r in rs),
                last_started_at=max(r["started_at"] for r in rs),
            )
        )
    return out


SCHEMAS = {
    "report_runs": pa.schema(
        [
            ("campaign", pa.string()), ("run", pa.string()), ("occasion", pa.int32()),
            ("storage_class", pa.string()), ("profile", pa.string()), ("workload", pa.string()),
            ("workload_title", pa.string()), ("rep", pa.int32()), ("cell_order", pa.int32()),
            ("direction", pa.string()), ("metric", pa.string()), ("unit", pa.string()),
            ("value", pa.float64()), ("started_at", pa.timestamp("us")),
        ]
    ),
}


def write_fixture(out: Path, *, thesis_csv: Path, with_vshn: bool = True, with_sweep: bool = True) -> Path:
    """Write the report_* tables into ``out``; empty vshn/sweep tables when disabled."""
    rng = random.Random(42)
    out.mkdir(parents=True, exist_ok=True)
    runs = _runs_from_thesis(thesis_csv) + (_runs_vshn(rng) if with_vshn else [])
    overview, box = _overview_and_box(runs)
    tables = {
        "report_runs": runs,
        "report_overview": overview,
        "report_boxplot": box,
        "report_fsync": _fsync(runs),
        "report_sweep": _sweep(rng) if with_sweep else [],
        "report_storage_classes": _storage_classes(runs),
    }
    for name, rows in tables.items():
        schema = SCHEMAS.get(name)
        if rows:
            table = pa.Table.from_pylist(rows, schema=schema)
        else:
            table = _empty(name)
        pq.write_table(table, out / f"{name}.parquet")
    return out


def _empty(name: str) -> pa.Table:
    cols = {
        "report_fsync": [
            ("campaign", pa.string()), ("storage_class", pa.string()), ("kind", pa.string()),
            ("metric", pa.string()), ("unit", pa.string()), ("fsync_label", pa.string()),
            ("fsync_order", pa.int32()), ("n", pa.int64()), ("mean", pa.float64()), ("sd", pa.float64()),
            ("low", pa.float64()), ("high", pa.float64()),
        ],
        "report_sweep": [
            ("campaign", pa.string()), ("storage_class", pa.string()), ("wl_group", pa.string()),
            ("bs", pa.string()), ("bs_bytes", pa.int64()), ("load", pa.string()), ("direction", pa.string()),
            ("n", pa.int64()), ("iops", pa.float64()), ("bw_mib_s", pa.float64()),
            ("lat_mean_us", pa.float64()), ("lat_p99_us", pa.float64()),
        ],
    }[name]
    return pa.schema(cols).empty_table()


if __name__ == "__main__":
    import sys

    write_fixture(Path(sys.argv[1]), thesis_csv=Path(sys.argv[2]))
