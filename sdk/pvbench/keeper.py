"""The keeper of ``stopping.tied_to_this_process``: runs a command in its own process group (which
the keeper leads) and ends that group once the process that started the keeper is gone, however
it ended (SIGKILL, the OOM killer), which nothing of that process can handle itself.

Run as a script, ``python -I -S keeper.py PARENT GRACE_S CMD…``, with the standard library only:
it starts once for every fio a run starts, and as a module of pvbench (``python -m``) it paid for
pvbench's imports and the virtualenv's site each time, over twice as long.
"""

import os
import select
import signal
import sys

# How often the keeper looks whether its parent is still there
POLL_S = 0.5


def keep(parent: int, grace_s: float, cmd: list[str]) -> int:
    """``cmd``'s exit code; ended by a signal, the keeper ends by the same one, so whoever started
    it sees what it would have seen of ``cmd`` (fio's runner names the signal that killed fio)."""
    try:
        pid = os.posix_spawnp(cmd[0], cmd, os.environ)  # in the keeper's process group
    except OSError as exc:  # what the caller would have got from Popen, as the shell says it
        print(f"cannot run {cmd[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    for sig in (signal.SIGTERM, signal.SIGINT):  # sent to the group, they reach ``cmd`` too: wait for it
        signal.signal(sig, signal.SIG_IGN)
    ended = os.pidfd_open(pid)  # readable once ``cmd`` has ended: no waiting a poll's length for it
    while True:
        if select.select([ended], [], [], POLL_S)[0]:
            code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            if code < 0:
                try:  # back to its default (SIGKILL has only that one, and refuses to be set)
                    signal.signal(-code, signal.SIG_DFL)
                except (OSError, ValueError):
                    pass
                os.kill(os.getpid(), -code)
            return code if code >= 0 else 128 - code
        if os.getppid() != parent:  # orphaned: the one that started it is gone
            os.killpg(0, signal.SIGTERM)
            select.select([ended], [], [], grace_s)
            os.killpg(0, signal.SIGKILL)  # what is left, the keeper with it


if __name__ == "__main__":
    sys.exit(keep(int(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]))
