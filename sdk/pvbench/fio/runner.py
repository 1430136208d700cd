"""Run fio on a job file and return its json+ output, or a readable error.

fio runs in its own process group. When pvbench is asked to stop (SIGTERM from Kubernetes or
``kill``, SIGINT from Ctrl-C) while fio runs, ``pvbench.stopping`` turns the signal into
``Interrupted``; ``run_fio`` then passes the signal on to fio's whole group, waits for it to
end (SIGKILL after a grace period), removes its temporary files and re-raises, so callers
clean the target, keep what is stored and exit non-zero. No fio is left running as an orphan.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from pvbench.fio.cpu_watch import CpuWatch, JobCpu
from pvbench.fio.series import is_series_log
from pvbench.stopping import Interrupted, check_interrupted, deferred_signals, start_group, stop_group


class FioError(RuntimeError):
    """fio could not run, was killed, or reported a failed job."""


@dataclass
class FioRun:
    output: dict
    raw_text: str
    stderr: str
    jobfile: str
    # each job's time on or waiting for a CPU (pvbench.fio.cpu_watch); None: not measured here
    job_cpu: list[JobCpu] | None = field(default=None, compare=False)
    # fio's interval logs of the run, {file name: content} (pvbench.fio.series reads them)
    logs: dict[str, bytes] = field(default_factory=dict, compare=False, repr=False)


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
        check_interrupted()
        # its own process group (session): a signal meant for fio reaches its job processes too,
        # and a Ctrl-C reaches pvbench, which stops fio itself
        err_path = Path(tmp) / "stderr.txt"
        # fio's messages go to a file, not a pipe: a job process outliving a killed fio would hold
        # a pipe open, and waiting for its end would wait for that process
        with err_path.open("w") as err_file, deferred_signals(raise_after=False):  # no stop before watching
            proc = start_group(
                [exe, "--output-format=json+", f"--output={out_path}", str(job_path)],
                cwd=tmp,  # fio writes its interval logs here (pvbench.fio.series), never into the target
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err_file,
            )
        try:
            check_interrupted()
            with CpuWatch(proc.pid) as cpu_watch:
                proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired as exc:
            stop_group(proc, signal.SIGKILL)
            raise FioError(f"fio did not finish within {timeout_s:.0f} s (storage hung?)") from exc
        except BaseException as exc:  # Interrupted, KeyboardInterrupt: stop fio before anything else
            stop_group(proc, exc.signum if isinstance(exc, Interrupted) else signal.SIGTERM)
            raise
        raw = out_path.read_text() if out_path.exists() else ""
        stderr = err_path.read_text(errors="replace").strip()
        logs = read_series_logs(Path(tmp))
    run = fio_result(proc.returncode, raw, stderr, jobfile)
    run.logs = logs
    run.job_cpu = cpu_watch.jobs()
    return run


def read_series_logs(workdir: Path) -> dict[str, bytes]:
    """The interval logs fio wrote into its working directory (``pvbench.fio.series``)."""
    return {p.name: p.read_bytes() for p in sorted(workdir.iterdir()) if is_series_log(p.name) and p.is_file()}


def fio_result(returncode: int, raw: str, stderr: str, jobfile: str) -> FioRun:
    """A finished fio's exit code, output file and messages as a FioRun, or the FioError saying why not
    (shared by ``run_fio`` and the multi-client runner, pvbench.fio.clients)."""
    if returncode < 0:
        name = signal.Signals(-returncode).name
        raise FioError(f"fio was killed by {name} before finishing; no result for this cell")
    if returncode != 0:
        detail = stderr.splitlines()[-3:] if stderr else [f"exit code {returncode}"]
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
