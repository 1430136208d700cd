"""Import the long CSV format of published per-run tables.

Columns: ``platform, solution, occasion, occasion_start, run, metric, unit, value``
(the format of examples/thesis-azure-runs.csv). Labels are kept verbatim —
``solution`` becomes the storage class, ``metric`` the workload — so a reader finds
"Portworx / Random read IOPS" exactly as the source names it. Each row becomes one
result document in the usual key layout, so analytics and the report need nothing special.
"""

from __future__ import annotations

import csv
from datetime import datetime, timezone
from pathlib import Path

from pvbench import __version__
from pvbench.results.schema import CellIdentity, DirectionMetrics, Provenance, ResultDocument, WorkloadSpec

FORMAT = "thesis-csv"
PROFILE = "imported"
COLUMNS = ["platform", "solution", "occasion", "occasion_start", "run", "metric", "unit", "value"]
# Source unit → the pvbench metric holding it (no conversion: the units are the same).
UNIT_METRIC = {"iops": "iops", "mib/s": "bw_mib_s", "usec": "lat_mean_us", "us": "lat_mean_us", "µs": "lat_mean_us"}


class ImportError_(ValueError):
    """A row that cannot be imported; names the line."""


def _direction(metric: str, line: int) -> str:
    text = metric.lower()
    if "read" in text and "write" not in text:
        return "read"
    if "write" in text and "read" not in text:
        return "write"
    raise ImportError_(f"line {line}: cannot tell read from write in metric {metric!r}")


def _started(text: str) -> datetime | None:
    for fmt in ("%b %d %H:%M:%S %Y", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S"):
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    return None


def read_documents(path: Path, campaign: str, run: str | None = None) -> list[ResultDocument]:
    """Parse the whole file first: a bad row fails the import before anything is stored."""
    docs = []
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ImportError_(f"{path}: missing columns {missing}; expected {COLUMNS}")
        for line, row in enumerate(reader, start=2):
            unit = row["unit"].strip()
            metric = UNIT_METRIC.get(unit.lower())
            if metric is None:
                raise ImportError_(f"line {line}: unknown unit {unit!r} (known: IOPS, MiB/s, usec)")
            try:
                value = float(row["value"])
                rep = int(row["run"])
            except ValueError as exc:
                raise ImportError_(f"line {line}: {exc}") from exc
            label = row["metric"].strip()
            docs.append(
                ResultDocument(
                    identity=CellIdentity(
                        campaign=campaign,
                        run=run or row["platform"].strip(),
                        occasion=row["occasion"].strip(),
                        storage_class=row["solution"].strip(),
                        profile=PROFILE,
                        workload=label,
                        rep=rep,
                    ),
                    workload=WorkloadSpec(title=label, headline_metric=metric),
                    provenance=Provenance(
                        source=f"import:{FORMAT}",
                        pvbench_version=__version__,
                        started_at=_started(row["occasion_start"]),
                        notes={"platform": row["platform"].strip(), "source_file": path.name,
                               "source_unit": unit, "source_line": str(line)},
                    ),
                    metrics=[DirectionMetrics(direction=_direction(label, line), **{metric: value})],
                )
            )
    return docs
