"""The blocking client: `sessionmesh.connect()` returns a `Client`."""
from __future__ import annotations

import concurrent.futures
import queue as _queue
import threading
import time
import uuid
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Union, cast

from . import _operations as ops
from ._attachment import AttachmentCore, End, Sink
from ._connection import Link, log
from . import _frames as F
from ._operations import Call, SessionLike, T
from .encoding import Envelope, Snapshot
from .errors import ClientTimeoutError, ConnectionLostError, DaemonError, DaemonUnreachableError, MeshError
from .models import (AttachedPeer, DeviceRef, SendMode, Event, Hello, LatestSnapshot, PairedDevice, PairingCode, Peer, PingResult,
                     PublishResult, QueueItem, SendResult, Session, SessionCloseResult, Status, TimerAnchor)
from .socketpath import SYSTEM_SOCKET, default_socket_path, user_socket_path

__all__ = ["Client", "Attachment", "connect", "DEFAULT_EVENT_BUFFER"]

#: How many events an attachment holds for the app before the client stops reading its socket.
DEFAULT_EVENT_BUFFER = 8192


def connect(path: Optional[str] = None, *, app: Optional[str] = None, session: SessionLike = None,
            reconnect_timeout: float = 30.0) -> "Client":
    """Connects to meshd and returns a blocking `Client`.

    `path` defaults to the socket `meshctl` uses: `$XDG_RUNTIME_DIR/sessionmesh/meshd.sock` (or
    the user daemon's state folder) if it exists, else `/run/sessionmesh/meshd.sock`. Raises
    `DaemonUnreachableError` at once when no daemon answers there. `session` is the default
    session of every call (default: a fixed, name-based session per feature);
    `reconnect_timeout` is how long a call waits for a restarting daemon to come back.
    """
    return Client(path, app=app, session=session, reconnect_timeout=reconnect_timeout)


