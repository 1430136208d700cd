"""What the user declares about each storage class: its limits (for anomaly flags) and its price.

A cloud disk promises a maximum: Azure Premium SSD P30 5000 IOPS and 200 MB/s, gp2 1 TiB
3000 IOPS. A result far above that is not a fast disk, it is a cache (the thesis's Portworx
read IOPS). pvbench cannot know what disk sits under a storage class, so the user says it,
in a small YAML file::

    tolerance: 0.10              # flag results above limit × (1 + tolerance)
    currency: USD
    cluster_price_per_hour: 0.288    # optional: nodes of the cluster under test (3 × D2s v3)
    storage_classes:
      "*":                       # a glob over storage class names; the most specific entry wins
        iops: 5000               # total of one result (read + write); read_iops / write_iops too
        bandwidth: 200 MB/s      # MB/s, MiB/s, GB/s, GiB/s, KB/s, KiB/s; read_/write_bandwidth too
        price_per_hour: 0.185    # optional: the class's volume(s) while a run uses them
      Azure Disk Storage:
        note: P30, 1 TiB

or the same as CSV with columns ``storage_class,key,value`` (one key of the YAML per row).

The file reaches the analytics as two tables that always exist (empty without a file), so the
SQL models need no special case: ``storage_class_limits`` and ``cost_model``. Where it comes
from, first match wins: the ``limits`` argument (``--limits`` on the CLI), ``$PVBENCH_LIMITS``,
or the store key ``config/limits.yaml`` (so an Argo aggregate step finds it next to the results).
"""

from __future__ import annotations

import csv
import io
import os
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from pvbench.yaml_input import load_yaml

LIMITS_ENV = "PVBENCH_LIMITS"
LIMITS_STORE_KEY = "config/limits.yaml"
DEFAULT_TOLERANCE = 0.10

_UNITS = {  # → MiB/s
    "b/s": 1 / 2**20,
    "kb/s": 1e3 / 2**20,
    "kib/s": 1 / 2**10,
    "mb/s": 1e6 / 2**20,
    "mib/s": 1.0,
    "gb/s": 1e9 / 2**20,
    "gib/s": 2**10,
    "tb/s": 1e12 / 2**20,
    "tib/s": 2**20,
}
_LIMIT_KEYS = {  # key → (metric, direction)
    "iops": ("iops", "total"),
    "read_iops": ("iops", "read"),
    "write_iops": ("iops", "write"),
    "bandwidth": ("bw_mib_s", "total"),
    "read_bandwidth": ("bw_mib_s", "read"),
    "write_bandwidth": ("bw_mib_s", "write"),
}
_OTHER_KEYS = {"price_per_hour", "note", "tolerance"}


class LimitsError(ValueError):
    pass


@dataclass(frozen=True)
class Limit:
    pattern: str
    metric: str
    direction: str
    value: float
    declared: str
    tolerance: float
    note: str | None = None


@dataclass(frozen=True)
class Price:
    scope: str  # 'cluster' or 'storage_class'
    pattern: str | None
    price_per_hour: float
    currency: str


@dataclass
class Declarations:
    limits: list[Limit]
    prices: list[Price]
    source: str | None = None


def parse_bandwidth(value: object, where: str) -> float:
    """'200 MB/s' → 190.73 (MiB/s). A bare number is MiB/s, the unit of every pvbench bandwidth."""
    if isinstance(value, (int, float)):
        return float(value)
    match = re.fullmatch(r"\s*([0-9.eE+]+)\s*([A-Za-z]+/s)?\s*", str(value))
    if not match:
        raise LimitsError(f"{where}: {value!r} is not a bandwidth like '200 MB/s'")
    unit = (match.group(2) or "MiB/s").lower()
    if unit not in _UNITS:
        raise LimitsError(f"{where}: unknown unit {match.group(2)!r} (use MB/s, MiB/s, GB/s, GiB/s, KB/s, KiB/s)")
    return float(match.group(1)) * _UNITS[unit]


def _number(value: object, where: str) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise LimitsError(f"{where}: {value!r} is not a number") from None
    if number < 0:
        raise LimitsError(f"{where}: {value!r} cannot be negative")
    return number


