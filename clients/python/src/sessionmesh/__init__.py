"""SessionMesh for Python: keep an app in step across your devices through the local `meshd`.

    import sessionmesh
    client = sessionmesh.connect()                       # the socket meshctl uses, or connect(path)
    client.send("notes", b"hello", mode="reliable")      # to every paired device
    with client.attach(["notes"]) as events:
        for event in events:
            if event.kind == "envelope":
                print(event.from_device, event.payload)
                event.ack()

Standard library only. `sessionmesh.aio` has the asyncio client (`await sessionmesh.aio.connect()`).
The package logs reconnects and retries to the `logging` logger `"sessionmesh"`.
The whole reference is docs/PYTHON.md.
"""
from .aio import AsyncAttachment, AsyncClient, connect_async
from .client import Attachment, Client, connect
from .encoding import Envelope, Metadata, Snapshot, SnapshotRequest, WireFormatError
from .errors import *  # noqa: F401,F403  (every exception class is part of the API)
from .errors import __all__ as _error_names
from ._version import __version__
from .models import (AttachedPeer, DeviceRef, EnvelopeMode, Event, EventKind, Hello, LatestSnapshot, PairedDevice, PairingCode, Peer, PeerAddress,
                     PingPath, PingResult, PublishResult, QueueItem, SendResult, Session, SessionCloseResult, Status,
                     TimerAnchor, SendMode, UnknownEventKind)
from ._operations import default_session
from .socketpath import SYSTEM_SOCKET, default_socket_path, user_socket_path

__all__ = [
    "connect", "connect_async", "Client", "AsyncClient", "Attachment", "AsyncAttachment",
    "Envelope", "Metadata", "Snapshot", "SnapshotRequest", "WireFormatError",
    "AttachedPeer", "DeviceRef", "Event", "Hello", "LatestSnapshot", "PairedDevice", "PairingCode", "Peer", "PeerAddress",
    "PingPath", "PingResult", "PublishResult", "QueueItem", "SendResult", "Session", "SessionCloseResult", "Status",
    "TimerAnchor", "SendMode", "EnvelopeMode", "EventKind", "UnknownEventKind", "__version__", "default_session", "SYSTEM_SOCKET", "default_socket_path", "user_socket_path",
] + list(_error_names)
