"""The SessionMesh wire encoding of envelopes, snapshots and snapshot requests (docs/ENCODING.md).

Apps rarely need this module: `Client.send` and `Client.publish_snapshot` build the messages and
events arrive decoded. It is public for tools and for tests that need the exact bytes.

Layout of one message (it ends where the input ends)::

    +------+------+---------+------+=====================+
    | 0x53 | 0x4D | format  | kind | body                |
    +------+------+---------+------+=====================+
    kind: 1 envelope, 2 snapshot, 3 snapshot request

Decoding is strict like the daemon's: anything malformed raises `WireFormatError` naming the
field and byte offset, and an accepted message re-encodes to exactly the same bytes.
"""
from __future__ import annotations

import datetime as _dt
import math
import struct
import uuid
from dataclasses import dataclass, field
from typing import Dict, Optional

__all__ = [
    "FORMAT_VERSION", "KIND_ENVELOPE", "KIND_SNAPSHOT", "KIND_SNAPSHOT_REQUEST",
    "MAX_STRING_BYTES", "MAX_PAYLOAD_BYTES", "MAX_REFLECTED_PEERS", "REFERENCE_DATE",
    "Metadata", "Envelope", "Snapshot", "SnapshotRequest", "WireFormatError",
    "encode_envelope", "encode_snapshot", "encode_snapshot_request",
    "decode_envelope", "decode_snapshot", "decode_snapshot_request",
    "to_reference_seconds", "from_reference_seconds",
]

FORMAT_VERSION = 1
KIND_ENVELOPE, KIND_SNAPSHOT, KIND_SNAPSHOT_REQUEST = 1, 2, 3
MAX_STRING_BYTES = 1024
MAX_PAYLOAD_BYTES = 16 << 20
MAX_REFLECTED_PEERS = 1024
MAX_PROTOCOL_VERSION = 2**31 - 1
_U64_MAX = 2**64 - 1
_F64 = struct.Struct(">d")

#: `causalTimestamp` counts seconds since this instant (Foundation `Date`'s reference date).
REFERENCE_DATE = _dt.datetime(2001, 1, 1, tzinfo=_dt.timezone.utc)
_REFERENCE_UNIX = 978307200.0


def to_reference_seconds(unix_seconds: float) -> float:
    """Seconds since 1970 (`time.time()`) to seconds since 2001-01-01 UTC (the wire's clock)."""
    return unix_seconds - _REFERENCE_UNIX


def from_reference_seconds(reference_seconds: float) -> float:
    """Seconds since 2001-01-01 UTC (the wire's clock) to seconds since 1970."""
    return reference_seconds + _REFERENCE_UNIX


class WireFormatError(ValueError):
    """A message does not follow docs/ENCODING.md, or a value cannot be encoded.

    `code` is one of the codec's codes (`truncated`, `badMagic`, `limitExceeded`, ...), `offset`
    the byte where decoding stopped and `detail` names the field.
    """

    def __init__(self, code: str, offset: int, detail: str) -> None:
        super().__init__(f"{detail} ({code} at byte {offset})")
        self.code, self.offset, self.detail = code, offset, detail


@dataclass(frozen=True)
class Metadata:
    """The ten metadata fields every envelope and snapshot carries.

    `causal_timestamp` is seconds since 1970 (like `time.time()`); the wire carries it relative to
    2001-01-01 and this class converts. `source_peer_id` is what the sender wrote: receivers trust
    the event's `from_device`, which the daemon fills in from the authenticated channel.
    """

    session_id: uuid.UUID
    feature_id: str
    source_peer_id: str
    event_id: uuid.UUID
    sequence: int
    causal_timestamp: float
    payload_type: str
    protocol_version: int = 1
    monotonic_timestamp: Optional[float] = None
    acknowledged_sequence: Optional[int] = None
    #: The decoded wire value of `causal_timestamp` (seconds since 2001), kept so a decoded
    #: message re-encodes to exactly its bytes (the 1970/2001 conversion is not exact in binary64).
    causal_reference_seconds: Optional[float] = field(default=None, repr=False, compare=False)

    @property
    def wire_causal_timestamp(self) -> float:
        """`causal_timestamp` as the wire carries it: seconds since 2001-01-01 UTC."""
        wire = self.causal_reference_seconds
        if wire is not None and from_reference_seconds(wire) == self.causal_timestamp:
            return wire
        return to_reference_seconds(self.causal_timestamp)