class Client:
    """A connection to the local meshd: control operations, sending, snapshots, attachments.

    Thread-safe: calls from several threads share one socket and run concurrently on the
    daemon. After the daemon restarts, the next call reconnects by itself (waiting up to
    `reconnect_timeout` seconds); attachments re-attach by themselves. Use as a context manager
    or call `close()`.
    """

    def __init__(self, path: Optional[str] = None, *, app: Optional[str] = None, session: SessionLike = None,
                 reconnect_timeout: float = 30.0) -> None:
        self.path: str = path if path is not None else default_socket_path()
        self._link = Link(self.path, reconnect_timeout)
        self._state = ops.ClientState(session, app)
        self._attachments: List[Attachment] = []
        self._lock = threading.Lock()
        try:
            self._link.connection(None, patience=0)
        except DaemonUnreachableError as error:
            raise unreachable_error(error, path) from None

    def _run(self, op: "ops.Op[T]", timeout: Optional[float] = None) -> T:
        return run_blocking(self._link, op, timeout)

    def close(self) -> None:
        """Closes the connection and every attachment made from this client."""
        with self._lock:
            attachments, self._attachments = self._attachments, []
        for attachment in attachments:
            attachment.close()
        self._link.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def device_id(self) -> str:
        """This device's ID (asked from the daemon once)."""
        if self._state.device_id is None:
            self.status()
        return self._state.device_id or ""

    # --- control ---

    def hello(self) -> Hello:
        """Who serves the socket: daemon version, protocol version, operations, the uid it saw."""
        return self._run(ops.hello(self._state))

    def status(self) -> Status:
        """This device's ID, name, listen address, socket, uptime and counters."""
        return self._run(ops.status(self._state))

    def peers(self) -> List[Peer]:
        """Every paired device and member of the device set (`.device_id`, `.name`, `.active`, `.joined`, addresses, RTT, clock offset)."""
        return self._run(ops.peers())

    def create_pairing_code(self, valid_for: Optional[float] = None, replace: bool = False,
                            single: bool = False) -> PairingCode:
        """A new pairing code (replacing any live one), valid `valid_for` seconds (1-3600; default the daemon's).

        `replace=True` lets a device that is already paired pair again and replace its record;
        without it such a device is refused and `wait_for_pairing` raises `AlreadyPairedError`.
        `single=True` pairs the device with this one only (it does not join the device set).
        """
        return self._run(ops.create_pairing_code(valid_for, replace, single))

    def wait_for_pairing(self, code: str, timeout: Optional[float] = None) -> PairedDevice:
        """Waits until a device pairs with `code`; raises `PairingExpiredError`, `PairingCancelledError`, ...

        `timeout` (seconds) bounds the wait with `ClientTimeoutError`; the code stays live then.
        """
        return self._run(ops.wait_for_pairing(code), timeout)

    def join_pairing(self, code: str, address: Optional[str] = None, timeout: Optional[float] = None,
                     replace: bool = False, single: bool = False) -> PairedDevice:
        """Pairs with the device that created `code`, at `address` (`HOST:PORT`) or found over mDNS.

        `replace=True` replaces this daemon's existing record of that device (`AlreadyPairedError` without it).
        By default this device joins the other's device set; `single=True` pairs the two only.
        """
        return self._run(ops.join_pairing(code, address, replace, single), timeout)

    def cancel_pairing(self, code: str) -> None:
        """Cancels a live code; a `wait_for_pairing` on it ends with `PairingCancelledError`."""
        self._run(ops.cancel_pairing(code))

    def unpair(self, device_id: DeviceRef) -> None:
        """Forgets a paired device (full or short ID); raises `UnknownPeerError`."""
        self._run(ops.unpair(device_id))

    def ping(self, device_id: DeviceRef, count: Optional[int] = None) -> PingResult:
        """Round trips to a paired device over both paths (`count` 1-10000, default 10)."""
        return self._run(ops.ping(device_id, count))

    # --- data ---

    def send(self, feature: str, payload: bytes, mode: SendMode = "reliable", to: Optional[DeviceRef] = None, *,
             session: SessionLike = None, payload_type: str = "bytes", sequence: Optional[int] = None,
             event_id: Optional[uuid.UUID] = None, acknowledged_sequence: Optional[int] = None,
             monotonic_timestamp: Optional[float] = None, timeout: Optional[float] = None) -> SendResult:
        """Sends `payload` to `to` (a device ID, full or short) or, when None, to every paired device.

        `mode`: `"reliable"` (durably queued until the peer's daemon stores it; survives
        restarts), `"realtime"` (now if the peer's app is attached, else queued; late items are
        not dropped) or `"acknowledgement"`. The envelope's metadata (fresh event ID, this
        device as source, the session, an increasing sequence, the time) is filled in; pass
        `event_id` to make a resend deduplicate with an earlier send. Returns the outcome
        (`sent`, `queued` or `pending`) and how many devices it was for.
        """
        return self._run(ops.send(self._state, feature, payload, mode, to, session, payload_type, sequence, event_id,
                                  acknowledged_sequence, monotonic_timestamp), timeout)

    def send_envelope(self, envelope: Envelope, mode: SendMode = "reliable", to: Optional[DeviceRef] = None) -> SendResult:
        """Sends an envelope whose metadata the caller built (see `sessionmesh.encoding`)."""
        return self._run(ops.send_envelope(envelope, mode, to))

    def publish_snapshot(self, feature: str, state: bytes, *, to: Optional[DeviceRef] = None, session: SessionLike = None,
                         revision: Optional[int] = None, payload_type: str = "bytes",
                         reflected_sequences: Optional[Dict[str, int]] = None) -> PublishResult:
        """Publishes `state` as the feature's latest snapshot (the slot peers read with `latest_snapshot`).

        Without `revision` the client picks one above every earlier one (the current time in
        ms, or above what the slot holds), so the latest call wins. With `to` the snapshot goes
        to that device only, as the answer to its `snapshot_request`.
        """
        return self._run(ops.publish_snapshot(self._state, feature, state, to, session, revision, payload_type,
                                              reflected_sequences))

    def publish_snapshot_message(self, snapshot: Snapshot, to: Optional[DeviceRef] = None) -> PublishResult:
        """Publishes a snapshot whose metadata and revision the caller built."""
        return self._run(ops.publish_snapshot_message(snapshot, to))

    def latest_snapshot(self, feature: str, peer: Optional[DeviceRef] = None, session: SessionLike = None) -> Optional[LatestSnapshot]:
        """The last snapshot received from `peer` (any peer when None) for `feature`, or None.

        Of `session` if given, else the most recently received of any session. Works while the
        peer is off and across restarts (the daemon stores it).
        """
        return self._run(ops.latest_snapshot(feature, peer, session))

    def request_snapshot(self, feature: str, peer: Optional[DeviceRef] = None, session: SessionLike = None) -> None:
        """Asks `peer` (every active peer when None) for its snapshot; it arrives as a `snapshot` event."""
        self._run(ops.request_snapshot(self._state, feature, peer, session))

    def set_timer_anchor(self, feature: str, anchor: TimerAnchor, *, revision: Optional[int] = None,
                         session: SessionLike = None) -> bool:
        """Stores and forwards a shared timer's anchor; returns whether it was stored (latest revision wins)."""
        return self._run(ops.set_timer_anchor(self._state, feature, anchor, revision, session))

    def announce_session(self, feature: str, session: SessionLike = None, *, owner: Optional[str] = None,
                         status: str = "running") -> uuid.UUID:
        """Announces (or updates) a session to the paired devices; returns its UUID. `status` is free text but not `closed`."""
        return self._run(ops.announce_session(self._state, feature, session, owner, status))

    def close_session(self, feature: str, session: SessionLike = None, timeout: Optional[float] = None) -> SessionCloseResult:
        """Closes a session for good and returns once each active peer acknowledged it (or it is queued for them)."""
        return self._run(ops.close_session(self._state, feature, session), timeout)

    def sessions(self, feature: Optional[str] = None) -> List[Session]:
        """The session table, most recently updated first (only `feature`'s when given)."""
        return self._run(ops.sessions(feature))

    def set_watermark(self, feature: str, peer: DeviceRef, sequence: int, *, session: SessionLike = None) -> None:
        """Tells `peer` the highest sequence of its events in this session this app has processed."""
        self._run(ops.set_watermark(self._state, feature, peer, sequence, session))

    def ack(self, inbox_ids: Iterable[int]) -> int:
        """Acknowledges inbox items (ids from envelope events); returns how many were deleted."""
        return self._run(ops.ack(list(inbox_ids)))

    def queue(self) -> List[QueueItem]:
        """This daemon's outstanding reliable transfers, by peer then in order."""
        return self._run(ops.queue())

    def cancel_queued(self, item_id: int) -> None:
        """Drops one queued transfer; raises `NotFoundError` when it is not queued."""
        self._run(ops.cancel_queued(item_id))

    def attach(self, features: Union[str, Sequence[str]], *, session: SessionLike = None, app: Optional[str] = None,
               buffer: int = DEFAULT_EVENT_BUFFER, timeout: float = 10.0) -> "Attachment":
        """Attaches to 1-64 features and returns an `Attachment`: iterate it for events.

        Inbox items waiting for these features come first. The attachment has a connection of
        its own and re-attaches after a daemon restart; close it (or leave its `with` block) to
        detach. `session` and `app` are informational for the daemon's logs.
        """
        names = [features] if isinstance(features, str) else list(features)
        for name in names:
            ops.check_feature(name)
        sink = _QueueSink(buffer)
        core = AttachmentCore(self.path, names, str(ops.as_uuid(session)) if session is not None else None,
                              app or self._state.app, sink, self.ack)
        attachment = Attachment(core, sink, on_close=self._forget)
        core.open(timeout, self._link.reconnect_timeout)
        with self._lock:
            self._attachments.append(attachment)
        return attachment

    def _forget(self, attachment: "Attachment") -> None:
        with self._lock:
            if attachment in self._attachments:
                self._attachments.remove(attachment)


