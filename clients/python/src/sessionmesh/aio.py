"""The asyncio client: `await sessionmesh.connect_async()` returns an `AsyncClient`.

The same operations as `Client`, as coroutines, over the same protocol code. Replies are
awaited without a thread per call (the connection's reader thread completes futures the event
loop awaits); only reconnecting to a restarting daemon runs in the default executor. Events:

    async with client.attach(["notes"]) as events:
        async for event in events:
            ...
            await client.ack([event.inbox_id])     # or event.ack() (one short blocking round trip)
"""
from __future__ import annotations

import asyncio
import threading
import time
import uuid
from typing import Any, Dict, Generator, Iterable, List, Optional, Sequence, Union, cast

from . import _operations as ops
from ._attachment import AttachmentCore, End, Sink
from ._connection import Link, backoff, live, log
from . import _frames as F
from ._operations import Call, SessionLike, T
from .client import DEFAULT_EVENT_BUFFER, retry_worth, run_blocking, unreachable_error
from .encoding import Envelope, Snapshot
from .errors import ClientTimeoutError, DaemonUnreachableError, MeshError
from .models import (AttachedPeer, DeviceRef, SendMode, Event, Hello, LatestSnapshot, PairedDevice, PairingCode, Peer, PingResult,
                     PublishResult, QueueItem, SendResult, Session, SessionCloseResult, Status, TimerAnchor)
from .socketpath import default_socket_path

__all__ = ["AsyncClient", "AsyncAttachment", "connect", "connect_async"]


async def connect(path: Optional[str] = None, *, app: Optional[str] = None, session: SessionLike = None,
                  reconnect_timeout: float = 30.0) -> "AsyncClient":
    """Connects to meshd and returns an `AsyncClient`: `await sessionmesh.aio.connect()`.

    Arguments as `sessionmesh.connect`. Raises `DaemonUnreachableError` at once when no daemon
    answers. Asks the daemon for this device's ID once, so `client.device_id` is a plain
    property, as on the blocking `Client`.
    """
    client = AsyncClient(path, app=app, session=session, reconnect_timeout=reconnect_timeout)
    await client._open()
    return client


async def connect_async(path: Optional[str] = None, *, app: Optional[str] = None, session: SessionLike = None,
                        reconnect_timeout: float = 30.0) -> "AsyncClient":
    """The same as `sessionmesh.aio.connect` (the name `sessionmesh.connect_async` exports)."""
    return await connect(path, app=app, session=session, reconnect_timeout=reconnect_timeout)


