"""`pvbench fio-step`, the command every Argo step pod runs, on real fio."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import pvbench

from pvbench.cells.cell import Cell
from pvbench.results import CellIdentity, ResultDocument


def step(tmp_path: Path, *extra: str, target: Path | None = None, env=None) -> subprocess.CompletedProcess:
    target = target or tmp_path / "target"
    target.mkdir(exist_ok=True)
    args = [
        "fio-step",
        "--target",
        str(target),
        "--campaign",
        "c1",
        "--run",
        "r1",
        "--occasion",
        "night",
        "--rep",
        "2",
        "--ramp",
        "200ms",
        "--runtime",
        "500ms",
        "--size",
        "16M",
    ]
    defaults = {"--storage-class": "fast-ssd", "--profile": "dbench", "--workload": "randread-lat"}
    given = set(extra[::2])
    for k, v in defaults.items():
        if k not in given:
            args += [k, v]
    return pvbench(*args, *extra, env={**os.environ, **(env or {})}, timeout=120)


def test_a_cell_has_one_identity_and_its_key_is_made_from_it():
    """A planned cell becomes the identity its result records; the store key is that identity's."""
    cell = Cell(
        campaign="C1",
        run="r1",
        occasion="Night",
        storage_class="fast-ssd",
        profile="file:/x/job.fio",
        workload="w",
        rep=2,
        order=5,
        seed=9,
    )
    identity = cell.identity({"role": "baseline"})
    assert identity.model_dump() == {
        "campaign": "C1",
        "run": "r1",
        "occasion": "Night",
        "storage_class": "fast-ssd",
        "profile": "custom",
        "workload": "w",
        "volume_mode": "Filesystem",
        "access_mode": "ReadWriteOnce",
        "rep": 2,
        "order": 5,
        "labels": {"role": "baseline"},
    }
    assert cell.identity().result_key() == identity.result_key() == cell.result_key()
    assert isinstance(cell, CellIdentity) and cell.profile_spec == "file:/x/job.fio"
    assert identity.prefix() == (
        "results/campaign=c1/run=r1/occasion=night/storage_class=fast-ssd/volume=filesystem-rwo/"
        "profile=custom/workload=w/rep=2"
    )
    block = cell.model_copy(update={"volume_mode": "Block", "access_mode": "ReadWriteMany"}).identity()
    assert (
        "/storage_class=fast-ssd/volume=block-rwx/" in block.prefix()
        and block.storage_label() == "fast-ssd (Block, RWX)"
    )


def test_step_writes_result_and_raw_json_under_the_layout_key(tmp_path):
    store = tmp_path / "store"
    proc = step(
        tmp_path,
        "--store",
        str(store),
        "--out",
        str(tmp_path / "out"),
        "--label",
        "role=baseline",
        "--seed",
        "42",
        env={"PVBENCH_NODE_NAME": "node-a", "PVBENCH_PROVISIONER": "rancher.io/local-path"},
    )
    assert proc.returncode == 0, proc.stderr
    key = CellIdentity(
        campaign="c1",
        run="r1",
        occasion="night",
        storage_class="fast-ssd",
        profile="dbench",
        workload="randread-lat",
        rep=2,
    )
    doc = ResultDocument.from_json((store / key.result_key()).read_bytes())
    assert json.loads((store / key.raw_fio_key()).read_text())["fio version"].startswith("fio-")
    assert (tmp_path / "out" / "result.json").read_bytes() == (store / key.result_key()).read_bytes()
    assert doc.identity.storage_class == "fast-ssd" and doc.identity.labels == {"role": "baseline"}
    assert doc.workload.iodepth == 4 and doc.workload.bs == "4k" and doc.workload.headline_metric == "lat_mean_us"
    assert doc.provenance.node == "node-a" and doc.provenance.provisioner == "rancher.io/local-path"
    assert doc.provenance.filesystem and doc.provenance.fio_version.startswith("fio-")
    assert doc.provenance.notes["seed"] == "42"  # the design is recorded with the data
    [read] = doc.metrics
    assert read.direction == "read" and read.iops > 0 and read.lat_p99_us >= read.lat_p50_us > 0


@pytest.mark.parametrize(
    "args, message",
    [
        (["--storage-class", "Fast_SSD"], "not a valid Kubernetes name"),
        (["--profile", "nope"], "unknown profile 'nope'"),
        (["--workload", "nope"], "has no test 'nope'"),
        (["--size", "-5G"], "must be positive"),
        (["--size", "900T"], "does not fit"),
        (["--ramp", "soon"], "not a duration"),
    ],
)
def test_bad_input_fails_before_fio_starts(tmp_path, args, message):
    proc = step(tmp_path, *args)
    assert proc.returncode == 2
    assert message in " ".join(proc.stderr.split())
    assert "Traceback" not in proc.stderr
    assert not list((tmp_path / "target").glob("pvbench-fio.*")), "fio must not have run"


