"""Run fio on a job file and return its json+ output, or a readable error."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path


class FioError(RuntimeError):
    """fio could not run, was killed, or reported a failed job."""


@dataclass
class FioRun:
    output: dict
    raw_text: str
    stderr: str
    jobfile: str


@lru_cache(maxsize=1)
def fio_version() -> str | None:
    exe = shutil.which("fio")
    if not exe:
        return None
    return subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip() or None


def run_fio(jobfile: str, timeout_s: float, fio: str = "fio") -> FioRun:
    """Run fio once with --output-format=json+. Raises FioError with fio's own words on failure."""
    exe = shutil.which(fio)
    if not exe:
        raise FioError("fio is not installed (apt-get install fio, or use the pvbench runner image)")
    with tempfile.TemporaryDirectory(prefix="pvbench-fio-") as tmp:
        job_path = Path(tmp) / "job.fio"
        out_path = Path(tmp) / "out.json"
        job_path.write_text(jobfile)
        try:
            proc = subprocess.run(
                [exe, "--output-format=json+", f"--output={out_path}", str(job_path)],
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
        except subprocess.TimeoutExpired as exc:
            raise FioError(f"fio did not finish within {timeout_s:.0f} s (storage hung?)") from exc
        raw = out_path.read_text() if out_path.exists() else ""
    stderr = proc.stderr.strip()
    if proc.returncode < 0:
        name = signal.Signals(-proc.returncode).name
        raise FioError(f"fio was killed by {name} before finishing; no result for this cell")
    if proc.returncode != 0:
        detail = stderr.splitlines()[-3:] if stderr else [f"exit code {proc.returncode}"]
        raise FioError("fio failed: " + " | ".join(detail))
    # fio may print warnings before the JSON document in the output file.
    start = raw.find("{")
    try:
        output = json.loads(raw[start:]) if start >= 0 else None
    except json.JSONDecodeError as exc:
        raise FioError(f"fio's JSON output could not be read: {exc}") from exc
    if not output or not output.get("jobs"):
        raise FioError("fio exited 0 but reported no jobs")
    return FioRun(output=output, raw_text=raw[start:], stderr=stderr, jobfile=jobfile)