@dataclass(frozen=True)
class Envelope:
    """One event: metadata plus opaque payload bytes."""

    metadata: Metadata
    payload: bytes


@dataclass(frozen=True)
class Snapshot:
    """A feature's latest state: metadata, a revision (higher wins), reflected peer sequences and state bytes."""

    metadata: Metadata
    revision: int
    state: bytes
    reflected_sequences: Dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class SnapshotRequest:
    """A peer's request for a snapshot of a session (the `snapshot.request` event)."""

    session_id: uuid.UUID
    requesting_peer_id: str
    feature_id: Optional[str] = None
    target_peer_id: Optional[str] = None
    expected_sequence: Optional[int] = None
    received_sequence: Optional[int] = None
    protocol_version: int = 1


# --- encoding ---------------------------------------------------------------------------------

class _Writer:
    def __init__(self, kind: int) -> None:
        self.out = bytearray(b"SM")
        self.out.append(FORMAT_VERSION)
        self.out.append(kind)

    def varint(self, value: int, name: str) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0 or value > _U64_MAX:
            raise WireFormatError("valueOutOfRange", len(self.out), f"{name} must be a whole number from 0 to 2^64-1, got {value!r}")
        while True:
            byte = value & 0x7F
            value >>= 7
            if value:
                self.out.append(byte | 0x80)
            else:
                self.out.append(byte)
                return

    def protocol_version(self, value: int) -> None:
        if not isinstance(value, int) or value < 0 or value > MAX_PROTOCOL_VERSION:
            raise WireFormatError("valueOutOfRange", len(self.out), f"protocolVersion must be 0 to 2^31-1, got {value!r}")
        self.varint(value, "protocolVersion")

    def uuid(self, value: uuid.UUID) -> None:
        self.out += value.bytes

    def string(self, value: str, name: str) -> None:
        data = value.encode("utf-8")
        if len(data) > MAX_STRING_BYTES:
            raise WireFormatError("limitExceeded", len(self.out), f"{name} is {len(data)} bytes, limit {MAX_STRING_BYTES}")
        self.varint(len(data), name + " length")
        self.out += data

    def payload(self, value: bytes, name: str) -> None:
        if len(value) > MAX_PAYLOAD_BYTES:
            raise WireFormatError("limitExceeded", len(self.out), f"{name} is {len(value)} bytes, limit {MAX_PAYLOAD_BYTES}")
        self.varint(len(value), name + " length")
        self.out += value

    def double(self, value: float, name: str) -> None:
        if not math.isfinite(value):
            raise WireFormatError("nonFiniteTimestamp", len(self.out), f"{name} must be finite, got {value!r}")
        self.out += _F64.pack(value)

    def metadata(self, m: Metadata) -> None:
        self.protocol_version(m.protocol_version)
        self.uuid(m.session_id)
        self.out.append((1 if m.monotonic_timestamp is not None else 0) | (2 if m.acknowledged_sequence is not None else 0))
        self.string(m.feature_id, "featureID")
        self.string(m.source_peer_id, "sourcePeerID")
        self.uuid(m.event_id)
        self.varint(m.sequence, "sequence")
        self.double(m.wire_causal_timestamp, "causalTimestamp")
        if m.monotonic_timestamp is not None:
            self.double(m.monotonic_timestamp, "monotonicTimestamp")
        self.string(m.payload_type, "payloadType")
        if m.acknowledged_sequence is not None:
            self.varint(m.acknowledged_sequence, "acknowledgedSequence")


def encode_envelope(envelope: Envelope) -> bytes:
    """The envelope's bytes (kind 1)."""
    w = _Writer(KIND_ENVELOPE)
    w.metadata(envelope.metadata)
    w.payload(bytes(envelope.payload), "payload")
    return bytes(w.out)