def parse_declarations(data: dict, source: str = "limits") -> Declarations:
    if not isinstance(data, dict):
        raise LimitsError(f"{source}: expected a mapping with 'storage_classes'")
    unknown = set(data) - {"tolerance", "currency", "cluster_price_per_hour", "storage_classes"}
    if unknown:
        raise LimitsError(f"{source}: unknown keys {sorted(unknown)}")
    tolerance = _number(data.get("tolerance", DEFAULT_TOLERANCE), f"{source}: tolerance")
    currency = str(data.get("currency", "USD"))
    prices: list[Price] = []
    if data.get("cluster_price_per_hour") is not None:
        prices.append(
            Price(
                "cluster", None, _number(data["cluster_price_per_hour"], f"{source}: cluster_price_per_hour"), currency
            )
        )
    limits: list[Limit] = []
    classes = data.get("storage_classes") or {}
    if not isinstance(classes, dict):
        raise LimitsError(f"{source}: storage_classes must map a class name (or glob) to its limits")
    for pattern, entry in classes.items():
        where = f"{source}: storage_classes[{pattern!r}]"
        entry = entry or {}
        if not isinstance(entry, dict):
            raise LimitsError(f"{where} must be a mapping like {{iops: 5000, bandwidth: 200 MB/s}}")
        bad = set(entry) - set(_LIMIT_KEYS) - _OTHER_KEYS
        if bad:
            raise LimitsError(f"{where}: unknown keys {sorted(bad)}; known: {sorted(set(_LIMIT_KEYS) | _OTHER_KEYS)}")
        tol = _number(entry.get("tolerance", tolerance), f"{where}.tolerance")
        note = str(entry["note"]) if entry.get("note") is not None else None
        for key, (metric, direction) in _LIMIT_KEYS.items():
            if entry.get(key) is None:
                continue
            value = (
                parse_bandwidth(entry[key], f"{where}.{key}")
                if metric == "bw_mib_s"
                else _number(entry[key], f"{where}.{key}")
            )
            declared = str(entry[key]) + (
                "" if metric == "bw_mib_s" or not isinstance(entry[key], (int, float)) else " IOPS"
            )
            limits.append(Limit(str(pattern), metric, direction, value, declared, tol, note))
        if entry.get("price_per_hour") is not None:
            prices.append(
                Price(
                    "storage_class", str(pattern), _number(entry["price_per_hour"], f"{where}.price_per_hour"), currency
                )
            )
    return Declarations(limits, prices, source)


def _from_csv(text: str, source: str) -> dict:
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames or not {"storage_class", "key", "value"} <= set(reader.fieldnames):
        raise LimitsError(f"{source}: a limits CSV needs the columns storage_class,key,value")
    data: dict = {"storage_classes": {}}
    for row in reader:
        sc = (row["storage_class"] or "").strip()
        key, value = row["key"].strip(), row["value"].strip()
        if not sc:  # a file-wide setting: tolerance, currency, cluster_price_per_hour
            data[key] = value
        else:
            data["storage_classes"].setdefault(sc, {})[key] = value
    return data


def read_declarations(text: str, source: str) -> Declarations:
    if source.lower().endswith(".csv"):
        return parse_declarations(_from_csv(text, source), source)
    try:
        data = load_yaml(text) or {}
    except yaml.YAMLError as exc:
        raise LimitsError(f"{source}: {exc}") from exc
    return parse_declarations(data, source)


def find_declarations(store=None, path: str | Path | None = None) -> Declarations:
    """The declarations in force: explicit path, then $PVBENCH_LIMITS, then the store's config/limits.yaml."""
    path = path or os.environ.get(LIMITS_ENV) or None
    if path:
        p = Path(path)
        try:
            return read_declarations(p.read_text(), str(p))
        except OSError as exc:
            raise LimitsError(f"limits file {p}: {exc.strerror or exc}") from exc
    if store is not None:
        try:
            if store.exists(LIMITS_STORE_KEY):
                return read_declarations(store.get_bytes(LIMITS_STORE_KEY).decode(), f"{store.url}/{LIMITS_STORE_KEY}")
        except LimitsError:
            raise
        except Exception:  # an unreachable store is reported by the results read, not here
            pass
    return Declarations([], [], None)


def _like(pattern: str) -> str:
    """Glob → SQL LIKE (escape LIKE's own wildcards first)."""
    escaped = pattern.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped.replace("*", "%").replace("?", "_")


def _specificity(pattern: str | None) -> int:
    """Exact names beat globs; longer literal parts beat shorter ones."""
    if pattern is None:
        return 0
    literal = len(pattern.replace("*", "").replace("?", ""))
    return 10_000 if "*" not in pattern and "?" not in pattern else literal


def install(con, decl: Declarations) -> None:
    """Create storage_class_limits and cost_model in the DuckDB connection (empty if nothing declared)."""
    con.execute("""
        create or replace table storage_class_limits (
            pattern varchar, like_pattern varchar, specificity integer, metric varchar, direction varchar,
            limit_value double, declared varchar, tolerance double, note varchar, source varchar)""")
    con.execute("""
        create or replace table cost_model (
            scope varchar, pattern varchar, like_pattern varchar, specificity integer,
            price_per_hour double, currency varchar, source varchar)""")
    for lim in decl.limits:
        con.execute(
            "insert into storage_class_limits values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                lim.pattern,
                _like(lim.pattern),
                _specificity(lim.pattern),
                lim.metric,
                lim.direction,
                lim.value,
                lim.declared,
                lim.tolerance,
                lim.note,
                decl.source,
            ],
        )
    for price in decl.prices:
        con.execute(
            "insert into cost_model values (?, ?, ?, ?, ?, ?, ?)",
            [
                price.scope,
                price.pattern,
                _like(price.pattern) if price.pattern else None,
                _specificity(price.pattern),
                price.price_per_hour,
                price.currency,
                decl.source,
            ],
        )