def unreachable_error(error: DaemonUnreachableError, given: Optional[str]) -> DaemonUnreachableError:
    """Without an explicit path, says both places looked at (as `meshctl` does)."""
    user = user_socket_path()
    if given is not None or user is None:
        return error
    return DaemonUnreachableError(f"cannot reach meshd: no daemon answers at the user daemon's socket {user} or the "
                                  f"system daemon's {SYSTEM_SOCKET} (is meshd running? connect(path) names another)")


def run_blocking(link: Link, op: "ops.Op[T]", timeout: Optional[float] = None) -> T:
    """Drives an operation's generator over `link`, blocking; errors are thrown into it."""
    deadline = time.monotonic() + timeout if timeout is not None else None
    step = ops.advance(op)
    while isinstance(step, Call):
        try:
            frame = _call(link, step, deadline)
        except MeshError as error:
            step = ops.advance(op, error=error)
            continue
        step = ops.advance(op, frame)
    return cast(T, step.value)


def _call(link: Link, call: Call, deadline: Optional[float]) -> F.Frame:
    attempt = 0
    while True:
        attempt += 1
        future = link.submit(call.code, call.body, call.binary, deadline)
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            return future.result(left)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise ClientTimeoutError(f"{call.op}: no answer from meshd within the timeout", operation=call.op) from None
        except MeshError as error:
            if not retry_worth(error, call, attempt, deadline):
                raise
            log.info("retrying %s after its connection closed (%s), attempt %d", call.op, error.code, attempt + 1)
        link.pause(attempt)