class AsyncClient:
    """The asyncio twin of `Client`; every operation is a coroutine with the same name and arguments."""

    def __init__(self, path: Optional[str] = None, *, app: Optional[str] = None, session: SessionLike = None,
                 reconnect_timeout: float = 30.0) -> None:
        self.path: str = path if path is not None else default_socket_path()
        self._given = path
        self._link = Link(self.path, reconnect_timeout)
        self._state = ops.ClientState(session, app)
        self._attachments: List[AsyncAttachment] = []

    async def _open(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(None, lambda: self._link.connection(None, patience=0))
        except DaemonUnreachableError as error:
            raise unreachable_error(error, self._given) from None
        try:
            await self.status()  # learns device_id
        except BaseException:
            self._link.close()
            raise

    async def _run(self, op: "ops.Op[T]", timeout: Optional[float] = None) -> T:
        deadline = time.monotonic() + timeout if timeout is not None else None
        step = ops.advance(op)
        while isinstance(step, Call):
            try:
                frame = await self._call(step, deadline)
            except MeshError as error:
                step = ops.advance(op, error=error)
                continue
            step = ops.advance(op, frame)
        return cast(T, step.value)

    async def _call(self, call: Call, deadline: Optional[float]) -> F.Frame:
        loop = asyncio.get_running_loop()
        attempt = 0
        while True:
            attempt += 1
            conn = live(self._link)
            if conn is not None:
                future = conn.submit(call.code, call.body, call.binary)
            else:
                future = await loop.run_in_executor(None, self._link.submit, call.code, call.body, call.binary, deadline)
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                return await asyncio.wait_for(asyncio.wrap_future(future), left)
            except asyncio.TimeoutError:
                raise ClientTimeoutError(f"{call.op}: no answer from meshd within the timeout", operation=call.op) from None
            except MeshError as error:
                if not retry_worth(error, call, attempt, deadline):
                    raise
                log.info("retrying %s after its connection closed (%s), attempt %d", call.op, error.code, attempt + 1)
            await asyncio.sleep(backoff(attempt))

    async def close(self) -> None:
        """Closes the connection and every attachment made from this client."""
        attachments, self._attachments = self._attachments, []
        for attachment in attachments:
            await attachment.close()
        self._link.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    @property
    def device_id(self) -> str:
        """This device's ID, as on `Client` (asked from the daemon when the client connected)."""
        return self._state.device_id or ""

    async def hello(self) -> Hello:
        return await self._run(ops.hello(self._state))

    async def status(self) -> Status:
        return await self._run(ops.status(self._state))

    async def peers(self) -> List[Peer]:
        return await self._run(ops.peers())

    async def create_pairing_code(self, valid_for: Optional[float] = None, replace: bool = False,
                                  single: bool = False) -> PairingCode:
        return await self._run(ops.create_pairing_code(valid_for, replace, single))

    async def wait_for_pairing(self, code: str, timeout: Optional[float] = None) -> PairedDevice:
        return await self._run(ops.wait_for_pairing(code), timeout)

    async def join_pairing(self, code: str, address: Optional[str] = None, timeout: Optional[float] = None,
                           replace: bool = False, single: bool = False) -> PairedDevice:
        return await self._run(ops.join_pairing(code, address, replace, single), timeout)

    async def cancel_pairing(self, code: str) -> None:
        await self._run(ops.cancel_pairing(code))

    async def unpair(self, device_id: DeviceRef) -> None:
        await self._run(ops.unpair(device_id))

    async def ping(self, device_id: DeviceRef, count: Optional[int] = None) -> PingResult:
        return await self._run(ops.ping(device_id, count))

    async def send(self, feature: str, payload: bytes, mode: SendMode = "reliable", to: Optional[DeviceRef] = None, *,
                   session: SessionLike = None, payload_type: str = "bytes", sequence: Optional[int] = None,
                   event_id: Optional[uuid.UUID] = None, acknowledged_sequence: Optional[int] = None,
                   monotonic_timestamp: Optional[float] = None, timeout: Optional[float] = None) -> SendResult:
        return await self._run(ops.send(self._state, feature, payload, mode, to, session, payload_type, sequence,
                                        event_id, acknowledged_sequence, monotonic_timestamp), timeout)

    async def send_envelope(self, envelope: Envelope, mode: SendMode = "reliable", to: Optional[DeviceRef] = None) -> SendResult:
        return await self._run(ops.send_envelope(envelope, mode, to))

    async def publish_snapshot(self, feature: str, state: bytes, *, to: Optional[DeviceRef] = None,
                               session: SessionLike = None, revision: Optional[int] = None,
                               payload_type: str = "bytes",
                               reflected_sequences: Optional[Dict[str, int]] = None) -> PublishResult:
        return await self._run(ops.publish_snapshot(self._state, feature, state, to, session, revision, payload_type,
                                                    reflected_sequences))

    async def publish_snapshot_message(self, snapshot: Snapshot, to: Optional[DeviceRef] = None) -> PublishResult:
        return await self._run(ops.publish_snapshot_message(snapshot, to))

    async def latest_snapshot(self, feature: str, peer: Optional[DeviceRef] = None,
                              session: SessionLike = None) -> Optional[LatestSnapshot]:
        return await self._run(ops.latest_snapshot(feature, peer, session))

    async def request_snapshot(self, feature: str, peer: Optional[DeviceRef] = None, session: SessionLike = None) -> None:
        await self._run(ops.request_snapshot(self._state, feature, peer, session))

    async def set_timer_anchor(self, feature: str, anchor: TimerAnchor, *, revision: Optional[int] = None,
                               session: SessionLike = None) -> bool:
        return await self._run(ops.set_timer_anchor(self._state, feature, anchor, revision, session))

    async def announce_session(self, feature: str, session: SessionLike = None, *, owner: Optional[str] = None,
                               status: str = "running") -> uuid.UUID:
        return await self._run(ops.announce_session(self._state, feature, session, owner, status))

    async def close_session(self, feature: str, session: SessionLike = None,
                            timeout: Optional[float] = None) -> SessionCloseResult:
        return await self._run(ops.close_session(self._state, feature, session), timeout)

    async def sessions(self, feature: Optional[str] = None) -> List[Session]:
        return await self._run(ops.sessions(feature))

    async def set_watermark(self, feature: str, peer: DeviceRef, sequence: int, *, session: SessionLike = None) -> None:
        await self._run(ops.set_watermark(self._state, feature, peer, sequence, session))

    async def ack(self, inbox_ids: Iterable[int]) -> int:
        return await self._run(ops.ack(list(inbox_ids)))

    async def queue(self) -> List[QueueItem]:
        return await self._run(ops.queue())

    async def cancel_queued(self, item_id: int) -> None:
        await self._run(ops.cancel_queued(item_id))

    def _ack_blocking(self, ids: List[int]) -> int:
        # For Event.ack() called from an event handler: one blocking round trip.
        return run_blocking(self._link, ops.ack(ids))

    def attach(self, features: Union[str, Sequence[str]], *, session: SessionLike = None, app: Optional[str] = None,
               buffer: int = DEFAULT_EVENT_BUFFER, timeout: float = 10.0) -> "AsyncAttachment":
        """Returns an `AsyncAttachment`; `async with client.attach(...)` or `await client.attach(...)` attaches."""
        names = [features] if isinstance(features, str) else list(features)
        for name in names:
            ops.check_feature(name)
        attachment = AsyncAttachment(self, names, str(ops.as_uuid(session)) if session is not None else None,
                                     app or self._state.app, buffer, timeout)
        self._attachments.append(attachment)
        return attachment


class _AsyncSink(Sink):
    def __init__(self, loop: asyncio.AbstractEventLoop, size: int) -> None:
        self.loop = loop
        self.queue: "asyncio.Queue[Any]" = asyncio.Queue()
        self.room = threading.Semaphore(max(1, size))
        self.ended = False

    def _post(self, item: Any) -> None:
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, item)
        except RuntimeError:  # the loop is closed: nobody reads any more
            pass

    def put(self, item: Any, stop: threading.Event) -> None:
        while not stop.is_set():
            if self.room.acquire(timeout=0.1):
                self._post(item)
                return

    def finish(self, error: Optional[MeshError]) -> None:
        if not self.ended:
            self.ended = True
            self._post(End(error))


