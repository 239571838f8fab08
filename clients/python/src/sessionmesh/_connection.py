"""One socket connection to meshd with a reader thread, and `Link`, a connection that comes back.

A `Connection` writes request frames under a lock and matches answers to requests by request
id with `concurrent.futures.Future`s, so the blocking API waits on `Future.result` and the
asyncio API awaits `asyncio.wrap_future` of the same futures without a thread per call.
Event frames go to the `on_event` callback (the reader thread calls it; it may block to apply
back-pressure, which stops reading this socket only).
"""
from __future__ import annotations

import itertools
import logging
import socket
import threading
import time
from concurrent.futures import Future
from typing import Callable, Dict, Optional, Tuple

from . import _frames as F
from .errors import (ClientTimeoutError, ConnectionLostError, DaemonError, DaemonUnreachableError, MeshError,
                     ProtocolViolationError, error_for_code)

#: The package's logger (`logging.getLogger("sessionmesh")`): reconnects and retries at INFO,
#: each failed reconnect attempt at DEBUG. Nothing is logged unless the app configures logging.
log = logging.getLogger("sessionmesh")

EventHandler = Callable[[F.Frame], None]
CloseHandler = Callable[[Optional[MeshError]], None]


def open_socket(path: str) -> socket.socket:
    """A connected stream socket to `path`; raises `DaemonUnreachableError` naming the path."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError as error:
        sock.close()
        reason = error.strerror or str(error)
        hint = "is meshd running?" if isinstance(error, (FileNotFoundError, ConnectionRefusedError)) else \
            "may this user use it? (socket_mode, the sessionmesh group)" if isinstance(error, PermissionError) else ""
        raise DaemonUnreachableError(f"cannot reach meshd at {path}: {reason}" + (f" ({hint})" if hint else "")) from None
    return sock


class Connection:
    """One connected socket. Closed for good once the daemon or `close()` ends it."""

    def __init__(self, path: str, on_event: Optional[EventHandler] = None, on_close: Optional[CloseHandler] = None) -> None:
        self.path = path
        self._sock = open_socket(path)
        self._on_event = on_event
        self._on_close = on_close
        self._ids = itertools.count(1)
        self._pending: Dict[int, Tuple[int, "Future[F.Frame]"]] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._closed = False
        self._close_error: Optional[MeshError] = None
        self._reader = threading.Thread(target=self._read_loop, name=f"sessionmesh-reader {path}", daemon=True)
        self._reader.start()

    @property
    def closed(self) -> bool:
        return self._closed

    def next_request_id(self) -> int:
        return next(self._ids) & 0xFFFFFFFF or next(self._ids)

    def submit(self, op: int, body: bytes, binary: bool = False, request_id: Optional[int] = None,
               on_done: Optional[Callable[["Future[F.Frame]"], None]] = None) -> "Future[F.Frame]":
        """Sends one request; the future resolves with its reply frame or fails with a `MeshError`.

        `on_done` is registered before the request is sent, so it runs on the reader thread
        before that thread reads the frame after the reply.
        """
        future: "Future[F.Frame]" = Future()
        if on_done is not None:
            future.add_done_callback(on_done)
        rid = request_id if request_id is not None else self.next_request_id()
        frame = F.encode_frame(op, rid, body, binary)
        with self._lock:
            if self._closed:
                future.set_exception(self._lost(op))
                return future
            self._pending[rid] = (op, future)
        try:
            with self._write_lock:
                self._sock.sendall(frame)
        except OSError:
            with self._lock:
                self._pending.pop(rid, None)
            if not future.done():
                future.set_exception(self._lost(op))
            self._shutdown()
        return future

    def _lost(self, op: Optional[int] = None) -> MeshError:
        name = F.OP_NAMES.get(op or 0)
        base = self._close_error
        if isinstance(base, DaemonError):
            return type(base)(base.message, code=base.code, operation=name)
        return ConnectionLostError(f"the connection to meshd at {self.path} closed before the reply", operation=name)

    def close(self) -> None:
        """Closes the socket; pending requests fail with `ConnectionLostError`. The close handler is not called."""
        self._on_close = None
        self._shutdown()

    def _shutdown(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # --- reader thread ---

    def _recv_exact(self, count: int, buffer: bytearray) -> Optional[bytes]:
        while len(buffer) < count:
            try:
                chunk = self._sock.recv(max(65536, count - len(buffer)))
            except OSError:
                return None
            if not chunk:
                return None
            buffer += chunk
        data = bytes(buffer[:count])
        del buffer[:count]
        return data

    def _read_loop(self) -> None:
        buffer = bytearray()
        error: Optional[MeshError] = None
        try:
            while True:
                header = self._recv_exact(F.HEADER.size, buffer)
                if header is None:
                    break
                magic, version, kind, op, flags, rid, length = F.split_header(header)
                if magic != F.MAGIC or version != F.VERSION or length > F.MAX_BODY:
                    error = ProtocolViolationError(f"meshd at {self.path} sent a frame that is not a local API frame")
                    break
                body = self._recv_exact(length, buffer)
                if body is None:
                    break
                frame = F.Frame(kind, op, flags, rid, body)
                if kind == F.KIND_EVENT:
                    if self._on_event is not None:
                        self._on_event(frame)
                    continue
                if kind == F.KIND_ERROR:
                    exc = self._error(frame)
                    with self._lock:
                        entry = self._pending.pop(rid, None) if rid != 0 else None
                    if entry is not None and not entry[1].done():
                        entry[1].set_exception(exc)
                    if rid == 0 or exc.closes_connection:
                        error = exc
                    continue
                with self._lock:
                    entry = self._pending.pop(rid, None)
                if entry is not None and not entry[1].done():
                    entry[1].set_result(frame)
        except MeshError as failure:  # an event that does not decode ends this connection
            error = failure
        except BaseException as unexpected:  # a handler's bug must not leave callers waiting forever
            error = ProtocolViolationError(f"the event handler failed: {unexpected!r}")
        finally:
            with self._lock:
                self._closed = True
                self._close_error = error
                pending, self._pending = self._pending, {}
            for op, future in pending.values():
                if not future.done():
                    future.set_exception(self._lost(op))
            try:
                self._sock.close()
            except OSError:
                pass
            handler = self._on_close
            if handler is not None:
                handler(error)

    @staticmethod
    def _error(frame: F.Frame) -> DaemonError:
        try:
            body = F.Frame(F.KIND_REPLY, frame.op, 0, frame.request_id, frame.body).json()
            code, message = str(body.get("code", "unknown")), str(body.get("message", ""))
        except MeshError:
            code, message = "unknown", "the daemon sent an unreadable error body"
        return error_for_code(code, message, F.OP_NAMES.get(frame.op))


class Link:
    """The client's request connection: opened on demand, opened again after the daemon restarts.

    A call made while the daemon is away waits up to `reconnect_timeout` seconds for it (bounded
    by the call's own timeout). A request whose connection closed before its reply is sent again
    on the next connection only when `retry` says it is safe (reads, and writes the daemon
    deduplicates: sends keep their event ID, snapshots and anchors their revision).
    """

    def __init__(self, path: str, reconnect_timeout: float) -> None:
        self.path = path
        self.reconnect_timeout = reconnect_timeout
        self._conn: Optional[Connection] = None
        self._lock = threading.Lock()
        self._closed = False
        self._wake = threading.Event()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conn, self._conn = self._conn, None
        self._wake.set()
        if conn is not None:
            conn.close()

    def connection(self, deadline: Optional[float], patience: Optional[float] = None) -> Connection:
        """The live connection, reconnecting when the old one closed.

        Tries again with backoff (20 ms doubling to 0.5 s) for `patience` seconds (default
        `reconnect_timeout`), never past `deadline`; then raises `DaemonUnreachableError`.
        """
        give_up = time.monotonic() + (self.reconnect_timeout if patience is None else patience)
        if deadline is not None:
            give_up = min(give_up, deadline)
        delay = 0.02
        attempts = 0
        while True:
            with self._lock:
                if self._closed:
                    raise ConnectionLostError("the client was closed")
                if self._conn is not None and not self._conn.closed:
                    return self._conn
                again = self._conn is not None
                try:
                    self._conn = Connection(self.path)
                    if again:
                        log.info("reconnected to meshd at %s after %d failed attempt(s)", self.path, attempts)
                    return self._conn
                except DaemonUnreachableError as error:
                    last = error
                    attempts += 1
                    log.debug("meshd at %s not reachable (attempt %d): %s", self.path, attempts, error.message)
            if time.monotonic() + delay > give_up:
                if again:
                    log.warning("giving up reconnecting to meshd at %s after %d attempt(s)", self.path, attempts)
                raise last
            self._wake.wait(delay)
            delay = min(delay * 2, 0.5)

    def submit(self, op: int, body: bytes, binary: bool, deadline: Optional[float]) -> "Future[F.Frame]":
        return self.connection(deadline).submit(op, body, binary)

    def pause(self, attempt: int) -> None:
        """Waits before attempt `attempt + 1` (cut short by `close`)."""
        self._wake.wait(backoff(attempt))


def backoff(attempt: int) -> float:
    """Seconds to wait after the `attempt`-th try: 20 ms doubling, at most 0.5 s."""
    return float(min(0.02 * 2 ** min(attempt, 10), 0.5))


def remaining(deadline: Optional[float]) -> Optional[float]:
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise ClientTimeoutError("the call's timeout passed before meshd answered")
    return left


def live(link: Link) -> Optional[Connection]:
    """The link's connection when it is open (no reconnecting, so no blocking)."""
    conn = link._conn
    return conn if conn is not None and not conn.closed else None
