"""Every case of the bad-input and fault suite (sdk/tests/faults/) holds the rule:
a clear one-line error before anything runs, never a traceback, nothing lost or counted twice."""

import pytest
from faults import Ctx, all_cases

CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=[f"{c.area}:{c.name}" for c in CASES])
def test_fault_case(case, tmp_path, request):
    ctx = Ctx(tmp=tmp_path)
    if "fio" in case.needs:
        ctx.fio = request.getfixturevalue("fio_bin")
    if "minio" in case.needs:
        ctx.minio = request.getfixturevalue("minio_server")
        ctx.env.update(ctx.minio.env)
    outcome = case.run(ctx)
    assert outcome.ok, f"{case.name}: {outcome.outcome} — kept: {outcome.kept}"
