"""The typed values the client returns: replies of the control and data operations, and events.

Every class is a frozen dataclass built from the daemon's reply; `raw` keeps the reply's JSON
object (or None) so fields a newer daemon adds stay reachable. Times are seconds since 1970 on
the daemon's wall clock.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Literal, NewType, Optional, Tuple, Union

from .encoding import Metadata, SnapshotRequest

__all__ = [
    "SendMode", "EnvelopeMode", "EventKind", "UnknownEventKind",
    "Hello", "Status", "PeerAddress", "Peer", "PairingCode", "PairedDevice", "PingPath", "PingResult",
    "SendResult", "PublishResult", "LatestSnapshot", "TimerAnchor", "Session", "SessionCloseResult",
    "QueueItem", "AttachedPeer", "DeviceRef", "Event",
]

JSON = Dict[str, Any]

#: The `mode` of `send`: plain strings, so `mode="reliable"` keeps working (`"ack"` is short for
#: `"acknowledgement"`).
SendMode = Literal["realtime", "reliable", "acknowledgement", "ack"]

#: The `mode` an envelope event arrived with.
EnvelopeMode = Literal["realtime", "reliable", "acknowledgement"]

#: An event kind this client does not know (from a newer daemon): `"unknown-0x…"` with the
#: event's code in hex.
UnknownEventKind = NewType("UnknownEventKind", str)

#: What `Event.kind` can be. Plain strings, so `event.kind == "envelope"` keeps working.
EventKind = Union[Literal["envelope", "snapshot", "snapshot_request", "reachability", "anchor", "session",
                          "watermark", "dropped", "disconnected", "reattached"], UnknownEventKind]


def _opt_str(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


def _opt_float(value: Any) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Hello:
    """The `hello` reply: who serves the socket and what it can do."""

    daemon: str
    daemon_version: str
    protocol_version: int
    maximum_body_length: int
    operations: Tuple[str, ...]
    uid: Optional[int]
    raw: JSON = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, body: JSON) -> "Hello":
        return cls(daemon=str(body.get("daemon", "")), daemon_version=str(body.get("daemonVersion", "")),
                   protocol_version=int(body.get("protocolVersion", 0)),
                   maximum_body_length=int(body.get("maximumBodyLength", 0)),
                   operations=tuple(body.get("operations", [])), uid=body.get("uid"), raw=body)


@dataclass(frozen=True)
class Status:
    """The `status` reply: this device and the daemon's counters."""

    device_id: str
    name: str
    listen: str
    socket: str
    uptime_seconds: float
    counters: Dict[str, int]
    #: The daemon's release version; None from a daemon whose status does not carry it.
    version: Optional[str] = None
    raw: JSON = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, body: JSON) -> "Status":
        version = body.get("version")
        return cls(device_id=str(body.get("deviceID", "")), name=str(body.get("name", "")),
                   listen=str(body.get("listen", "")), socket=str(body.get("socket", "")),
                   uptime_seconds=float(body.get("uptimeSeconds", 0.0)),
                   counters=dict(body.get("counters", {})), version=str(version) if version is not None else None,
                   raw=body)


@dataclass(frozen=True)
class PeerAddress:
    """One known address of a peer and where it came from (`static`, `mdns`, `observed`, `pairing`)."""

    address: str
    source: str


@dataclass(frozen=True)
class Peer:
    """A paired device as `peers` lists it.

    `active` is True when the encrypted channel to it is up (`channel == "active"`).
    """

    device_id: str
    name: str
    channel: str
    reachable: bool
    addresses: Tuple[PeerAddress, ...] = ()
    rtt_milliseconds: Optional[float] = None
    clock_offset_milliseconds: Optional[float] = None
    clock_offset_error_milliseconds: Optional[float] = None
    last_handshake: Optional[float] = None
    lease_expires: Optional[float] = None
    joined: Optional[str] = None
    """How it came to be known: `paired here`, `paired here (single)` or `added by NAME`
    (another member of the device set paired it)."""
    added_by: Optional[str] = None
    """The device ID of the member that added it, when `joined` is `added by NAME`."""
    raw: JSON = field(default_factory=dict, repr=False, compare=False)

    @property
    def active(self) -> bool:
        """Whether the channel to this device is active."""
        return self.channel == "active"

    @property
    def short_id(self) -> str:
        """The first group of the device ID (what `meshctl` shows)."""
        return self.device_id.split("-", 1)[0]

    @classmethod
    def from_json(cls, body: JSON) -> "Peer":
        addresses = tuple(PeerAddress(str(a.get("address", "")), str(a.get("source", "")))
                          for a in body.get("addresses", []) if isinstance(a, dict))
        return cls(device_id=str(body.get("deviceID", "")), name=str(body.get("name", "")),
                   channel=str(body.get("channel", "down")), reachable=bool(body.get("reachable", False)),
                   addresses=addresses, rtt_milliseconds=_opt_float(body.get("rttMilliseconds")),
                   clock_offset_milliseconds=_opt_float(body.get("clockOffsetMilliseconds")),
                   clock_offset_error_milliseconds=_opt_float(body.get("clockOffsetErrorMilliseconds")),
                   last_handshake=_opt_float(body.get("lastHandshake")),
                   lease_expires=_opt_float(body.get("leaseExpires")),
                   joined=_opt_str(body.get("joined")), added_by=_opt_str(body.get("addedBy")), raw=body)


