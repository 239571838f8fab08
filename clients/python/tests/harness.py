"""Real meshd daemons for the tests: two on loopback, paired by code through the client.

Binaries: $MESHD (default: the repository's .build/debug/meshd). Each daemon gets a temporary
state folder and socket, a free loopback port, the other as a static peer and no mDNS; it is
killed by PID in cleanup, also when a test fails. Every wait has a deadline.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest
from typing import Callable, List, Optional, TypeVar

import sessionmesh

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
MESHD = os.environ.get("MESHD", os.path.join(REPO, ".build", "debug", "meshd"))
MESHCTL = os.environ.get("MESHCTL", os.path.join(os.path.dirname(MESHD), "meshctl"))
#: Scales every deadline (a loaded machine may need more; failures print what they waited for).
PATIENCE = float(os.environ.get("MESH_TEST_PATIENCE", "1"))

T = TypeVar("T")


def free_port() -> int:
    """A loopback port free for both TCP and UDP (meshd listens on both)."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
            tcp.bind(("127.0.0.1", 0))
            port = tcp.getsockname()[1]
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                try:
                    udp.bind(("127.0.0.1", port))
                except OSError:
                    continue
            return port
    raise RuntimeError("no free loopback port")


def wait_until(what: str, check: Callable[[], Optional[T]], timeout: float = 10.0, interval: float = 0.02) -> T:
    """Polls `check` until it returns something truthy; fails the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout * PATIENCE
    last_error: Optional[BaseException] = None
    while True:
        try:
            value = check()
            if value:
                return value
        except (sessionmesh.MeshError, OSError) as error:
            last_error = error
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout * PATIENCE:.1f} s waiting for {what}"
                                 + (f" (last error: {last_error})" if last_error else ""))
        time.sleep(interval)


class Daemon:
    """One meshd process."""

    def __init__(self, root: str, name: str, port: int, peer_port: Optional[int]) -> None:
        self.name, self.port, self.peer_port = name, port, peer_port
        self.state_dir = os.path.join(root, name)
        self.socket = os.path.join(root, f"{name}.sock")
        self.log_path = os.path.join(root, f"{name}.log")
        self.process: Optional[subprocess.Popen] = None

    def start(self) -> None:
        args = [MESHD, "--user", "--name", self.name, "--state-dir", self.state_dir, "--socket", self.socket,
                "--listen", f"127.0.0.1:{self.port}", "--no-mdns", "--log-level", "info"]
        if self.peer_port is not None:
            args += ["--peer", f"127.0.0.1:{self.peer_port}"]
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(args, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()

        def ready() -> bool:
            if self.process is not None and self.process.poll() is not None:
                raise AssertionError(f"meshd {self.name} exited with {self.process.returncode}; log:\n{self.log()}")
            if not os.path.exists(self.socket):
                return False
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                probe.connect(self.socket)
            return True

        wait_until(f"meshd {self.name} to serve {self.socket}", ready, timeout=20)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process = None

    def log(self) -> str:
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as handle:
                return handle.read()[-4000:]
        except OSError:
            return "(no log)"


class MeshTestCase(unittest.TestCase):
    """Starts daemons `alpha` and `beta` (each the other's static peer) in a temp dir per test.

    `pair()` pairs them by code through the client and waits for an active channel.
    """

    def setUp(self) -> None:
        if not os.access(MESHD, os.X_OK):
            self.fail(f"no meshd at {MESHD}: build it first (swift build --product meshd) or set MESHD")
        self.root = tempfile.mkdtemp(prefix="smpy-")
        self.addCleanup(shutil.rmtree, self.root, True)
        port_a, port_b = free_port(), free_port()
        self.alpha = Daemon(self.root, "alpha", port_a, port_b)
        self.beta = Daemon(self.root, "beta", port_b, port_a)
        self.clients: List[sessionmesh.Client] = []
        self.addCleanup(self._stop)
        self.alpha.start()
        self.beta.start()

    def _stop(self) -> None:
        for client in self.clients:
            client.close()
        for daemon in (self.alpha, self.beta):
            failed = self._outcome_failed()
            if failed:
                print(f"\n--- meshd {daemon.name} log (tail) ---\n{daemon.log()}")
            daemon.kill(signal.SIGTERM)

    def _outcome_failed(self) -> bool:
        outcome = getattr(self, "_outcome", None)
        # Python 3.9 and 3.10 collect a test's errors on the outcome, later versions on the result.
        if any(exc_info is not None for _, exc_info in getattr(outcome, "errors", [])):
            return True
        result = getattr(outcome, "result", None)
        errors = list(getattr(result, "errors", [])) + list(getattr(result, "failures", []))
        return any(test is self for test, _ in errors)

    def client(self, daemon: Daemon, **options) -> sessionmesh.Client:
        client = sessionmesh.connect(daemon.socket, **options)
        self.clients.append(client)
        return client

    def pair(self) -> None:
        """Pairs beta with alpha by code and waits until each sees the other active."""
        a, b = self.client(self.alpha), self.client(self.beta)
        code = a.create_pairing_code(valid_for=120)
        import threading
        waited: List[sessionmesh.PairedDevice] = []
        waiter = threading.Thread(target=lambda: waited.append(a.wait_for_pairing(code.code, timeout=30)))
        waiter.start()
        joined = b.join_pairing(code.code, address=f"127.0.0.1:{self.alpha.port}", timeout=30)
        waiter.join(35)
        self.assertEqual(len(waited), 1, "alpha's wait_for_pairing did not return")
        self.assertEqual(waited[0].verification, joined.verification)
        self.alpha_id, self.beta_id = b.peers()[0].device_id, a.peers()[0].device_id
        self.assertEqual(joined.device_id, self.alpha_id)
        self.assertEqual(waited[0].device_id, self.beta_id)
        wait_until("both channels active",
                   lambda: all(p.active for p in a.peers()) and all(p.active for p in b.peers()), timeout=20)
