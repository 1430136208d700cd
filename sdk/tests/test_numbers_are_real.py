"""The same fio job, bare and through pvbench, on the same directory: the IOPS agree.

The job is rate-limited (rate_iops) so that both runs have one true answer and the
comparison tests pvbench (rendering, running, parsing, units), not the machine's noise.
The unthrottled ratio is measured by pvbench_lab.bench_overhead.
"""

import json
import subprocess

import pytest

from pvbench.cells.cell import Cell
from pvbench.cells.run import TimingOverrides, plan_cell, run_cell
from pvbench.profiles import render_jobfile

pytestmark = pytest.mark.quiet

JOB = """[global]
ioengine=libaio
direct=1
[throttled-randread]
rw=randread
bs=4k
iodepth=8
rate_iops=2500
[throttled-randrw]
rw=randrw
rwmixread=70
bs=16k
iodepth=8
rate_iops=1400,600
"""


def test_pvbench_and_bare_fio_agree(tmp_path):
    job = tmp_path / "throttled.fio"
    job.write_text(JOB)
    target = tmp_path / "target"
    target.mkdir()
    for workload, expected in (
        ("throttled-randread", {"read": 2500}),
        ("throttled-randrw", {"read": 1400, "write": 600}),
    ):
        cell = Cell(
            campaign="c", run="r", occasion="o", storage_class="local", profile=f"file:{job}", workload=workload, rep=1
        )
        plan = plan_cell(cell, target, TimingOverrides(ramp="500ms", runtime="2s", size="32M"))
        # bare: fio on the identical job file, its JSON read with nothing of pvbench's
        jobfile = render_jobfile(plan.profile, [plan.test], plan.timing, target)
        (tmp_path / "bare.fio").write_text(jobfile)
        out = subprocess.run(
            ["fio", "--output-format=json", str(tmp_path / "bare.fio")],
            cwd=tmp_path,  # the job's interval logs go to fio's working directory
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        bare = json.loads(out[out.find("{") :])["jobs"][0]
        doc, raw = run_cell(plan)
        ours = {m.direction: m for m in doc.metrics}
        assert set(ours) == set(expected)
        for direction, rate in expected.items():
            assert abs(ours[direction].iops / bare[direction]["iops"] - 1) < 0.03
            assert abs(ours[direction].iops / rate - 1) < 0.03
            assert abs(ours[direction].bw_mib_s / (bare[direction]["bw_bytes"] / 2**20) - 1) < 0.03
        assert json.loads(raw.fio_json)["jobs"][0]["job options"]["rate_iops"]
