"""pvbench_lab.bench_argo_cells reads a run's cells' wall time and fio time from its nodes."""

from pvbench_lab.bench_argo_cells import timing


def _node(template: str, start: str, end: str, cells: str | None = None) -> dict:
    node = {"templateName": template, "type": "Pod", "startedAt": start, "finishedAt": end}
    if cells is not None:
        node["inputs"] = {"parameters": [{"name": "cells", "value": cells}]}
    return node


def test_the_cells_wall_time_spans_the_first_cell_pod_to_the_last():
    wf = {
        "status": {
            "startedAt": "2026-12-03T01:00:00Z",
            "nodes": {
                "a": _node("validate", "2026-12-03T01:00:00Z", "2026-12-03T01:00:05Z"),
                "b": _node(
                    "benchmark-pod",
                    "2026-12-03T01:00:20Z",
                    "2026-12-03T01:01:30Z",
                    " ".join(f"{c}:Filesystem:ReadWriteOnce:{w}:1:{i}" for i, (c, w) in enumerate(["xw", "xv", "yw"])),
                ),
                "c": _node(
                    "benchmark-pod", "2026-12-03T01:01:40Z", "2026-12-03T01:02:20Z", "y:Filesystem:ReadWriteOnce:v:1:3"
                ),
                "d": _node("aggregate", "2026-12-03T01:02:30Z", "2026-12-03T01:02:50Z"),
            },
        }
    }
    assert timing(wf, 17.0) == {"pods": 2, "cells": 4, "fio_s": 68.0, "cells_s": 120.0, "run_s": 140.0}
