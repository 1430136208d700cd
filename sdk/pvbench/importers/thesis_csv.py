"""Import the long CSV format of published per-run tables.

Columns: ``platform, solution, occasion, occasion_start, run, metric, unit, value``
(the format of examples/thesis-azure-runs.csv). Labels are kept verbatim —
``solution`` becomes the storage class, ``metric`` the workload — so a reader finds
"Portworx / Random read IOPS" exactly as the source names it. Each row becomes one
result document in the usual key layout, so analytics and the report need nothing special.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from pydantic import ValidationError

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


@dataclass
class ImportRead:
    documents: list[ResultDocument]
    """One per cell, in file order: exactly what will be written."""
    skipped: list[str] = field(default_factory=list)
    """Rows left out, with why (a row repeated verbatim)."""


def read_documents(path: Path, campaign: str, run: str | None = None) -> list[ResultDocument]:
    return read_import(path, campaign, run).documents


def read_import(path: Path, campaign: str, run: str | None = None) -> ImportRead:
    """Parse the whole file first: a bad row fails the import before anything is stored.

    Every row must be its own cell: two labels that differ only in case or punctuation
    (``Azure Disk`` / ``azure-disk``) would share a store key and overwrite each other, so they
    are refused, naming both lines; so is a cell given twice with different values. A row
    repeated verbatim is skipped and reported. Values must be finite and non-negative.
    """
    docs: list[ResultDocument] = []
    skipped: list[str] = []
    seen: dict[str, tuple[int, dict, ResultDocument]] = {}  # store key -> (line, row, document)
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ImportError_(f"{path}: missing columns {missing}; expected {COLUMNS}")
        for line, row in enumerate(reader, start=2):
            if any(row.get(c) is None for c in COLUMNS):
                raise ImportError_(
                    f"line {line}: {len([v for v in row.values() if v is not None])} fields, expected {len(COLUMNS)}"
                )
            unit = row["unit"].strip()
            metric = UNIT_METRIC.get(unit.lower())
            if metric is None:
                raise ImportError_(f"line {line}: unknown unit {unit!r} (known: IOPS, MiB/s, usec)")
            try:
                value = float(row["value"])
                rep = int(row["run"])
            except ValueError as exc:
                raise ImportError_(f"line {line}: {exc}") from exc
            if not math.isfinite(value) or value < 0:
                raise ImportError_(
                    f"line {line}: value {row['value'].strip()!r} is not a finite, non-negative {unit} figure"
                )
            label = row["metric"].strip()
            try:
                doc = ResultDocument(
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
                        notes={
                            "platform": row["platform"].strip(),
                            "source_file": path.name,
                            "source_unit": unit,
                            "source_line": str(line),
                        },
                    ),
                    metrics=[DirectionMetrics(direction=_direction(label, line), **{metric: value})],
                )
                key = doc.identity.result_key()
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise ImportError_(f"line {line}: {where}: {first['msg']}") from exc
            except ValueError as exc:  # a label with no key-safe character
                raise ImportError_(f"line {line}: {exc}") from exc
            if key in seen:
                first_line, first_row, first_doc = seen[key]
                if {c: row[c].strip() for c in COLUMNS} == {c: first_row[c].strip() for c in COLUMNS}:
                    skipped.append(f"line {line}: repeats line {first_line} verbatim")
                    continue
                if first_doc.identity == doc.identity:
                    raise ImportError_(
                        f"lines {first_line} and {line} give the same cell ({_cell(doc)}) different values; remove one"
                    )
                a, b = first_doc.identity, doc.identity
                differ = [f for f in ("run", "occasion", "storage_class", "workload") if getattr(a, f) != getattr(b, f)]
                labels = "; ".join(f"{f} {getattr(a, f)!r} and {getattr(b, f)!r}" for f in differ)
                raise ImportError_(
                    f"lines {first_line} and {line}: {labels} would be stored under the same key "
                    "(labels that differ only in case or punctuation overwrite each other); rename one"
                )
            seen[key] = (line, row, doc)
            docs.append(doc)
    return ImportRead(docs, skipped)


def _cell(doc: ResultDocument) -> str:
    i = doc.identity
    return f"{i.run} · occasion {i.occasion} · {i.storage_class} · {i.workload} · run {i.rep}"
