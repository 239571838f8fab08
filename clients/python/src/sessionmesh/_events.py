"""Turns event frames (docs/LOCAL-API.md §9, "Events") into `Event` values."""
from __future__ import annotations

import uuid
from typing import Callable, Dict, List, Optional

from . import _frames as F
from .encoding import WireFormatError, decode_envelope, decode_snapshot, decode_snapshot_request
from .errors import ProtocolViolationError
from .models import EnvelopeMode, Event, Session, TimerAnchor, UnknownEventKind

Acker = Callable[[List[int]], int]

#: The wire's mode byte of an envelope event (docs/LOCAL-API.md §9).
_ENVELOPE_MODES: Dict[int, EnvelopeMode] = {1: "realtime", 2: "reliable", 5: "acknowledgement"}


def decode_event(frame: F.Frame, acker: Optional[Acker]) -> Event:
    """The typed event of one frame; raises `ProtocolViolationError` for a malformed one."""
    op = frame.op
    try:
        if op == F.EVENT_ENVELOPE:
            r = F.BodyReader(frame.body, "envelope event")
            flags = r.u8("flags")
            inbox_id = r.u64("inboxID")
            sender = r.string("from")
            mode = r.u8("mode")
            envelope = decode_envelope(r.rest())
            return Event(kind="envelope", feature=envelope.metadata.feature_id, from_device=sender,
                         payload=envelope.payload, mode=_ENVELOPE_MODES.get(mode),
                         redelivery=bool(flags & 1), inbox_id=inbox_id, metadata=envelope.metadata,
                         session_id=envelope.metadata.session_id, sequence=envelope.metadata.sequence,
                         _acker=acker)
        if op == F.EVENT_SNAPSHOT:
            r = F.BodyReader(frame.body, "snapshot event")
            sender = r.string("from")
            snap = decode_snapshot(r.rest())
            return Event(kind="snapshot", feature=snap.metadata.feature_id, from_device=sender, payload=snap.state,
                         revision=snap.revision, metadata=snap.metadata, session_id=snap.metadata.session_id,
                         reflected_sequences=snap.reflected_sequences, sequence=snap.metadata.sequence)
        if op == F.EVENT_SNAPSHOT_REQUEST:
            r = F.BodyReader(frame.body, "snapshot.request event")
            sender = r.string("from")
            request = decode_snapshot_request(r.rest())
            return Event(kind="snapshot_request", feature=request.feature_id, from_device=sender, request=request,
                         session_id=request.session_id)
        if op not in (F.EVENT_REACHABILITY, F.EVENT_ANCHOR, F.EVENT_SESSION, F.EVENT_WATERMARK, F.EVENT_DROPPED):
            # An event a newer daemon added: handed on undecoded rather than ending the attachment.
            return Event(kind=UnknownEventKind(f"unknown-0x{op:04x}"), payload=frame.body)
        body = frame.json()
        if op == F.EVENT_REACHABILITY:
            return Event(kind="reachability", feature=body.get("featureID"), from_device=str(body.get("peer", "")),
                         reachable=bool(body.get("reachable", False)), reason=body.get("reason"), raw=body)
        if op == F.EVENT_ANCHOR:
            return Event(kind="anchor", feature=str(body.get("featureID", "")), from_device=body.get("from"),
                         anchor=TimerAnchor.from_json(body.get("anchor", {})), revision=int(body.get("revision", 0)),
                         session_id=uuid.UUID(str(body["sessionID"])), raw=body)
        if op == F.EVENT_SESSION:
            session = Session.from_json(body)
            return Event(kind="session", feature=session.feature, from_device=session.source_peer, session=session,
                         change=body.get("change"), session_id=session.session_id, revision=session.revision, raw=body)
        if op == F.EVENT_WATERMARK:
            return Event(kind="watermark", feature=str(body.get("featureID", "")), from_device=body.get("peer"),
                         sequence=int(body.get("sequence", 0)), session_id=uuid.UUID(str(body["sessionID"])), raw=body)
        return Event(kind="dropped", dropped=int(body.get("dropped", 0)), raw=body)
    except WireFormatError as error:
        raise ProtocolViolationError(f"an event of kind 0x{op:04x} does not decode: {error}") from None
    except (KeyError, TypeError, ValueError) as error:
        raise ProtocolViolationError(f"an event of kind 0x{op:04x} lacks or mistypes a field: {error!r}") from None
