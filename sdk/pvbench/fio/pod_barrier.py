"""The start barrier between the pods of a multi-client cell: one small TCP server, one line protocol.

On Argo, a multi-client cell runs its N clients as N pods (each with its own volume). Each pod's
fio waits at its own file barrier (pvbench.fio.barrier) after laying out its files; what
releases the pods together is this barrier, served by the cell's ``barrier`` step (an Argo
daemon step: Argo hands its pod IP to the client steps, so no pod needs Kubernetes rights).

The protocol, one UTF-8 line per message:

    client -> server   HELLO <client>     at the client pod's start, before fio lays out its files
    client -> server   READY <client>     every fio job of that pod waits at its local barrier
    server -> clients  GO <unix ns>       once all N clients said READY: each releases its fio at once
    server -> clients  ABORT <why>        a client left before GO, or not all were ready in time

Connecting at start, not only when ready, is what makes a failure fast: a client pod that dies
while laying out its files closes its connection, and the others are told at once instead of
waiting out the deadline. A connection that never says HELLO (the kubelet's readiness probe)
is ignored. The server's work ends with GO or ABORT. After ABORT it exits 1; after GO it stays
up (``linger``) until it is stopped, then exits 0: Argo counts a daemon step that ends by itself as
failed, and stops it (SIGTERM, phase Succeeded) once the cell's other steps are done.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import time
from typing import Callable

from pvbench.fio.runner import FioError

DEFAULT_PORT = 7077


def parse_address(address: str) -> tuple[str, int]:
    """``host:port`` or ``host`` (DEFAULT_PORT); brackets around an IPv6 host are allowed."""
    host, sep, port = address.rpartition(":")
    if not sep or "]" in port or (host.count(":") and not host.startswith("[")):
        host, port = address, str(DEFAULT_PORT)
    host = host.strip("[]")
    if not host or not port.isdigit():
        raise ValueError(f"barrier address {address!r} is not host:port")
    return host, int(port)


class BarrierServer:
    """Waits for N clients to be READY, then sends GO to every one (``run`` returns 0), or ABORT (1)."""

    def __init__(self, clients: int, timeout_s: float, log: Callable[[str], None] = print):
        if clients < 1:
            raise ValueError("a barrier needs at least one client")
        self.count = clients
        self.timeout_s = timeout_s
        self.log = log
        self.writers: dict[int, asyncio.StreamWriter] = {}
        self.ready: set[int] = set()
        self.outcome: str | None = None  # "GO …" or "ABORT …"
        self._decided: asyncio.Event | None = None

    def _decide(self, line: str) -> None:
        if self.outcome is not None:
            return
        self.outcome = line
        for writer in self.writers.values():
            try:
                writer.write((line + "\n").encode())
            except (ConnectionError, RuntimeError):
                pass  # that client is gone; it learns nothing more from us
        self.log(line)
        assert self._decided is not None
        self._decided.set()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        number: int | None = None
        try:
            while self.outcome is None:
                line = await reader.readline()
                if not line:
                    break
                word, _, arg = line.decode(errors="replace").strip().partition(" ")
                if word == "HELLO":
                    try:
                        number = int(arg)
                    except ValueError:
                        number = None
                    if number is None or not 1 <= number <= self.count or number in self.writers:
                        self._decide(f"ABORT a client said {line.decode(errors='replace').strip()!r}: "
                                     f"not a client of 1..{self.count}, or said twice")  # fmt: skip
                        break
                    self.writers[number] = writer
                    self.log(f"client {number} of {self.count} connected")
                elif word == "READY" and number is not None:
                    self.ready.add(number)
                    self.log(f"client {number} of {self.count} ready ({len(self.ready)}/{self.count})")
                    if len(self.ready) == self.count:
                        self._decide(f"GO {time.time_ns()}")
        except ConnectionError:
            pass
        if self.outcome is None and number is not None:
            self._decide(
                f"ABORT client {number} of {self.count} left before the start "
                "(its pod failed or was stopped while laying out its files)"
            )
        if self.outcome is not None:
            try:
                await writer.drain()
            except ConnectionError:
                pass
        writer.close()

    async def serve(
        self, host: str = "0.0.0.0", port: int = DEFAULT_PORT, on_listening=None, linger: bool = False
    ) -> int:
        self._decided = asyncio.Event()
        server = await asyncio.start_server(self._client, host, port, reuse_address=True)
        if on_listening is not None:
            on_listening(server.sockets[0].getsockname()[1])
        self.log(f"barrier for {self.count} clients listening on port {server.sockets[0].getsockname()[1]}")
        try:
            await asyncio.wait_for(self._decided.wait(), self.timeout_s)
        except asyncio.TimeoutError:
            missing = [str(n) for n in range(1, self.count + 1) if n not in self.ready]
            self._decide(
                f"ABORT only {len(self.ready)} of {self.count} clients were ready after {self.timeout_s:.0f} s "
                f"(not ready: {', '.join(missing)}): their volumes or pods did not come up in time"
            )
        await asyncio.gather(*(w.drain() for w in self.writers.values()), return_exceptions=True)
        await asyncio.sleep(0.2)  # let the lines reach the clients before the sockets close
        server.close()
        for writer in self.writers.values():
            writer.close()
        went = bool(self.outcome and self.outcome.startswith("GO"))
        if went and linger:
            stopped = asyncio.Event()
            for signum in (signal.SIGTERM, signal.SIGINT):
                asyncio.get_running_loop().add_signal_handler(signum, stopped.set)
            await stopped.wait()
        return 0 if went else 1

    def run(self, host: str = "0.0.0.0", port: int = DEFAULT_PORT, linger: bool = False) -> int:
        return asyncio.run(self.serve(host, port, linger=linger))


class BarrierClient:
    """One client pod's side: ``connect`` at start, ``release`` (run_fio_clients' hook) when its fio is ready."""

    def __init__(self, address: str, client: int, timeout_s: float):
        self.host, self.port = parse_address(address)
        self.client = client
        self.deadline = time.monotonic() + timeout_s
        self.sock: socket.socket | None = None
        self.go_ns: int | None = None

    def _remaining(self) -> float:
        return max(0.1, self.deadline - time.monotonic())

    def connect(self) -> "BarrierClient":
        """Connect (retrying while the server is not up yet) and say HELLO."""
        last: OSError | None = None
        while time.monotonic() < self.deadline:
            try:
                self.sock = socket.create_connection((self.host, self.port), timeout=min(5.0, self._remaining()))
                break
            except OSError as exc:
                last = exc
                time.sleep(0.5)
        if self.sock is None:
            raise FioError(f"client {self.client}: cannot reach the start barrier at {self.host}:{self.port} ({last})")
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.sendall(f"HELLO {self.client}\n".encode())
        return self

    def release(self) -> None:
        """Say READY and block until GO (returns) or ABORT / a lost barrier (FioError)."""
        if self.sock is None:
            self.connect()
        assert self.sock is not None
        try:
            self.sock.sendall(f"READY {self.client}\n".encode())
            self.sock.settimeout(self._remaining())
            line = self.sock.makefile("r", encoding="utf-8").readline().strip()
        except (OSError, TimeoutError) as exc:
            raise FioError(f"client {self.client}: the start barrier did not answer ({exc})") from None
        word, _, arg = line.partition(" ")
        if word == "GO":
            self.go_ns = int(arg) if arg.isdigit() else None
            return
        if word == "ABORT":
            raise FioError(f"client {self.client}: the start barrier gave up: {arg}")
        raise FioError(f"client {self.client}: the start barrier closed without a start ({line or 'no answer'})")

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def __enter__(self) -> "BarrierClient":
        return self.connect()

    def __exit__(self, *exc) -> None:
        self.close()