def encode_snapshot(snapshot: Snapshot) -> bytes:
    """The snapshot's bytes (kind 2); reflected peers are written sorted by their UTF-8 bytes."""
    if len(snapshot.reflected_sequences) > MAX_REFLECTED_PEERS:
        raise WireFormatError("limitExceeded", 0, f"reflectedSequences has {len(snapshot.reflected_sequences)} entries, limit {MAX_REFLECTED_PEERS}")
    w = _Writer(KIND_SNAPSHOT)
    w.metadata(snapshot.metadata)
    w.varint(snapshot.revision, "revision")
    w.varint(len(snapshot.reflected_sequences), "reflected peer count")
    for peer, sequence in sorted(snapshot.reflected_sequences.items(), key=lambda item: item[0].encode("utf-8")):
        w.string(peer, "reflectedSequences peer id")
        w.varint(sequence, "reflected sequence")
    w.payload(bytes(snapshot.state), "state")
    return bytes(w.out)


def encode_snapshot_request(request: SnapshotRequest) -> bytes:
    """The snapshot request's bytes (kind 3)."""
    w = _Writer(KIND_SNAPSHOT_REQUEST)
    w.protocol_version(request.protocol_version)
    w.uuid(request.session_id)
    flags = ((1 if request.feature_id is not None else 0) | (2 if request.target_peer_id is not None else 0)
             | (4 if request.expected_sequence is not None else 0) | (8 if request.received_sequence is not None else 0))
    w.out.append(flags)
    w.string(request.requesting_peer_id, "requestingPeerID")
    if request.feature_id is not None:
        w.string(request.feature_id, "featureID")
    if request.target_peer_id is not None:
        w.string(request.target_peer_id, "targetPeerID")
    if request.expected_sequence is not None:
        w.varint(request.expected_sequence, "expectedSequence")
    if request.received_sequence is not None:
        w.varint(request.received_sequence, "receivedSequence")
    return bytes(w.out)


# --- decoding ---------------------------------------------------------------------------------

class _Reader:
    def __init__(self, data: bytes, expected_kind: int) -> None:
        self.data = memoryview(bytes(data))
        self.pos = 0
        if len(self.data) < 4:
            self.fail("truncated", "message header")
        if self.data[0] != 0x53 or self.data[1] != 0x4D:
            self.fail("badMagic", "magic")
        if self.data[2] != FORMAT_VERSION:
            self.fail("unsupportedFormatVersion", f"format version {self.data[2]}")
        kind = self.data[3]
        if kind not in (KIND_ENVELOPE, KIND_SNAPSHOT, KIND_SNAPSHOT_REQUEST):
            self.fail("unknownKind", f"kind {kind}")
        if kind != expected_kind:
            self.fail("unexpectedKind", f"kind {kind}, expected {expected_kind}")
        self.pos = 4

    def fail(self, code: str, detail: str) -> None:
        raise WireFormatError(code, self.pos, detail)

    def take(self, count: int, name: str) -> bytes:
        if len(self.data) - self.pos < count:
            self.fail("truncated", name)
        chunk = bytes(self.data[self.pos:self.pos + count])
        self.pos += count
        return chunk

    def byte(self, name: str) -> int:
        return self.take(1, name)[0]

    def varint(self, name: str) -> int:
        value, shift, start = 0, 0, self.pos
        for index in range(10):
            byte = self.byte(name)
            value |= (byte & 0x7F) << shift
            if byte & 0x80 == 0:
                if index > 0 and byte == 0:
                    self.pos = start
                    self.fail("malformedVarint", f"{name} is not minimal")
                if value > _U64_MAX:
                    self.pos = start
                    self.fail("malformedVarint", f"{name} is above 2^64-1")
                return value
            shift += 7
        self.pos = start
        self.fail("malformedVarint", f"{name} is longer than 10 bytes")
        return 0

    def protocol_version(self) -> int:
        start = self.pos
        value = self.varint("protocolVersion")
        if value > MAX_PROTOCOL_VERSION:
            self.pos = start
            self.fail("valueOutOfRange", "protocolVersion above 2^31-1")
        return value

    def uuid(self, name: str) -> uuid.UUID:
        return uuid.UUID(bytes=self.take(16, name))

    def length(self, name: str, limit: int) -> int:
        start = self.pos
        count = self.varint(name + " length")
        if count > limit:
            self.pos = start
            self.fail("limitExceeded", f"{name} is {count} bytes, limit {limit}")
        return count

    def string(self, name: str) -> str:
        data = self.take(self.length(name, MAX_STRING_BYTES), name)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            self.fail("invalidUTF8", name)
            return ""

    def payload(self, name: str) -> bytes:
        return self.take(self.length(name, MAX_PAYLOAD_BYTES), name)

    def double(self, name: str) -> float:
        start = self.pos
        value = float(_F64.unpack(self.take(8, name))[0])
        if not math.isfinite(value):
            self.pos = start
            self.fail("nonFiniteTimestamp", name)
        return value

    def flags(self, allowed: int, name: str) -> int:
        value = self.byte(name)
        if value & ~allowed:
            self.pos -= 1
            self.fail("reservedFlagsSet", f"{name} 0x{value:02x}")
        return value

    def metadata(self) -> Metadata:
        version = self.protocol_version()
        session = self.uuid("sessionID")
        flags = self.flags(0x03, "metadata flags")
        feature = self.string("featureID")
        source = self.string("sourcePeerID")
        event = self.uuid("eventID")
        sequence = self.varint("sequence")
        wire_causal = self.double("causalTimestamp")
        monotonic = self.double("monotonicTimestamp") if flags & 1 else None
        payload_type = self.string("payloadType")
        acknowledged = self.varint("acknowledgedSequence") if flags & 2 else None
        return Metadata(session_id=session, feature_id=feature, source_peer_id=source, event_id=event,
                        sequence=sequence, causal_timestamp=from_reference_seconds(wire_causal), payload_type=payload_type,
                        protocol_version=version, monotonic_timestamp=monotonic,
                        acknowledged_sequence=acknowledged, causal_reference_seconds=wire_causal)

    def end(self) -> None:
        if self.pos != len(self.data):
            self.fail("trailingBytes", f"{len(self.data) - self.pos} bytes after the message")


