"""Every operation once, without I/O: a generator yields `Call`s and receives their reply frames.

`Client` (blocking) and `AsyncClient` (asyncio) drive the same generators, so both speak the
protocol identically. A daemon error is thrown into the generator, which lets an operation turn
it into a result (`latest_snapshot`'s `not-found` becomes None).
"""
from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Dict, Generator, Iterable, List, Optional, Tuple, TypeVar, Union

from . import _frames as F
from .encoding import (Envelope, Metadata, Snapshot, WireFormatError, decode_snapshot, encode_envelope,
                       encode_snapshot)
from .errors import InvalidArgumentError, NotFoundError, ProtocolViolationError
from .models import (DeviceRef, SendMode, Hello, LatestSnapshot, PairedDevice, PairingCode, Peer, PingResult, PublishResult, QueueItem,
                     SendResult, Session, SessionCloseResult, Status, TimerAnchor)

SessionLike = Union[uuid.UUID, str, None]
MAX_ACK_IDS = 10_000
MAX_ITEM_ID = 2**63 - 1


@dataclass(frozen=True)
class Call:
    """One request: operation name, body, whether it is binary, and whether resending it after a lost connection is safe."""

    op: str
    body: bytes
    binary: bool = False
    retry: bool = True

    @property
    def code(self) -> int:
        return F.OPS[self.op]


T = TypeVar("T")
#: An operation: yields its requests, receives their reply frames, returns its result.
Op = Generator[Call, F.Frame, T]


@dataclass(frozen=True)
class Finished:
    """An operation's result, once its generator has returned."""

    value: Any


def advance(op: "Op[T]", frame: Optional[F.Frame] = None, error: Optional[BaseException] = None) -> Union[Call, Finished]:
    """Moves an operation one step: starts it (neither argument), sends it a reply frame, or throws
    a request's error into it. Returns its next request, or `Finished` with its result. The blocking
    and the asyncio client both drive operations through this; only how they wait differs."""
    try:
        if error is not None:
            return op.throw(error)
        if frame is not None:
            return op.send(frame)
        return next(op)
    except StopIteration as done:
        return Finished(done.value)


def default_session(feature: str) -> uuid.UUID:
    """The fixed session of a feature when none is given: the same name-based UUID `meshctl send` uses.

    So `client.send("notes", ...)`, `meshctl send --feature notes` and every device agree on the
    session without configuring one.
    """
    mask = 2**64 - 1
    h0, h1 = 0xCBF29CE484222325, 0x84222325CBF29CE4
    for byte in ("meshctl-session:" + feature).encode("utf-8"):
        h0 = ((h0 ^ byte) * 0x00000100000001B3) & mask
        h1 = (((h1 ^ byte) * 0x00000100000001B3) + 1) & mask
    raw = bytearray(h0.to_bytes(8, "little") + h1.to_bytes(8, "little"))
    raw[6] = (raw[6] & 0x0F) | 0x50
    raw[8] = (raw[8] & 0x3F) | 0x80
    return uuid.UUID(bytes=bytes(raw))


def as_uuid(value: Union[uuid.UUID, str], field: str = "session") -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise ValueError(f"{field} must be a UUID, got {value!r}") from None


def check_feature(feature: str) -> str:
    if not isinstance(feature, str):
        raise TypeError(f"feature must be a str, got {type(feature).__name__}")
    size = len(feature.encode("utf-8"))
    if not 1 <= size <= 255:
        raise ValueError(f"feature must be 1-255 bytes of UTF-8, got {size} bytes")
    return feature


