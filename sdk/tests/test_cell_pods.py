"""Several cells in one pod (cells-per-pod > 1): the fan-out, `pvbench fio-pod` on real fio, the template."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from argo_helpers import benchmark_template, templates_by_name
from cli_helpers import pvbench

from pvbench.argo import conventions as c
from pvbench.cells.cell import FAN_OUT_ITEM_KEYS, Cell
from pvbench.cells.matrix import (
    CELL_PODS_FAN_OUT,
    CELLS_FAN_OUT,
    NEXT_ROUND,
    POD_CELLS_KEY,
    argo_fan_outs,
    parse_pod_cells,
    pod_cells_text,
)
from pvbench.profiles import ProfileError
from pvbench.results import ResultDocument
from pvbench.store.layout import RESULT_FILE, results_prefix

SHAPE = {"volume_mode": "Filesystem", "access_mode": "ReadWriteOnce"}
ITEMS = [
    {"storage_class": sc, **SHAPE, "workload": "randread-iops", "rep": 1, "order": i} for i, sc in enumerate("abcde")
]


def test_consecutive_cells_of_the_order_go_to_one_pod():
    fan_outs = argo_fan_outs([("dbench", i["workload"], i) for i in ITEMS], cells_per_pod=2)
    assert fan_outs[CELLS_FAN_OUT] == []
    pods = [parse_pod_cells(p[POD_CELLS_KEY]) for p in fan_outs[CELL_PODS_FAN_OUT]]
    assert pods == [ITEMS[0:2], ITEMS[2:4], ITEMS[4:5]]  # the order kept; the last pod has the rest
    assert fan_outs[CELL_PODS_FAN_OUT][0] == {
        POD_CELLS_KEY: "a:Filesystem:ReadWriteOnce:randread-iops:1:0 b:Filesystem:ReadWriteOnce:randread-iops:1:1"
    }
    one = argo_fan_outs([("dbench", i["workload"], i) for i in ITEMS])  # 1: a pod per cell, as before
    assert one[CELLS_FAN_OUT] == ITEMS and one[CELL_PODS_FAN_OUT] == []
    assert set(NEXT_ROUND) == set(fan_outs)  # each fan-out has its adaptive round's output
    with pytest.raises(ProfileError, match="choose 1 to 16"):
        argo_fan_outs([], cells_per_pod=17)


def test_a_pods_cells_text_round_trips_and_bad_text_is_refused():
    assert parse_pod_cells(pod_cells_text(ITEMS)) == ITEMS
    bad_cells = [
        ("a:w:1", "not storage_class:volume_mode:access_mode:workload:rep:order"),
        ("a:Filesystem:ReadWriteOnce:w:x:0", "whole numbers"),
        (" ", "at least"),
    ]
    for bad, message in bad_cells:
        with pytest.raises(ValueError, match=message):
            parse_pod_cells(bad)


def test_expand_and_validate_say_the_pods_and_their_deadline(tmp_path):
    common = ["--campaign", "c", "--run", "r", "--occasion", "o", "--storage-classes", "fast,slow"]
    proc = pvbench("expand", *common, "--profiles", "dbench", "--cells-per-pod", "4", "--outputs", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    everything = json.loads(proc.stdout)
    pods = json.loads((tmp_path / CELL_PODS_FAN_OUT).read_text())
    assert [len(parse_pod_cells(p[POD_CELLS_KEY])) for p in pods] == [4, 4, 4, 4, 2]  # 2 classes × 9 tests
    assert [cell for p in pods for cell in parse_pod_cells(p[POD_CELLS_KEY])] == everything
    proc = pvbench("validate", *common, "--cells-per-pod", "4", "--volume-timeout", "60s", "--outputs", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    cell_s = int((tmp_path / c.CELL_TIMEOUT_OUTPUT).read_text().removesuffix("s"))
    pod_s = int((tmp_path / c.POD_TIMEOUT_OUTPUT).read_text().removesuffix("s"))
    assert 60 + 4 * (cell_s - 61) <= pod_s <= 60 + 4 * (cell_s - 60)  # one volume wait, 4 cells (each rounded up)
    assert (tmp_path / c.VOLUME_WAIT_OUTPUT).read_text() == "60"  # the guard's limit for an unscheduled pod
    proc = pvbench("validate", *common, "--cells-per-pod", "0")
    assert proc.returncode == 2 and "choose 1 to 16" in proc.stderr


def _fio_pod(tmp_path: Path, cells: str, job: Path, *extra: str):
    targets = tmp_path / "data"
    for i in range(len(cells.split())):
        (targets / str(i)).mkdir(parents=True, exist_ok=True)
    args = ["fio-pod", "--campaign", "c1", "--run", "r1", "--occasion", "night", "--profile", f"file:{job}"]
    args += ["--cells", cells, "--targets", str(targets), "--out", str(tmp_path / "out")]
    args += ["--key", results_prefix("c1", "r1"), "--ramp", "200ms", "--runtime", "500ms", "--size", "8M", "--cleanup"]
    progress = tmp_path / "progress"
    env = {"ARGO_PROGRESS_FILE": str(progress)}
    return pvbench(*args, *extra, env={**os.environ, **env}, timeout=120), progress


def test_a_pod_runs_its_cells_in_turn_each_on_its_volume_and_a_failed_cell_stops_none(tmp_path):
    job = tmp_path / "job.fio"
    job.write_text(
        "[global]\nioengine=psync\n[good]\nrw=randread\nbs=4k\n[bad]\nrw=randread\nbs=4k\nioengine=no-such-engine\n"
    )
    cells = "fast:Filesystem:ReadWriteOnce:good:1:0 fast:Filesystem:ReadWriteOnce:bad:1:1 slow:Filesystem:ReadWriteMany:good:1:2"
    proc, progress = _fio_pod(tmp_path, cells, job)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    message = " ".join(proc.stderr.split())
    assert "1 of 3 cells failed: fast:Filesystem:ReadWriteOnce:bad:1:1" in message and "Traceback" not in message
    assert progress.read_text().strip() == "3/3"  # every cell was tried
    stored = sorted(p.relative_to(tmp_path / "out") for p in (tmp_path / "out").rglob(RESULT_FILE))
    below = results_prefix("c1", "r1") + "/"
    expected = [
        Path(Cell(campaign="c1", run="r1", occasion="night", storage_class=sc, access_mode=access,
                  profile=f"file:{job}", workload="good", rep=1, order=order
                  ).identity().prefix().removeprefix(below)) / RESULT_FILE
        for sc, access, order in (("fast", "ReadWriteOnce", 0), ("slow", "ReadWriteMany", 2))
    ]  # fmt: skip
    assert stored == sorted(expected)  # under each cell's own key: the template uploads --out at --key
    for path in stored:
        doc = ResultDocument.model_validate_json((tmp_path / "out" / path).read_bytes())
        assert doc.metrics[0].iops > 0 and doc.identity.rep == 1
    # each cell on its own volume, its files removed after it (--cleanup)
    assert not [p for p in (tmp_path / "data").rglob("*") if p.is_file()]


def test_bad_input_fails_before_any_cell_runs(tmp_path):
    job = tmp_path / "job.fio"
    job.write_text("[good]\nrw=randread\nbs=4k\n")
    fs = "Filesystem:ReadWriteOnce"
    proc, progress = _fio_pod(tmp_path, f"fast:{fs}:good:1:0 fast:{fs}:nope:1:1", job)
    assert proc.returncode == 2 and "no test 'nope'" in " ".join(proc.stderr.split())
    assert not progress.exists() and not (tmp_path / "out").exists()
    proc, _ = _fio_pod(tmp_path, f"fast:{fs}:good:1:0", job, "--key", "results/campaign=other/run=r1")
    assert proc.returncode == 2 and "the template and pvbench disagree" in " ".join(proc.stderr.split())


def test_the_pod_template_gives_each_cell_its_own_volume_and_uploads_under_the_run():
    tpl = templates_by_name(benchmark_template())
    pod = tpl["benchmark-pod"]
    assert [p["name"] for p in pod["inputs"]["parameters"]] == [POD_CELLS_KEY]
    patch = pod["podSpecPatch"]
    # an Argo expression over the pod's cells: one volume per cell, of its class, at /data/<i>
    assert patch.startswith("{{=") and patch.endswith("}}") and "}}" not in patch[:-2] and '"' not in patch
    assert "inputs.parameters.cells" in patch and "'storageClassName': #[0]" in patch
    assert "'accessModes': [#[2]]" in patch  # each cell's volume of its own access mode
    assert f"'{c.TARGET_DIR}/' + string(#index)" in patch and "workflow.parameters['volume-size']" in patch
    [results] = pod["outputs"]["artifacts"]
    args = pod["container"]["args"]
    assert results["s3"]["key"] == args[args.index("--key") + 1] and results["path"] == c.POD_OUT_DIR
    assert results["optional"] and results["archive"] == {"none": {}}
    assert pod["timeout"] == "{{workflow.outputs.parameters.%s}}" % c.POD_TIMEOUT_OUTPUT
    assert pod["affinity"] == tpl["benchmark-cell"]["affinity"]  # one benchmark pod per node, as a cell's
    for dag in ("main", "adaptive"):
        [task] = [t for t in tpl[dag]["dag"]["tasks"] if t["template"] == "benchmark-pod"]
        assert task["arguments"]["parameters"] == [{"name": POD_CELLS_KEY, "value": "{{item.cells}}"}]
    # what the text holds, in this order: the expression reads [0] and [2]
    assert FAN_OUT_ITEM_KEYS == ("storage_class", "volume_mode", "access_mode", "workload", "rep", "order")


def test_a_failed_pod_names_its_failed_cells_or_all_of_them():
    """The exit handler's failures: a pod's message names the cells that failed (`fio-pod`);
    a pod that failed as a whole (its deadline, an eviction) stands for all of its cells."""
    from pvbench.argo.failures import parse_failures

    fs, rwx = "Filesystem:ReadWriteOnce", "Filesystem:ReadWriteMany"
    named = {
        "displayName": f"benchmark-pods(0:cells:fast:{fs}:a:1:0 slow:{fs}:b:1:1 fast:{rwx}:c:1:2)",
        "message": f"main: Error (exit code 1): 2 of 3 cells failed: fast:{fs}:a:1:0 (fio failed: x; y); "
        f"fast:{rwx}:c:1:2 (z)",
        "templateName": "benchmark-pod",
        "phase": "Failed",
    }
    whole = {
        **named,
        "displayName": f"benchmark-pods(1:cells:slow:{fs}:a:2:3 fast:{fs}:b:2:4)",
        "message": "Pod was active",
    }
    rows = parse_failures(json.dumps([named, whole]))
    assert [(r["storage_class"], r["workload"], r["rep"]) for r in rows] == [
        ("fast", "a", 1),
        ("fast (RWX)", "c", 1),  # the class as the report's rows name it, with its volume shape
        ("slow", "a", 2),
        ("fast", "b", 2),
    ]
    assert rows[0]["message"] == named["message"] and rows[2]["message"] == "Pod was active"