class AsyncAttachment:
    """The events of an attach, for `async for`. Re-attaches after a daemon restart like `Attachment`."""

    def __init__(self, client: AsyncClient, features: List[str], session: Optional[str], app: Optional[str],
                 buffer: int, timeout: float) -> None:
        self._client = client
        self._features, self._session, self._app = features, session, app
        self._buffer, self._timeout = buffer, timeout
        self._core: Optional[AttachmentCore] = None
        self._sink: Optional[_AsyncSink] = None
        self._end: Optional[End] = None

    async def start(self) -> "AsyncAttachment":
        """Attaches (once); `async with` calls it."""
        if self._core is not None:
            return self
        loop = asyncio.get_running_loop()
        self._sink = _AsyncSink(loop, self._buffer)
        self._core = AttachmentCore(self._client.path, self._features, self._session, self._app, self._sink,
                                    self._client._ack_blocking)
        await loop.run_in_executor(None, self._core.open, self._timeout, self._client._link.reconnect_timeout)
        return self

    @property
    def attachment_id(self) -> int:
        return self._core.attachment_id if self._core else 0

    @property
    def local_device_id(self) -> str:
        return self._core.local_device_id if self._core else ""

    @property
    def peers(self) -> List[AttachedPeer]:
        return list(self._core.peers) if self._core else []

    async def next_event(self, timeout: Optional[float] = None) -> Event:
        """The next event; `ClientTimeoutError` after `timeout` s, `StopAsyncIteration` once closed."""
        if self._sink is None:
            await self.start()
        assert self._sink is not None
        if self._end is None:
            try:
                item = await asyncio.wait_for(self._sink.queue.get(), timeout)
            except asyncio.TimeoutError:
                raise ClientTimeoutError(f"no event within {timeout} s", operation="attach") from None
            if not isinstance(item, End):
                self._sink.room.release()
                return cast(Event, item)
            self._end = item
        if self._end.error is not None:
            raise self._end.error
        raise StopAsyncIteration

    def __await__(self) -> Generator[Any, None, "AsyncAttachment"]:
        """`events = await client.attach(...)` attaches as `async with` does (close it yourself)."""
        return self.start().__await__()

    def __aiter__(self) -> "AsyncAttachment":
        return self

    async def __anext__(self) -> Event:
        return await self.next_event()

    async def close(self) -> None:
        """Detaches."""
        if self._core is not None:
            self._core.close()
        if self._sink is not None and self._end is None:
            self._end = End(None)
        if self in self._client._attachments:
            self._client._attachments.remove(self)

    async def __aenter__(self) -> "AsyncAttachment":
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
