"""Print the bad-input and fault table (docs/faults.md): input or fault → outcome → what was kept.

Runs every case of sdk/tests/faults/ (the same cases `make test` asserts) in a fresh directory,
with real fio and a real MinIO on loopback where a case needs them. It lives beside the cases
(run as a script, sdk/tests is where Python looks for them first):

    .venv/bin/python sdk/tests/fault_table.py            # markdown on stdout
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from faults import Ctx, all_cases

from pvbench.testing.minio import MinioServer, tool


def main() -> int:
    cases = all_cases()
    minio = None
    failed = 0
    print("| area | input or fault | outcome | what was kept | rule held |")
    print("|---|---|---|---|---|")
    try:
        for case in cases:
            with tempfile.TemporaryDirectory(prefix="pvbench-fault-") as tmp:
                ctx = Ctx(tmp=Path(tmp))
                if "fio" in case.needs:
                    ctx.fio = tool("fio")
                if "minio" in case.needs:
                    if minio is None:
                        minio = MinioServer(Path(tempfile.mkdtemp(prefix="pvbench-fault-minio-")))
                        minio.start()
                    ctx.minio = minio
                    ctx.env.update(minio.env)
                try:
                    out = case.run(ctx)
                    row = (out.outcome, out.kept, "yes" if out.ok else "**NO**")
                    failed += not out.ok
                except Exception as exc:  # a broken case is reported, not hidden
                    row = (f"case error: {exc}", "?", "**NO**")
                    failed += 1
            cells = [case.area, case.name, *(c.replace(tmp, "DIR") for c in row)]
            print("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    finally:
        if minio is not None:
            minio.stop()
    print(f"\n{len(cases)} cases, {len(cases) - failed} hold the rule")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
