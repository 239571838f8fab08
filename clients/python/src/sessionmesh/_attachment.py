"""The machinery behind an attachment: its own connection, its events, and re-attaching.

Each attachment has a connection of its own, because the daemon ends attachments only when
their connection closes: closing the attachment closes that connection, and an app that stops
reading one attachment stalls only that connection. When the daemon goes away, the attachment
reports `disconnected`, tries again with backoff (20 ms doubling to 1 s) until it is closed,
attaches again with the same features and reports `reattached`; the daemon then hands every
unacknowledged inbox item again (flagged `redelivery`) and everything that arrived meanwhile.
"""
from __future__ import annotations

import concurrent.futures
import threading
import time
from concurrent.futures import Future
from typing import Any, Dict, List, Optional

from . import _frames as F
from ._connection import Connection, log
from ._events import Acker, decode_event
from .errors import (BadRequestError, ClientTimeoutError, ConnectionLostError, DaemonError, DaemonUnreachableError, FrameError, MeshError,
                     ProtocolViolationError, ShuttingDownError, TooManyConnectionsError)
from .models import AttachedPeer, Event

#: Errors after which attaching again is pointless (the request itself is wrong).
_FATAL = (BadRequestError, FrameError, ProtocolViolationError)


class Sink:
    """Where an attachment's events go; `put` may block to apply back-pressure."""

    def put(self, item: Any, stop: threading.Event) -> None:
        raise NotImplementedError

    def finish(self, error: Optional[MeshError]) -> None:
        raise NotImplementedError


class End:
    """Marks the end of an attachment's events, with the error that ended it (None: closed)."""

    def __init__(self, error: Optional[MeshError]) -> None:
        self.error = error


class AttachmentCore:
    def __init__(self, path: str, features: List[str], session: Optional[str], app: Optional[str], sink: Sink,
                 acker: Optional[Acker], attach_timeout: float = 10.0) -> None:
        self.path = path
        self.features = list(features)
        self.session = session
        self.app = app
        self.sink = sink
        self.acker = acker
        self.attach_timeout = attach_timeout
        self.attachment_id = 0
        self.local_device_id = ""
        self.peers: List[AttachedPeer] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._conn: Optional[Connection] = None
        self._rid = 0
        # The connection events are taken from, and whether its attach succeeded: a connection
        # that fails before that is retried by whoever started it, not by `_on_close`.
        self._current: object = None
        self._established = False
        self._reconnector: Optional[threading.Thread] = None
        self.reattachments = 0

    def _body(self) -> bytes:
        body: Dict[str, Any] = {"features": self.features}
        if self.session is not None:
            body["sessionID"] = self.session
        if self.app is not None:
            body["app"] = self.app
        return F.json_body(body)

    def start(self) -> "Future[F.Frame]":
        """Opens a connection and sends `attach`; the future resolves with the reply frame."""
        token = object()
        conn = Connection(self.path, on_event=lambda frame: self._on_event(token, frame),
                          on_close=lambda error: self._on_close(token, error))
        with self._lock:
            if self._stop.is_set():
                conn.close()
                raise ConnectionLostError("the attachment was closed")
            previous, self._conn = self._conn, conn
            self._current, self._established = token, False
            self._rid = conn.next_request_id()
            rid = self._rid
        if previous is not None:
            previous.close()
        return conn.submit(F.OPS["attach"], self._body(), False, request_id=rid,
                           on_done=lambda future: self._on_reply(token, future))

    def open(self, timeout: float, patience: float) -> None:
        """Attaches for the first time, blocking: waits up to `patience` seconds for a daemon that
        is restarting (as other calls do) and `timeout` seconds for the reply."""
        give_up = time.monotonic() + patience
        delay = 0.02
        while True:
            try:
                self.start().result(timeout)
                return
            except concurrent.futures.TimeoutError:
                self.close()
                raise ClientTimeoutError("attach: no answer from meshd within the timeout", operation="attach") from None
            except (DaemonUnreachableError, ConnectionLostError, ShuttingDownError) as error:
                if self._stop.is_set() or time.monotonic() + delay > give_up:
                    self.close()
                    raise error from None
            except BaseException:
                self.close()
                raise
            self._stop.wait(delay)
            delay = min(delay * 2, 0.5)

    def _on_reply(self, token: object, future: "Future[F.Frame]") -> None:
        # Runs on the reader thread before it reads the next frame, so whatever this puts in the
        # sink comes before the events that follow the reply.
        if token is not self._current or future.cancelled() or future.exception() is not None:
            return
        try:
            body = future.result().json()
        except MeshError:
            return
        self.attachment_id = int(body.get("attachmentID", 0))
        self.local_device_id = str(body.get("localDeviceID", ""))
        self.peers = [AttachedPeer(str(p.get("deviceID", "")), str(p.get("name", "")), bool(p.get("reachable", False)))
                      for p in body.get("peers", []) if isinstance(p, dict)]
        self._established = True
        if self.reattachments:
            log.info("attachment re-attached to meshd (attachment %d)", self.attachment_id)
            self.sink.put(Event(kind="reattached", raw=body), self._stop)

    def _on_event(self, token: object, frame: F.Frame) -> None:
        if token is not self._current or frame.request_id not in (self._rid, 0):
            return
        self.sink.put(decode_event(frame, self.acker), self._stop)

    def _on_close(self, token: object, error: Optional[MeshError]) -> None:
        if self._stop.is_set() or token is not self._current:
            return
        if not self._established:
            if isinstance(error, _FATAL):
                self._finish(error)
            return  # its attach fails with this error too; the caller of start() retries
        if isinstance(error, _FATAL):
            self._finish(error)
            return
        reason = error.code if error is not None else "connection-closed"
        log.info("attachment lost meshd (%s); re-attaching", reason)
        self.sink.put(Event(kind="disconnected", reason=reason), self._stop)
        thread = threading.Thread(target=self._reattach_loop, name="sessionmesh-reattach", daemon=True)
        self._reconnector = thread
        thread.start()

    def _reattach_loop(self) -> None:
        delay = 0.02
        while not self._stop.wait(delay):
            delay = min(delay * 2, 1.0)
            try:
                self.reattachments += 1
                future = self.start()
                future.result(self.attach_timeout)
                return  # attached; a later close calls _on_close again
            except (DaemonUnreachableError, ConnectionLostError, ShuttingDownError, TooManyConnectionsError):
                self.reattachments -= 1
                continue
            except DaemonError as error:
                self._finish(error)
                return
            except MeshError as error:
                self._finish(error)
                return
            except Exception:  # a timeout of the attach reply: drop this connection and try again
                self.reattachments -= 1
                with self._lock:
                    conn = self._conn
                if conn is not None:
                    conn.close()
                continue

    def _finish(self, error: Optional[MeshError]) -> None:
        self._stop.set()
        self.sink.finish(error)

    def close(self) -> None:
        """Ends the attachment: closes its connection and stops re-attaching."""
        self._stop.set()
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
        self.sink.finish(None)