def test_fio_failure_is_readable_and_nonzero(tmp_path):
    job = tmp_path / "bad.fio"
    job.write_text("[global]\nruntime=1s\n[bad]\nrw=randread\nbs=4k\nioengine=no-such-engine\n")
    proc = step(tmp_path, "--profile", f"file:{job}", "--workload", "bad", "--store", str(tmp_path / "s"))
    assert proc.returncode == 1
    assert "fio failed" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "s").exists()


def test_sweep_80_percent_level_is_found_by_measurement(tmp_path):
    proc = step(
        tmp_path,
        "--profile",
        "sweep",
        "--workload",
        "randread-4k-p80",
        "--store",
        str(tmp_path / "s"),
        "--runtime",
        "500ms",
        "--ramp",
        "100ms",
        "--size",
        "8M",
    )
    assert proc.returncode == 0, proc.stderr
    [path] = (tmp_path / "s").rglob("result.json")
    doc = ResultDocument.from_json(path.read_bytes())
    note = doc.provenance.notes["load_search"]
    assert "of QD32 max" in note and "tried qd32x1=" in note
    assert doc.workload.load == "p80" and doc.workload.iodepth >= 1


def test_the_console_script_freezes_what_outlives_the_command_and_keeps_its_exit_code(monkeypatch):
    """pvbench.cli.main.main (the `pvbench` script, and `python -m pvbench.cli`): gc.freeze() before
    the command and after it (so the exit's collections walk neither), and the command's own exit
    code, whatever it is."""
    import gc

    from pvbench.cli import main as cli_main

    frozen, mounted = [], []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(True))
    monkeypatch.setattr(cli_main, "app", lambda prog_name: sys.exit(3))
    monkeypatch.setattr(cli_main, "mount_for", mounted.append)  # the command's sub-apps, before it runs
    monkeypatch.setattr(sys, "argv", ["pvbench", "aggregate", "--store", "s"])
    with pytest.raises(SystemExit) as exited:
        cli_main.main()
    assert exited.value.code == 3
    assert frozen == [True, True]
    assert mounted == [["aggregate", "--store", "s"]]


ALL_OPTIONAL = {"report", "stats", "argo"}


@pytest.mark.parametrize(
    "args, mounted",
    [
        (["aggregate", "--store", "s"], set()),  # every workflow's last step: none of them
        (["fio-step", "--help"], set()),  # every step pod
        (["report", "build"], {"report"}),
        (["stats", "--help"], {"stats"}),
        (["render"], {"argo"}),  # a top-level Argo shortcut
        (["--help"], ALL_OPTIONAL),  # the list of every command
        ([], ALL_OPTIONAL),
        (["agregate"], ALL_OPTIONAL),  # a typo: "no such command" among them all
    ],
)
def test_the_console_script_mounts_only_the_optional_commands_it_runs(args, mounted):
    """main() mounts the report, stats and Argo sub-apps only for a command that needs them
    (importing the report's build and hera: ~0.1 s, a twentieth of adding a run), and all of them
    where the command is unknown or help lists them all."""
    code = (
        "import sys, json; from pvbench.cli import main; main.mount_for(sys.argv[1:]);"
        " print(json.dumps([sorted(main._mounted), 'pvbench.cli.report' in sys.modules, 'pvbench.cli.argo' in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True).stdout
    names, report_imported, argo_imported = json.loads(out)
    assert set(names) == mounted
    assert report_imported == ("report" in mounted) and argo_imported == ("argo" in mounted)


def test_listing_the_commands_does_not_import_the_analytics():
    """`pvbench --help` mounts every sub-app, the report's among them; the report's build module
    imports the pipeline (DuckDB's models, NumPy) only when it builds: importing it at the top
    made `pvbench --help`, `report serve` and `report locate` ~0.3 s slower for nothing."""
    code = (
        "import sys, json; from pvbench.cli import main; main.mount_for(['--help']);"
        " print(json.dumps([m in sys.modules for m in ('pvbench.cli.report', 'pvbench.pipeline', 'numpy')]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == [True, False, False]


def test_every_optional_command_runs_through_the_console_script():
    for args in (["report", "--help"], ["stats", "--help"], ["argo", "--help"], ["render", "--help"]):
        result = pvbench(*args)
        assert result.returncode == 0, (args, result.stderr)
        assert "Usage: " in result.stdout
    listed = pvbench("--help").stdout
    for name in ("report", "stats", "argo", "render", "submit", "aggregate", "fio-step"):
        assert f"│ {name} " in listed
