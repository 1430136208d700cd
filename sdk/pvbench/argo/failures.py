"""What failed in an Argo run, from ``{{workflow.failures}}``, as rows the report can show.

The exit handler's aggregate step gets Argo's list of failed nodes (displayName, message,
templateName, phase, podName, finishedAt). A cell's node is named after its fan-out item,
``benchmark(3:order:3,rep:1,storage_class:fast,workload:randread-iops)``, so the cell it
stands for (storage class, workload, repetition) is read back from that name. A multi-client
cell's node is its DAG (``benchmark-clients(…)``, template ``client-cell`` or ``shared-client-cell``), which fails when one
of its steps does; that step (a client pod, the merge) is a row of its own, whose message names
the cell. Other nodes that only say a child failed (the DAGs around the cells, the run itself)
add nothing and are left out.
"""

from __future__ import annotations

import json
import re

from pvbench.cells.cell import FAN_OUT_ITEM_KEYS
from pvbench.cells.matrix import POD_CELLS_KEY, parse_pod_cells
from pvbench.results.volume import storage_label

CELL_TEMPLATES = ("benchmark-cell", "benchmark-block-cell", "client-cell", "shared-client-cell")  # a fan-out item each
POD_TEMPLATE = "benchmark-pod"  # a pod of several cells: its item is their `cells` text
# `pvbench fio-pod`'s message names each failed cell by its FAN_OUT_ITEM_KEYS, ':'-joined:
# "2 of 8 cells failed: a:Filesystem:ReadWriteOnce:w:1:0 (why); b:Filesystem:ReadWriteOnce:w:1:3 (why)"
_FAILED_CELL = re.compile(r"(?:failed: |; )(?P<cell>[a-z0-9.-]+:[A-Za-z]+:[A-Za-z]+:[a-z0-9-]+:\d+:\d+) \(")
_ITEM = re.compile(r"^[^(]+\(\d+:(?P<item>.*)\)$")
# What a parent node says when only a child failed: not a failure of its own.
_ONLY_A_CHILD = re.compile(
    r"^child '.*' (failed|errored)$|^(template has failed or errored children|"
    r"No more retries left|Stopped with strategy '\w+')",
    re.I,
)


class FailuresError(ValueError):
    pass


def parse_failures(text: str | None) -> list[dict]:
    """``{{workflow.failures}}`` (a JSON list, which Argo passes quoted as a JSON string) -> rows of
    the analytics' failures input (pvbench.analytics.tables.FAILURES_COLUMNS)."""
    if text is None or not text.strip():
        return []
    try:
        value = json.loads(text)
        if isinstance(value, str):  # Argo's strconv.Quote around the list
            value = json.loads(value) if value.strip() else None
    except json.JSONDecodeError as exc:
        raise FailuresError(f"--argo-failures is not Argo's JSON list of failed nodes: {exc}") from None
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise FailuresError("--argo-failures is not Argo's JSON list of failed nodes")
    rows = []
    for node in value:
        template, message = node.get("templateName") or "", (node.get("message") or "").strip()
        display = node.get("displayName") or ""
        if template == POD_TEMPLATE:
            rows += _pod_rows(node, display, message)
            continue
        cell = cell_of(display) if template in CELL_TEMPLATES else {}
        if not cell and (not message or _ONLY_A_CHILD.search(message)):
            continue  # e.g. the fan-out's group node, or a DAG that only says a child failed
        row = {
            "node": display,
            "template": template,
            "phase": node.get("phase") or "",
            "message": message,
            "storage_class": None,
            "workload": None,
            "rep": None,
            "finished_at": node.get("finishedAt") or None,
        }
        row.update(cell)
        rows.append(row)
    return rows


def _pod_rows(node: dict, display: str, message: str) -> list[dict]:
    """A failed pod of several cells: a row per cell its message names as failed; if it names
    none (the pod itself failed: its deadline, an eviction), a row per cell of the pod."""
    named = [m["cell"] for m in _FAILED_CELL.finditer(message)]
    match = _ITEM.match(display)
    text = " ".join(named) or (match["item"].removeprefix(POD_CELLS_KEY + ":") if match else "")
    try:
        cells = parse_pod_cells(text)
    except ValueError:
        cells = []
    base = {"node": display, "template": POD_TEMPLATE, "phase": node.get("phase") or "", "message": message}
    base["finished_at"] = node.get("finishedAt") or None
    return [
        {**base, "storage_class": _label(cell), "workload": cell["workload"], "rep": cell["rep"]} for cell in cells
    ] or [{**base, "storage_class": None, "workload": None, "rep": None}]


def cell_of(display_name: str) -> dict:
    """storage_class, workload and rep of a fan-out node's display name (empty if not one)."""
    match = _ITEM.match(display_name)
    if not match:
        return {}
    item = match["item"].replace('"', "").strip("{}")  # the item as JSON, or with its quotes dropped
    fields = dict(pair.split(":", 1) for pair in item.split(",") if ":" in pair)
    if not set(FAN_OUT_ITEM_KEYS) <= set(fields):
        return {}
    return {"storage_class": _label(fields), "workload": fields["workload"], "rep": int(fields["rep"])}


def _label(item: dict) -> str:
    """The class of a failed cell as the report's rows name it: with its volume shape."""
    return storage_label(item["storage_class"], item["volume_mode"], item["access_mode"])
