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
