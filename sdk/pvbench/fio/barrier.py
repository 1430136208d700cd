"""A start barrier for fio clients: every client lays out its files, then waits; all are released at once.

fio runs a job's ``exec_prerun`` command after laying out the job's files and before its ramp
(checked with fio 3.33: the files exist when the command runs). Each client's job gets, as that
command, a small waiter (``WAITER``, plain Python, no pvbench import so it starts fast) that

1. writes ``ready.<client>.<pid>`` (its wall-clock time in ns) into the barrier directory,
2. polls every 2 ms for the file ``go``, giving up after the timeout (its job then does no I/O
   and the cell fails with a message naming the client),
3. writes ``released.<client>.<pid>`` (the time it saw ``go``), and returns: fio starts its ramp.

The coordinator (``Barrier.wait_ready`` then ``Barrier.release``) waits until every job of every
client is ready and creates ``go`` atomically. The ``released`` times are the evidence that the
clients measured the same seconds: their spread is the cell's start skew.

Local mode shares one barrier directory between its N fio processes. A pod (the Argo version)
uses the same waiter in its own directory and creates its local ``go`` once a cross-pod barrier
releases it (``run_fio_clients(release=...)``).
"""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

from pvbench.profiles import ProfileError
from pvbench.profiles.jobfile import fio_path

GO_FILE = "go"
WAITER_FILE = "pvbench-barrier.py"
POLL_S = 0.002

WAITER = '''\
"""pvbench start barrier (fio exec_prerun): say ready, wait for 'go', say released."""
import os
import sys
import time

directory, client, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])


def mark(kind):
    name = "%s.%s.%d" % (kind, client, os.getpid())
    tmp = os.path.join(directory, "." + name)
    with open(tmp, "w") as f:
        f.write(str(time.time_ns()))
    os.replace(tmp, os.path.join(directory, name))


mark("ready")
go = os.path.join(directory, "go")
deadline = time.monotonic() + timeout
while not os.path.exists(go):
    if time.monotonic() > deadline:
        sys.exit("pvbench barrier: not released within %g s" % timeout)
    time.sleep(0.002)
mark("released")
'''


def _times(directory: Path, kind: str) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for path in directory.glob(f"{kind}.*.*"):
        try:
            client = int(path.name.split(".")[1])
            out.setdefault(client, []).append(int(path.read_text()))
        except (OSError, ValueError):
            continue  # being written (the waiter renames a whole file in, so not for long)
    return {c: sorted(v) for c, v in out.items()}


class Barrier:
    """The barrier directory of one multi-client cell (a fresh temporary directory by default)."""

    def __init__(self, timeout_s: float, directory: Path | None = None, python: str | None = None):
        self._tmp = None
        if directory is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="pvbench-barrier-")
            directory = Path(self._tmp.name)
        self.directory = Path(directory).resolve()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.timeout_s = timeout_s
        self.python = python or sys.executable
        self.released_ns: int | None = None
        script = self.directory / WAITER_FILE
        script.write_text(WAITER)
        for path in (self.python, str(script)):
            if fio_path(path) != path:  # ':' is fine for a command, but keep it plain
                raise ProfileError(f"the barrier's command path {path!r} contains ':'; fio cannot run it")

    def prerun(self, client: int) -> str:
        """fio's ``exec_prerun`` value for one client's job (fio hands it to the shell)."""
        words = [self.python, "-I", str(self.directory / WAITER_FILE), str(self.directory), str(client)]
        words.append(f"{self.timeout_s:g}")
        return " ".join(shlex.quote(w) for w in words)

    def ready(self) -> dict[int, list[int]]:
        """Client → the wall-clock ns at which each of its fio jobs reached the barrier."""
        return _times(self.directory, "ready")

    def released(self) -> dict[int, list[int]]:
        """Client → the wall-clock ns at which each of its fio jobs left the barrier."""
        return _times(self.directory, "released")

    def count_ready(self) -> int:
        return sum(len(v) for v in self.ready().values())

    def release(self) -> int:
        """Open the barrier (atomically: ``go`` appears whole); returns the wall-clock ns."""
        tmp = self.directory / f".{GO_FILE}"
        self.released_ns = time.time_ns()
        tmp.write_text(str(self.released_ns))
        os.replace(tmp, self.directory / GO_FILE)
        return self.released_ns

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> "Barrier":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
