"""A storage driver's node plugin, as far as the upgrade test needs one: it enforces its class's
per-volume write QoS on the node, in the kernel.

    python3 qos_driver.py MEDIUM WRITE_IOPS [CGROUPS]

MEDIUM is the class's filesystem as the pod sees it (a hostPath); its block device (a loop
device on the CI node) is the one limited. WRITE_IOPS is the driver's limit for that device (0:
none). CGROUPS is the node's blkio hierarchy of pods (default /host/blkio/kubepods).

Like drivers that throttle volumes with blkio cgroups (Alibaba Cloud's local-disk CSI driver
does), it writes ``MAJOR:MINOR LIMIT`` into blkio.throttle.write_iops_device of every pod's
cgroups, and of new ones as pods start (it looks every 0.1 s; a cell's fio measures only after
its ramp). cgroup v1 throttles are not inherited, hence every cgroup. A version starting sets its
own limit everywhere (0 lifts an earlier version's); a restart or a rollout leaves the volumes'
limits as they are, as a real driver's node plugin does. Only I/O to that device is limited:
the other classes, and reads, keep their speed. Stdlib only: it runs in the runner image.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

THROTTLE = "blkio.throttle.write_iops_device"


def device_of(medium: str) -> str:
    st = os.stat(medium)
    return f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"


def cgroups(root: Path) -> list[Path]:
    return [Path(d) / THROTTLE for d, _, files in os.walk(root) if THROTTLE in files]


def limit(path: Path, device: str, iops: int) -> bool:
    """Set (or, 0, lift) the device's limit in one cgroup; False when the cgroup is gone."""
    try:
        path.write_text(f"{device} {iops}\n")
        return True
    except OSError:  # the pod's cgroup was removed between the walk and the write
        return False


def main() -> None:
    medium, iops = sys.argv[1], int(sys.argv[2])
    root = Path(sys.argv[3] if len(sys.argv) > 3 else "/host/blkio/kubepods")
    device = device_of(medium)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"qos-driver: write IOPS of {medium} (device {device}): {iops or 'unlimited'}", flush=True)
    done = {path for path in cgroups(root) if limit(path, device, iops)}
    print(f"qos-driver: set in {len(done)} cgroups; setting it in each new one", flush=True)
    while True:
        now = set(cgroups(root))
        done = (done & now) | {path for path in now - done if limit(path, device, iops)}
        time.sleep(0.1)


if __name__ == "__main__":
    main()