@dataclass(frozen=True)
class PairingCode:
    """A live pairing code (a secret: show it to the user, never log it) and when it expires."""

    code: str
    expires: float

    def __repr__(self) -> str:
        return f"PairingCode(code='****-****', expires={self.expires!r})"


@dataclass(frozen=True)
class PairedDevice:
    """The other device of a completed pairing. Both users compare `verification`."""

    device_id: str
    name: str
    verification: str

    @classmethod
    def from_json(cls, body: JSON) -> "PairedDevice":
        return cls(device_id=str(body.get("deviceID", "")), name=str(body.get("name", "")),
                   verification=str(body.get("verification", "")))


@dataclass(frozen=True)
class PingPath:
    """Round-trip figures of one path (`datagram` or `stream`); figures are None when nothing came back."""

    path: str
    sent: int
    received: int
    min_microseconds: Optional[float] = None
    p50_microseconds: Optional[float] = None
    p99_microseconds: Optional[float] = None
    max_microseconds: Optional[float] = None


@dataclass(frozen=True)
class PingResult:
    """The `ping` reply."""

    device_id: str
    paths: Tuple[PingPath, ...]

    @classmethod
    def from_json(cls, body: JSON) -> "PingResult":
        paths = tuple(PingPath(path=str(p.get("path", "")), sent=int(p.get("sent", 0)), received=int(p.get("received", 0)),
                               min_microseconds=_opt_float(p.get("minMicroseconds")),
                               p50_microseconds=_opt_float(p.get("p50Microseconds")),
                               p99_microseconds=_opt_float(p.get("p99Microseconds")),
                               max_microseconds=_opt_float(p.get("maxMicroseconds")))
                      for p in body.get("paths", []))
        return cls(device_id=str(body.get("deviceID", "")), paths=paths)


@dataclass(frozen=True)
class SendResult:
    """The `send` reply.

    `outcome`: `sent` (handed to the network now), `queued` (durably in the outbox) or `pending`
    (held until the peer's channel first comes up); `peers` is how many devices it was for.
    """

    event_id: uuid.UUID
    outcome: str
    peers: int

    @classmethod
    def from_json(cls, body: JSON) -> "SendResult":
        return cls(event_id=uuid.UUID(str(body["eventID"])), outcome=str(body["outcome"]), peers=int(body["peers"]))


@dataclass(frozen=True)
class PublishResult:
    """The `snapshot.publish` reply: the slot's revision after the call and whether this snapshot was stored."""

    revision: int
    stored: bool


@dataclass(frozen=True)
class LatestSnapshot:
    """The last snapshot received from a peer (`snapshot.latest`)."""

    peer: str
    payload: bytes
    revision: int
    metadata: Metadata
    reflected_sequences: Dict[str, int] = field(default_factory=dict)

    @property
    def feature(self) -> str:
        return self.metadata.feature_id

    @property
    def session_id(self) -> uuid.UUID:
        return self.metadata.session_id


@dataclass(frozen=True)
class TimerAnchor:
    """A shared timer's state (`anchor.set` and the `anchor` event). Instants are seconds since 1970.

    Elapsed time at `now` = `accumulated_elapsed_before_anchor` + (0 when paused, else
    `now - started_at`); `elapsed()` computes it.
    """

    started_at: float
    accumulated_elapsed_before_anchor: float = 0.0
    is_paused: bool = False
    pause_started_at: Optional[float] = None
    expected_end_at: Optional[float] = None
    step_started_at: Optional[float] = None

    def elapsed(self, now: float) -> float:
        """Seconds of running time at `now` (seconds since 1970 on this device's clock)."""
        if self.is_paused:
            return self.accumulated_elapsed_before_anchor
        return self.accumulated_elapsed_before_anchor + max(0.0, now - self.started_at)

    def to_json(self) -> JSON:
        body: JSON = {"startedAt": self.started_at, "accumulatedElapsedBeforeAnchor": self.accumulated_elapsed_before_anchor,
                      "isPaused": self.is_paused}
        if self.pause_started_at is not None:
            body["pauseStartedAt"] = self.pause_started_at
        if self.expected_end_at is not None:
            body["expectedEndAt"] = self.expected_end_at
        if self.step_started_at is not None:
            body["stepStartedAt"] = self.step_started_at
        return body

    @classmethod
    def from_json(cls, body: JSON) -> "TimerAnchor":
        return cls(started_at=float(body["startedAt"]),
                   accumulated_elapsed_before_anchor=float(body.get("accumulatedElapsedBeforeAnchor", 0.0)),
                   is_paused=bool(body.get("isPaused", False)), pause_started_at=_opt_float(body.get("pauseStartedAt")),
                   expected_end_at=_opt_float(body.get("expectedEndAt")),
                   step_started_at=_opt_float(body.get("stepStartedAt")))