#: How often a request that is safe to repeat is sent again after its connection closed.
MAX_ATTEMPTS = 5


def retry_worth(error: MeshError, call: Call, attempt: int, deadline: Optional[float]) -> bool:
    """Whether to send `call` again on a new connection after `error`.

    Only requests safe to repeat, only when the connection closed under them (`shutting-down`
    means the daemon may be restarting), a bounded number of times, within the deadline.
    """
    lost = isinstance(error, ConnectionLostError) or (isinstance(error, DaemonError) and error.code == "shutting-down")
    in_time = deadline is None or time.monotonic() < deadline
    return lost and call.retry and attempt < MAX_ATTEMPTS and in_time


class _QueueSink(Sink):
    """Events for a blocking reader. `room` bounds what is held; the end marker always fits."""

    def __init__(self, size: int) -> None:
        self.queue: "_queue.Queue[Any]" = _queue.Queue()
        self.room = threading.Semaphore(max(1, size))
        self.ended = False
        self.closed = False

    def put(self, item: Any, stop: threading.Event) -> None:
        while not stop.is_set():
            if self.room.acquire(timeout=0.1):
                self.queue.put(item)
                return

    def finish(self, error: Optional[MeshError]) -> None:
        if not self.ended:
            self.ended = True
            self.closed = error is None
            self.queue.put(End(error))


class Attachment:
    """The events of an `attach`: iterate it (blocking), or call `next_event(timeout)`.

    Iteration ends when the attachment is closed; it raises the error that ended it otherwise
    (for instance `FeatureNotAllowedError` when re-attaching after a restart is refused).
    """

    def __init__(self, core: AttachmentCore, sink: _QueueSink,
                 on_close: Optional[Callable[["Attachment"], None]] = None) -> None:
        self._core = core
        self._sink = sink
        self._end: Optional[End] = None
        self._on_close = on_close

    @property
    def features(self) -> List[str]:
        return list(self._core.features)

    @property
    def attachment_id(self) -> int:
        """The daemon's ID of the current attachment (a new one after each re-attach)."""
        return self._core.attachment_id

    @property
    def local_device_id(self) -> str:
        return self._core.local_device_id

    @property
    def peers(self) -> List[AttachedPeer]:
        """The paired devices as of the last attach (`reachable`: channel active and the feature's app attached there)."""
        return list(self._core.peers)

    def next_event(self, timeout: Optional[float] = None) -> Event:
        """The next event; raises `ClientTimeoutError` after `timeout` seconds, `StopIteration` once closed."""
        if self._end is None and self._sink.closed:
            self._end = End(None)  # closed by the app: what it did not read is dropped
        if self._end is not None:
            return self._ended()
        try:
            item = self._sink.queue.get(timeout=timeout)
        except _queue.Empty:
            raise ClientTimeoutError(f"no event within {timeout} s", operation="attach") from None
        if isinstance(item, End):
            self._end = item
            return self._ended()
        self._sink.room.release()
        return cast(Event, item)

    def _ended(self) -> Event:
        assert self._end is not None
        if self._end.error is not None:
            raise self._end.error
        raise StopIteration

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        return self.next_event()

    def close(self) -> None:
        """Detaches (closes this attachment's connection)."""
        self._core.close()
        if self._on_close is not None:
            self._on_close(self)

    def __enter__(self) -> "Attachment":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
