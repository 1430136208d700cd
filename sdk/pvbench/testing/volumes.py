"""Real volumes of the shapes pvbench measures, for tests: a loop device (a raw Block volume) and
a network filesystem (an SFTP server mounted with sshfs: a ReadWriteMany class).

Both need root (losetup, mount), as CI has; ``LoopDevice`` and ``SftpShare`` raise
``VolumeUnavailable`` where the machine cannot make one, for the caller to skip or fail.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

SFTP_SERVER = Path("/usr/lib/openssh/sftp-server")


class VolumeUnavailable(RuntimeError):
    pass


class LoopDevice:
    """A loop device over a fresh sparse file of ``size`` bytes (detached on exit)."""

    def __init__(self, backing: Path, size: int):
        self.backing, self.size, self.device = backing, size, None

    def __enter__(self) -> Path:
        with open(self.backing, "wb") as f:
            f.truncate(self.size)
        done = subprocess.run(["losetup", "--find", "--show", str(self.backing)], capture_output=True, text=True)
        if done.returncode != 0:
            raise VolumeUnavailable(f"losetup: {done.stderr.strip()}")
        self.device = Path(done.stdout.strip())
        return self.device

    def __exit__(self, *exc) -> None:
        subprocess.run(["umount", str(self.device)], capture_output=True)
        subprocess.run(["losetup", "-d", str(self.device)], capture_output=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SftpShare:
    """``export`` served by OpenSSH's sftp-server (one per connection, behind socat) and mounted
    at ``mount`` with sshfs: a network filesystem, as an NFS share would be. ``server_io()`` is
    what the servers read and wrote (their /proc/<pid>/io rchar and wchar), the server's side of
    every byte the clients moved."""

    def __init__(self, export: Path, mount: Path):
        self.export, self.mount = export, mount
        self.socat: subprocess.Popen | None = None

    def __enter__(self) -> "SftpShare":
        missing = [t for t in ("socat", "sshfs") if shutil.which(t) is None]
        if missing or not SFTP_SERVER.exists():
            raise VolumeUnavailable(f"needs socat, sshfs and {SFTP_SERVER} (ci/setup.sh installs them)")
        self.export.mkdir(parents=True, exist_ok=True)
        self.mount.mkdir(parents=True, exist_ok=True)
        port = _free_port()
        self.socat = subprocess.Popen(
            ["socat", f"TCP-LISTEN:{port},bind=127.0.0.1,fork,reuseaddr", f"EXEC:{SFTP_SERVER}"],
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while True:  # the listener is up when a connection is accepted
            try:
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    self._stop()
                    raise VolumeUnavailable(f"socat did not listen on {port}") from None
                time.sleep(0.1)
        done = subprocess.run(
            ["sshfs", "-o", f"directport={port},allow_other", f"127.0.0.1:{self.export}", str(self.mount)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            self._stop()
            raise VolumeUnavailable(f"sshfs: {done.stderr.strip()}")
        return self

    def servers(self) -> list[int]:
        """The sftp-server processes serving this share (the socat's children's)."""
        group = os.getpgid(self.socat.pid)
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if os.getpgid(int(entry.name)) == group and (entry / "exe").resolve() == SFTP_SERVER.resolve():
                    pids.append(int(entry.name))
            except (OSError, ProcessLookupError):
                continue
        return pids

    def server_io(self) -> dict[str, int]:
        """rchar and wchar summed over the share's sftp-servers."""
        total = {"rchar": 0, "wchar": 0}
        for pid in self.servers():
            for line in Path(f"/proc/{pid}/io").read_text().splitlines():
                key, _, value = line.partition(":")
                if key in total:
                    total[key] += int(value)
        return total

    def _stop(self) -> None:
        if self.socat is not None:
            try:
                os.killpg(self.socat.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            self.socat.wait(timeout=30)

    def __exit__(self, *exc) -> None:
        if subprocess.run(["umount", str(self.mount)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(self.mount)], capture_output=True)
        self._stop()