@dataclass(frozen=True)
class Session:
    """A row of the session table (`sessions`, and the `session` event).

    `source_peer` is the device the row came from, None for this device's own sessions.
    """

    session_id: uuid.UUID
    feature: str
    owner: str
    status: str
    updated_at: float
    revision: int
    source_peer: Optional[str] = None

    @property
    def closed(self) -> bool:
        return self.status == "closed"

    @classmethod
    def from_json(cls, body: JSON) -> "Session":
        return cls(session_id=uuid.UUID(str(body["sessionID"])), feature=str(body.get("featureID", "")),
                   owner=str(body.get("owner", "")), status=str(body.get("status", "")),
                   updated_at=float(body.get("updatedAt", 0.0)), revision=int(body.get("revision", 0)),
                   source_peer=body.get("sourcePeer"))


@dataclass(frozen=True)
class SessionCloseResult:
    """`session.close`: devices that acknowledged the close, and those it is durably queued for."""

    delivered: Tuple[str, ...]
    queued: Tuple[str, ...]


@dataclass(frozen=True)
class QueueItem:
    """An outstanding reliable transfer in this daemon's outbox (`queue`)."""

    id: int
    peer: str
    feature: str
    event_id: uuid.UUID
    age_seconds: float
    attempts: int
    size: int

    @classmethod
    def from_json(cls, body: JSON) -> "QueueItem":
        return cls(id=int(body["id"]), peer=str(body.get("peer", "")), feature=str(body.get("featureID", "")),
                   event_id=uuid.UUID(str(body["eventID"])), age_seconds=float(body.get("ageSeconds", 0.0)),
                   attempts=int(body.get("attempts", 0)), size=int(body.get("size", 0)))


@dataclass(frozen=True)
class AttachedPeer:
    """A paired device as the `attach` reply lists it; `reachable` = channel active and the feature's app attached there."""

    device_id: str
    name: str
    reachable: bool


#: A device, by ID (full, short or a unique prefix) or as a value that carries one.
DeviceRef = Union[str, Peer, PairedDevice, AttachedPeer]


@dataclass(frozen=True)
class Event:
    """One event of an attachment.

    `kind` is one of:

    - `envelope`: an item another device sent (`payload`, `feature`, `from_device`, `mode`
      (`EnvelopeMode`; None for a mode this client does not know), `redelivery`, `inbox_id`,
      `metadata`). Items with an `inbox_id` stay in the daemon's inbox
      until `ack()`; unacknowledged ones come again (flagged `redelivery`) on the next attach.
    - `snapshot`: a newer snapshot from a device (`payload` = state, `revision`, `metadata`).
    - `snapshot_request`: a device asks for this app's snapshot (`request`); answer with
      `publish_snapshot(..., to=event.from_device)`.
    - `reachability`: `from_device` became reachable or not (`reachable`, `reason`; `feature`
      None for the channel itself).
    - `anchor`: a timer anchor (`anchor`, `revision`, `session_id`).
    - `session`: a session row changed (`session`, `change`: announced, updated, closed).
    - `watermark`: how far a device's app has processed this device's events (`sequence`).
    - `dropped`: the daemon shed `dropped` events because this app read too slowly.
    - `disconnected` / `reattached`: the client lost the daemon and (after reconnecting) attached
      again; unacknowledged inbox items follow `reattached` again, flagged `redelivery`.
    - `unknown-0x…` (`UnknownEventKind`): an event a newer daemon added; `payload` is its raw body.
    """

    kind: EventKind
    feature: Optional[str] = None
    from_device: Optional[str] = None
    payload: bytes = b""
    mode: Optional[EnvelopeMode] = None
    redelivery: bool = False
    inbox_id: int = 0
    metadata: Optional[Metadata] = None
    revision: Optional[int] = None
    reflected_sequences: Dict[str, int] = field(default_factory=dict)
    request: Optional[SnapshotRequest] = None
    reachable: Optional[bool] = None
    reason: Optional[str] = None
    anchor: Optional[TimerAnchor] = None
    session: Optional[Session] = None
    change: Optional[str] = None
    session_id: Optional[uuid.UUID] = None
    sequence: Optional[int] = None
    dropped: int = 0
    raw: Optional[JSON] = field(default=None, repr=False, compare=False)
    _acker: Optional[Callable[[List[int]], int]] = field(default=None, repr=False, compare=False)

    @property
    def event_id(self) -> Optional[uuid.UUID]:
        """The envelope's or snapshot's event ID (the dedup key), if the event carries one."""
        return self.metadata.event_id if self.metadata is not None else None

    @property
    def needs_ack(self) -> bool:
        """Whether this is an inbox item the daemon keeps until it is acknowledged."""
        return self.kind == "envelope" and self.inbox_id != 0

    def ack(self) -> int:
        """Acknowledges this inbox item to the daemon (deletes it from the inbox); returns how many were deleted (0 or 1).

        A no-op returning 0 for events that need no acknowledgement (realtime items, other kinds).
        Blocks for one round trip to the daemon; from asyncio code use `await client.ack([...])`
        of the async client, or call this in an executor.
        """
        if not self.needs_ack or self._acker is None:
            return 0
        return self._acker([self.inbox_id])