def check_item_id(value: int, field: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_ITEM_ID:
        raise ValueError(f"{field} must be a whole number from 0 to 2^63-1, got {value!r}")
    return value


def device(value: Any) -> str:
    """A device ID from a str or anything with a `device_id` (a `Peer`, `PairedDevice`, `AttachedPeer`)."""
    found = getattr(value, "device_id", value)
    if not isinstance(found, str):
        raise TypeError(f"a device must be given by its ID (str) or a Peer, got {type(value).__name__}")
    return found


def _target(to: Any) -> str:
    return "" if to is None else device(to)


class ClientState:
    """What a client remembers between calls: this device's ID, the default session, counters.

    Sequences and revisions start at the current time in milliseconds (as `meshctl` does) and
    then count up, so they keep increasing across restarts of the app.
    """

    def __init__(self, session: SessionLike, app: Optional[str]) -> None:
        self.session = as_uuid(session) if session is not None else None
        self.app = app
        self.device_id: Optional[str] = None
        self._lock = threading.Lock()
        self._sequences: Dict[Tuple[uuid.UUID, str], int] = {}
        self._revisions: Dict[Tuple[str, uuid.UUID, str], int] = {}

    def session_for(self, feature: str, session: SessionLike) -> uuid.UUID:
        if session is not None:
            return as_uuid(session)
        return self.session if self.session is not None else default_session(feature)

    def _next(self, table: Dict[Any, int], key: Any, at_least: int = 0) -> int:
        with self._lock:
            value = max(table.get(key, 0) + 1, int(time.time() * 1000), at_least)
            table[key] = value
            return value

    def next_sequence(self, session: uuid.UUID, feature: str) -> int:
        return self._next(self._sequences, (session, feature))

    def last_sequence(self, session: uuid.UUID, feature: str) -> int:
        """The last sequence this client issued for the feature and session (0: none); a snapshot carries it and consumes none."""
        with self._lock:
            return self._sequences.get((session, feature), 0)

    def next_revision(self, kind: str, session: uuid.UUID, feature: str, at_least: int = 0) -> int:
        return self._next(self._revisions, (kind, session, feature), at_least)

    def saw_revision(self, kind: str, session: uuid.UUID, feature: str, revision: int) -> None:
        with self._lock:
            key = (kind, session, feature)
            self._revisions[key] = max(self._revisions.get(key, 0), revision)


def _json_call(op: str, body: Optional[Dict[str, Any]] = None, retry: bool = True) -> Call:
    return Call(op, F.json_body(body or {}), False, retry)


def _source(state: ClientState) -> Op[str]:
    if state.device_id is None:
        reply = yield _json_call("status")
        state.device_id = str(reply.json().get("deviceID", "")) or "python"
    return state.device_id


# --- control operations ---

def hello(state: ClientState) -> Op[Hello]:
    reply = yield _json_call("hello", {"client": state.app or "sessionmesh-python", "protocolVersion": 1})
    return Hello.from_json(reply.json())


def status(state: ClientState) -> Op[Status]:
    reply = yield _json_call("status")
    result = Status.from_json(reply.json())
    state.device_id = result.device_id or state.device_id
    return result


def peers() -> Op[List[Peer]]:
    reply = yield _json_call("peers")
    return [Peer.from_json(p) for p in reply.json().get("peers", []) if isinstance(p, dict)]


def create_pairing_code(valid_for: Optional[float], replace: bool = False, single: bool = False) -> Op[PairingCode]:
    body: Dict[str, Any] = {}
    if valid_for is not None:
        body["validFor"] = valid_for
    if replace:
        body["replace"] = True
    if single:
        body["single"] = True
    reply = yield _json_call("pair.create", body, retry=False)
    data = reply.json()
    return PairingCode(code=str(data["code"]), expires=float(data["expires"]))


def wait_for_pairing(code: str) -> Op[PairedDevice]:
    reply = yield _json_call("pair.wait", {"code": code}, retry=False)
    return PairedDevice.from_json(reply.json())


def join_pairing(code: str, address: Optional[str], replace: bool = False, single: bool = False) -> Op[PairedDevice]:
    body: Dict[str, Any] = {"code": code}
    if address is not None:
        body["address"] = address
    if replace:
        body["replace"] = True
    if single:
        body["single"] = True
    reply = yield _json_call("pair.join", body, retry=False)
    return PairedDevice.from_json(reply.json())


def cancel_pairing(code: str) -> Op[None]:
    yield _json_call("pair.cancel", {"code": code})


def unpair(device_id: DeviceRef) -> Op[None]:
    yield _json_call("unpair", {"deviceID": device(device_id)}, retry=False)


def ping(device_id: DeviceRef, count: Optional[int]) -> Op[PingResult]:
    body: Dict[str, Any] = {"deviceID": device(device_id)}
    if count is not None:
        body["count"] = count
    reply = yield _json_call("ping", body)
    return PingResult.from_json(reply.json())


# --- data operations ---

def _encoded(what: str, encode: Any, value: Any, operation: str) -> bytes:
    """`value` encoded for the wire, as `InvalidArgumentError` when it cannot be or is over one frame."""
    try:
        encoded: bytes = encode(value)
    except WireFormatError as error:
        raise InvalidArgumentError(f"the {what} cannot be encoded: {error}", operation=operation) from None
    if len(encoded) > F.MAX_MESSAGE:
        raise InvalidArgumentError(f"the {what} is {len(encoded)} bytes encoded, over the {F.MAX_MESSAGE} bytes one "
                                   "local API frame may carry; send a smaller payload", operation=operation)
    return encoded


def send_envelope(envelope: Envelope, mode: SendMode, to: Optional[DeviceRef]) -> Op[SendResult]:
    if mode not in F.MODES:
        raise ValueError(f"mode must be 'realtime', 'reliable' or 'acknowledgement', got {mode!r}")
    encoded = _encoded("envelope", encode_envelope, envelope, "send")
    body = bytes([F.MODES[mode]]) + F.pack_str(_target(to), "to") + encoded
    # Safe to resend: the event ID is the dedup key on every daemon.
    reply = yield Call("send", body, binary=True, retry=True)
    return SendResult.from_json(reply.json())


def send(state: ClientState, feature: str, payload: bytes, mode: SendMode, to: Optional[DeviceRef], session: SessionLike,
         payload_type: str, sequence: Optional[int], event_id: Optional[uuid.UUID],
         acknowledged_sequence: Optional[int], monotonic_timestamp: Optional[float]) -> Op[SendResult]:
    check_feature(feature)
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        raise TypeError(f"payload must be bytes, got {type(payload).__name__} (encode text first, e.g. text.encode())")
    sid = state.session_for(feature, session)
    source = yield from _source(state)
    metadata = Metadata(session_id=sid, feature_id=feature, source_peer_id=source, event_id=event_id or uuid.uuid4(),
                        sequence=sequence if sequence is not None else state.next_sequence(sid, feature),
                        causal_timestamp=time.time(), payload_type=payload_type,
                        monotonic_timestamp=monotonic_timestamp, acknowledged_sequence=acknowledged_sequence)
    return (yield from send_envelope(Envelope(metadata, bytes(payload)), mode, to))


def publish_snapshot_message(snapshot: Snapshot, to: Optional[DeviceRef]) -> Op[PublishResult]:
    encoded = _encoded("snapshot", encode_snapshot, snapshot, "snapshot.publish")
    reply = yield Call("snapshot.publish", F.pack_str(_target(to), "to") + encoded, binary=True, retry=True)
    data = reply.json()
    return PublishResult(revision=int(data["revision"]), stored=bool(data["stored"]))


def publish_snapshot(state: ClientState, feature: str, payload: bytes, to: Optional[DeviceRef], session: SessionLike,
                     revision: Optional[int], payload_type: str, reflected_sequences: Optional[Dict[str, int]]) -> Op[PublishResult]:
    check_feature(feature)
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        raise TypeError(f"state must be bytes, got {type(payload).__name__}")
    sid = state.session_for(feature, session)
    source = yield from _source(state)

    def snapshot(rev: int) -> Snapshot:
        metadata = Metadata(session_id=sid, feature_id=feature, source_peer_id=source, event_id=uuid.uuid4(),
                            sequence=state.last_sequence(sid, feature), causal_timestamp=time.time(),
                            payload_type=payload_type)
        return Snapshot(metadata=metadata, revision=rev, state=bytes(payload),
                        reflected_sequences=dict(reflected_sequences or {}))

    chosen = revision if revision is not None else state.next_revision("snapshot", sid, feature)
    result = yield from publish_snapshot_message(snapshot(chosen), to)
    if revision is None and not result.stored and to is None:
        # The slot holds a higher revision (published before this app started, or by another
        # app on this device): publish once more just above it, so the latest call wins.
        chosen = state.next_revision("snapshot", sid, feature, at_least=result.revision + 1)
        result = yield from publish_snapshot_message(snapshot(chosen), to)
    state.saw_revision("snapshot", sid, feature, result.revision)
    return result


def request_snapshot(state: ClientState, feature: str, peer: Optional[DeviceRef], session: SessionLike) -> Op[None]:
    check_feature(feature)
    body: Dict[str, Any] = {"featureID": feature, "sessionID": str(state.session_for(feature, session))}
    if peer is not None:
        body["peer"] = device(peer)
    yield _json_call("snapshot.request", body)


def latest_snapshot(feature: str, peer: Optional[DeviceRef], session: SessionLike) -> Op[Optional[LatestSnapshot]]:
    check_feature(feature)
    body: Dict[str, Any] = {"featureID": feature}
    if peer is not None:
        body["peer"] = device(peer)
    if session is not None:
        body["sessionID"] = str(as_uuid(session))
    try:
        reply = yield _json_call("snapshot.latest", body)
    except NotFoundError:
        return None
    if not reply.binary:
        raise ProtocolViolationError("snapshot.latest replied without a binary body")
    reader = F.BodyReader(reply.body, "snapshot.latest")
    from_peer = reader.string("peer")
    try:
        snap = decode_snapshot(reader.rest())
    except WireFormatError as error:
        raise ProtocolViolationError(f"snapshot.latest: the snapshot does not decode: {error}") from None
    return LatestSnapshot(peer=from_peer, payload=snap.state, revision=snap.revision, metadata=snap.metadata,
                          reflected_sequences=snap.reflected_sequences)


def set_timer_anchor(state: ClientState, feature: str, anchor: TimerAnchor, revision: Optional[int],
                     session: SessionLike) -> Op[bool]:
    check_feature(feature)
    sid = state.session_for(feature, session)
    chosen = revision if revision is not None else state.next_revision("anchor", sid, feature)
    reply = yield _json_call("anchor.set", {"sessionID": str(sid), "featureID": feature, "revision": chosen,
                                            "anchor": anchor.to_json()})
    return bool(reply.json().get("stored", False))


def announce_session(state: ClientState, feature: str, session: SessionLike, owner: Optional[str], status_text: str) -> Op[uuid.UUID]:
    check_feature(feature)
    sid = state.session_for(feature, session)
    if owner is None:
        owner = yield from _source(state)
    yield _json_call("session.announce", {"sessionID": str(sid), "featureID": feature, "owner": owner,
                                          "status": status_text})
    return sid


def close_session(state: ClientState, feature: str, session: SessionLike) -> Op[SessionCloseResult]:
    check_feature(feature)
    sid = state.session_for(feature, session)
    reply = yield _json_call("session.close", {"sessionID": str(sid), "featureID": feature})
    data = reply.json()
    return SessionCloseResult(delivered=tuple(data.get("delivered", [])), queued=tuple(data.get("queued", [])))


def sessions(feature: Optional[str]) -> Op[List[Session]]:
    body: Dict[str, Any] = {}
    if feature is not None:
        body["featureID"] = check_feature(feature)
    reply = yield _json_call("sessions", body)
    return [Session.from_json(row) for row in reply.json().get("sessions", []) if isinstance(row, dict)]


def set_watermark(state: ClientState, feature: str, peer: DeviceRef, sequence: int, session: SessionLike) -> Op[None]:
    check_feature(feature)
    sid = state.session_for(feature, session)
    yield _json_call("watermark.set", {"sessionID": str(sid), "featureID": feature, "peer": device(peer),
                                       "sequence": sequence})


def ack(ids: Iterable[int]) -> Op[int]:
    wanted: List[int] = [check_item_id(i, "ids") for i in ids if i != 0]
    acknowledged = 0
    for start in range(0, len(wanted), MAX_ACK_IDS):
        reply = yield _json_call("inbox.ack", {"ids": wanted[start:start + MAX_ACK_IDS]})
        acknowledged += int(reply.json().get("acknowledged", 0))
    return acknowledged


def queue() -> Op[List[QueueItem]]:
    reply = yield _json_call("queue")
    return [QueueItem.from_json(item) for item in reply.json().get("items", []) if isinstance(item, dict)]


def cancel_queued(item_id: int) -> Op[None]:
    check_item_id(item_id, "id")
    yield _json_call("queue.cancel", {"id": item_id}, retry=False)