def decode_envelope(data: bytes) -> Envelope:
    """Decodes one envelope; raises `WireFormatError`."""
    r = _Reader(data, KIND_ENVELOPE)
    metadata = r.metadata()
    payload = r.payload("payload")
    r.end()
    return Envelope(metadata=metadata, payload=payload)


def decode_snapshot(data: bytes) -> Snapshot:
    """Decodes one snapshot; raises `WireFormatError`."""
    r = _Reader(data, KIND_SNAPSHOT)
    metadata = r.metadata()
    revision = r.varint("revision")
    count = r.varint("reflected peer count")
    if count > MAX_REFLECTED_PEERS:
        r.fail("limitExceeded", f"{count} reflected peers, limit {MAX_REFLECTED_PEERS}")
    reflected: Dict[str, int] = {}
    previous: Optional[bytes] = None
    for _ in range(count):
        peer = r.string("reflectedSequences peer id")
        key = peer.encode("utf-8")
        if previous is not None and key <= previous:
            r.fail("unsortedPeers", "reflectedSequences peer ids are not strictly ascending")
        previous = key
        reflected[peer] = r.varint("reflected sequence")
    state = r.payload("state")
    r.end()
    return Snapshot(metadata=metadata, revision=revision, state=state, reflected_sequences=reflected)


def decode_snapshot_request(data: bytes) -> SnapshotRequest:
    """Decodes one snapshot request; raises `WireFormatError`."""
    r = _Reader(data, KIND_SNAPSHOT_REQUEST)
    version = r.protocol_version()
    session = r.uuid("sessionID")
    flags = r.flags(0x0F, "request flags")
    requesting = r.string("requestingPeerID")
    feature = r.string("featureID") if flags & 1 else None
    target = r.string("targetPeerID") if flags & 2 else None
    expected = r.varint("expectedSequence") if flags & 4 else None
    received = r.varint("receivedSequence") if flags & 8 else None
    r.end()
    return SnapshotRequest(session_id=session, requesting_peer_id=requesting, feature_id=feature,
                           target_peer_id=target, expected_sequence=expected, received_sequence=received,
                           protocol_version=version)

