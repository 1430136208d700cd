"""Run the ``pvbench`` command as a user would (the one helper every test that calls the CLI uses), and pvbench's own benchmarks (pvbench_lab)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# The command line of the package under test, whichever virtualenv runs the tests.
PVBENCH = [sys.executable, "-m", "pvbench.cli"]
# Its console script (the entry point users type), for tests that need one executable path.
PVBENCH_SCRIPT = str(Path(sys.executable).parent / "pvbench")


def pvbench(*args: str | Path, timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
    """``pvbench ARGS…`` in a subprocess, its output captured as text; never raises for an exit code."""
    return subprocess.run([*PVBENCH, *map(str, args)], capture_output=True, text=True, timeout=timeout, **kwargs)


def lab_module(name: str, *args: str | Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """``python -m pvbench_lab.NAME ARGS…`` (one of pvbench's own benchmarks) run end to end, its
    output captured as text; never raises for an exit code."""
    return subprocess.run(
        [sys.executable, "-m", f"pvbench_lab.{name}", *map(str, args)], capture_output=True, text=True, timeout=timeout
    )
