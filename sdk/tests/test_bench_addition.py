"""pvbench_lab.bench_addition (docs/performance.md: where adding a run spends its time) runs end to
end on its smallest campaign (its timings are not checked: a script, not a timed test)."""

from cli_helpers import lab_module

from pvbench.analytics.models import analytics_dir, discover_models
from pvbench_lab.bench_addition import PHASES


def test_the_addition_breakdown_prints_every_phase_and_the_slowest_models():
    done = lab_module("bench_addition", "--results", "1000", "--additions", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "adding a run of 1,000 results to 1,000" in out, out[-3000:]
    for phase in PHASES:
        assert any(line.strip("│ ").startswith(phase) for line in out.splitlines()), (phase, out[-3000:])
    # the models were timed where they ran (the runner's debug log), the largest named: which
    # ones depends on the machine's load, so only that each is one of the campaign's models
    [line] = [line for line in out.splitlines() if line.startswith("slowest models: ")]
    named = [entry.rsplit(" ", 2)[0] for entry in line.removeprefix("slowest models: ").split(", ")]
    campaign_models = {m.name for m in discover_models(analytics_dir())}
    assert len(named) == 8 and set(named) <= campaign_models, line


def test_without_a_python_step_the_additions_alternate_and_their_pair_ratio_is_printed():
    done = lab_module("bench_addition", "--results", "1000", "--additions", "1", "--without", "comparisons,history")
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    # one addition with every step, then one without the two steps' judging
    assert "run-0001: " in out and "run-0002 (without comparisons and history): " in out, out[-3000:]
    assert "wall, without comparisons and history" in out, out[-3000:]
    [line] = [line for line in out.splitlines() if line.startswith("without comparisons and history: ")]
    assert "median pair ratio" in line and "(1 pair)" in line, line


def test_an_unknown_step_is_refused_before_anything_is_written():
    done = lab_module("bench_addition", "--without", "comparisons,nope")
    assert done.returncode == 2
    assert "--without: no step nope (one of: comparisons, history)" in done.stderr
    assert "writing" not in done.stdout
