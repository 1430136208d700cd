"""The bad-input and fault suite (issue 10): each case tries one bad input or fault the way a user
would meet it, and says what happened and what was kept.

The rule everywhere: a clear one-line error before anything runs, never a traceback, and no
result, user file or earlier run lost or counted twice.

A case module (``cases_<area>.py`` in this folder) defines ``CASES``: a list of ``Case``. Each
case's ``run(ctx)`` does the thing in a fresh directory and returns an ``Outcome``; ``ok`` says
whether the rule held. ``sdk/tests/test_faults.py`` runs every case (pytest), and
``sdk/tests/fault_table.py`` prints the table that docs/faults.md shows.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from cli_helpers import PVBENCH, pvbench

REPO = Path(__file__).resolve().parents[3]
__all__ = ["PVBENCH", "REPO", "Case", "Ctx", "Outcome", "all_cases", "clear_error"]


@dataclass
class Outcome:
    ok: bool
    """The rule held: clear error before anything ran, or the fault lost / double-counted nothing."""
    outcome: str
    """What the user saw, e.g. 'exit 2: storage class "A B" is not a DNS-1123 name'."""
    kept: str
    """What was kept, e.g. 'nothing ran; store untouched' or '3 of 4 cells stored, spool flushed'."""


@dataclass
class Ctx:
    """What a case gets: a fresh directory, the tools, a MinIO server when the case asks for one."""

    tmp: Path
    fio: str | None = None
    minio: object | None = None  # conftest.MinioServer
    env: dict[str, str] = field(default_factory=dict)

    def cli(
        self, *args: str, timeout: float = 120, env: dict[str, str] | None = None, input: str | None = None
    ) -> subprocess.CompletedProcess:
        """Run `pvbench ARGS` as a user would, in the case's directory."""
        return pvbench(*args, cwd=self.tmp, timeout=timeout, env=self._env(env), input=input)

    def start(self, *args: str, env: dict[str, str] | None = None, stdout=subprocess.PIPE) -> subprocess.Popen:
        """`pvbench ARGS` started as ``cli`` runs it, for a case that acts while it runs; its
        stderr (and by default its stdout) a pipe, as text."""
        return subprocess.Popen(
            [*PVBENCH, *args], cwd=self.tmp, env=self._env(env), stdout=stdout, stderr=subprocess.PIPE, text=True
        )

    def _env(self, env: dict[str, str] | None) -> dict[str, str]:
        full_env = {**os.environ, **self.env, **(env or {})}
        full_env["PYTHONPATH"] = str(REPO / "sdk") + os.pathsep + full_env.get("PYTHONPATH", "")
        return full_env


@dataclass
class Case:
    area: str
    name: str
    """The input or fault, as the table shows it."""
    run: Callable[[Ctx], Outcome]
    needs: tuple[str, ...] = ()
    """'fio' and/or 'minio'."""


def clear_error(proc: subprocess.CompletedProcess, *expect: str) -> tuple[bool, str]:
    """(ok, shown): a non-zero exit with a short error naming the problem, and no traceback."""
    err = " ".join((proc.stderr or "").split())
    ok = proc.returncode != 0 and "Traceback" not in proc.stderr and all(e.lower() in err.lower() for e in expect)
    # rich wraps long errors at the terminal width: show the message joined, shortened
    return ok, f"exit {proc.returncode}: {err[:200]}"


def all_cases() -> list[Case]:
    """Every case of every ``cases_*.py`` module in this folder, in file order."""
    cases: list[Case] = []
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda m: m.name):
        if info.name.startswith("cases_"):
            cases.extend(importlib.import_module(f"{__name__}.{info.name}").CASES)
    return cases
