"""Typed exceptions: one class per daemon error code (docs/LOCAL-API.md §5 and §9).

Every exception is a `MeshError`. Errors the daemon sent are `DaemonError`s whose `code` is the
daemon's stable code and whose `message` is its text for people; `error_for_code` maps a code to
its class (an unknown code gives a plain `DaemonError`, so a newer daemon never breaks a client).
Errors of the connection itself are `DaemonUnreachableError` (no daemon at the socket) and
`ConnectionLostError` (the connection closed before the reply came); both are also the built-in
`ConnectionError`, so `except ConnectionError` catches them. Errors that say something named
does not exist (`NotFoundError`, `UnknownPeerError`) are also `LookupError`s.
"""
from __future__ import annotations

from typing import Dict, Optional, Type

__all__ = [
    "MeshError", "DaemonError", "DaemonUnreachableError", "ConnectionLostError", "ProtocolViolationError",
    "ClientTimeoutError",
    "FrameError", "BadRequestError", "TooManyRequestsError", "TooManyConnectionsError", "ShuttingDownError",
    "ConnectionTimedOutError", "TooManyPingsError",
    "UnknownOperationError", "UnsupportedBodyError", "InvalidArgumentError", "InternalError",
    "UnknownPeerError", "PeerNotActiveError", "NotRunningError", "StoppingError", "NotImplementedByDaemonError",
    "NotPermittedError",
    "PairingError", "PairingExpiredError", "PairingCodeInvalidatedError", "PairingCancelledError",
    "PairingReplacedError", "PairingCodeUsedError", "PairingBusyError", "PairingFailedError", "InvalidCodeError",
    "UnreachableError", "PairingRefusedError", "InviterNotFoundError", "DiscoveryOffError",
    "AlreadyPairedError", "InviterAmbiguousError",
    "DeliveryError", "QueueFullError", "NotFoundError", "SessionClosedError", "StoreFailedError",
    "DeliveryUnavailableError", "TooManyAttachmentsError", "FeatureNotAllowedError", "NotAttachedError",
    "ERROR_CLASSES", "error_for_code",
]


class MeshError(Exception):
    """Base of every error this package raises (besides `ValueError`/`TypeError` for bad arguments)."""

    code: str = "client"

    def __init__(self, message: str, code: Optional[str] = None, operation: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.operation = operation

    def __str__(self) -> str:
        where = f"{self.operation}: " if self.operation else ""
        return f"{where}{self.message} ({self.code})"


class DaemonUnreachableError(MeshError, ConnectionError):
    """No daemon answers at the socket (not running, wrong path, or no permission)."""

    code = "unreachable-daemon"


class ConnectionLostError(MeshError, ConnectionError):
    """The connection to the daemon closed before the reply came.

    The request may or may not have taken effect. The client reconnects by itself on the next call.
    """

    code = "connection-lost"


class ProtocolViolationError(MeshError):
    """The daemon sent something that does not follow the local API (a bug on one side)."""

    code = "protocol-violation"


class ClientTimeoutError(MeshError, TimeoutError):
    """A call's `timeout` passed before the daemon answered (or before it could be reached again)."""

    code = "timeout"


class DaemonError(MeshError):
    """The daemon answered with an error frame. `code` is stable, `message` is for people."""

    code = "daemon"

    #: Whether the daemon closes the connection after this error (the client then reconnects).
    closes_connection = False


# Connection-level errors (the daemon closes the connection after them).
class FrameError(DaemonError):
    """The daemon could not read a frame (bad-magic, unsupported-version, bad-frame, frame-too-large, unexpected-kind)."""

    closes_connection = True


class BadRequestError(DaemonError):
    """A body was not valid for its operation (`bad-request`); the connection closed."""

    code, closes_connection = "bad-request", True


class TooManyRequestsError(DaemonError):
    """More than 8192 requests waited on one connection (`too-many-requests`)."""

    code, closes_connection = "too-many-requests", True


class TooManyConnectionsError(DaemonError):
    """The daemon refused the connection (`too-many-connections`): it already serves 128 local
    connections in all, or 32 of this uid (`api_max_connections_per_uid`); the message says which.
    Close some connections and retry."""

    code, closes_connection = "too-many-connections", True


class ShuttingDownError(DaemonError):
    """The daemon is stopping (`shutting-down`)."""

    code, closes_connection = "shutting-down", True


class ConnectionTimedOutError(DaemonError):
    """The daemon closed a connection that sent no whole request within 30 s of connecting, or left
    a frame half-sent for 30 s (`timed-out`). The client reconnects; a request it was writing is
    not delivered."""

    code, closes_connection = "timed-out", True


class UnknownOperationError(DaemonError):
    """The daemon does not implement this operation (`unknown-operation`): an older daemon."""

    code = "unknown-operation"


class UnsupportedBodyError(DaemonError):
    """Binary body where JSON was expected or the reverse (`unsupported-body`)."""

    code = "unsupported-body"


class InvalidArgumentError(DaemonError):
    """A field was out of range or empty (`invalid-argument`)."""

    code = "invalid-argument"


class InternalError(DaemonError):
    """The daemon failed unexpectedly (`internal`); see its log."""

    code = "internal"


class UnknownPeerError(DaemonError, LookupError):
    """No paired device matches the ID (`unknown-peer`)."""

    code = "unknown-peer"


class PeerNotActiveError(DaemonError):
    """The device has no active channel (`peer-not-active`)."""

    code = "peer-not-active"


class NotRunningError(DaemonError):
    """The daemon's network service is not running yet (`not-running`)."""

    code = "not-running"


class StoppingError(DaemonError):
    """The daemon is stopping (`stopping`)."""

    code = "stopping"


class NotImplementedByDaemonError(DaemonError):
    """The operation exists but this daemon build cannot do it (`not-implemented`)."""

    code = "not-implemented"


class NotPermittedError(DaemonError):
    """The caller's uid may not run this operation (`not-permitted`)."""

    code = "not-permitted"


class PairingError(DaemonError):
    """Base of the pairing errors."""


class PairingExpiredError(PairingError):
    """The code expired; create a new one (`pairing-expired`)."""

    code = "pairing-expired"


class PairingCodeInvalidatedError(PairingError):
    """Too many failed attempts; create a new code (`pairing-code-invalidated`)."""

    code = "pairing-code-invalidated"


class PairingCancelledError(PairingError):
    """The code was cancelled (`pairing-cancelled`)."""

    code = "pairing-cancelled"


class PairingReplacedError(PairingError):
    """A newer code replaced this one (`pairing-replaced`)."""

    code = "pairing-replaced"


class PairingCodeUsedError(PairingError):
    """The code was already used (`pairing-code-used`)."""

    code = "pairing-code-used"


class PairingBusyError(PairingError):
    """Another device is trying this code right now; retry in a few seconds (`pairing-busy`)."""

    code = "pairing-busy"


class PairingFailedError(PairingError):
    """The code did not match (`pairing-failed`)."""

    code = "pairing-failed"


class InvalidCodeError(PairingError):
    """The code is malformed or not the live one (`invalid-code`)."""

    code = "invalid-code"


class UnreachableError(PairingError):
    """No daemon answered at the address given to `join_pairing` (`unreachable`)."""

    code = "unreachable"


class PairingRefusedError(PairingError):
    """The inviter closed the pairing without completing it (`pairing-refused`)."""

    code = "pairing-refused"


class InviterNotFoundError(PairingError):
    """No device advertises the code over mDNS; pass an address (`inviter-not-found`)."""

    code = "inviter-not-found"


class DiscoveryOffError(PairingError):
    """The daemon runs without mDNS; pass an address (`discovery-off`)."""

    code = "discovery-off"


class AlreadyPairedError(PairingError):
    """The other device is already paired with this one and `replace` was not given (`already-paired`).

    The message names the device; pair again with `replace=True` on the side that must replace it.
    """

    code = "already-paired"


class InviterAmbiguousError(PairingError):
    """More than two services advertise the code's hint; the message lists them; pass an address
    (`inviter-ambiguous`)."""

    code = "inviter-ambiguous"


class DeliveryError(DaemonError):
    """Base of the data-operation errors."""


class QueueFullError(DeliveryError):
    """The outbox is full; nothing queued was lost (`queue-full`)."""

    code = "queue-full"


class NotFoundError(DeliveryError, LookupError):
    """No such snapshot or queued item (`not-found`)."""

    code = "not-found"


class SessionClosedError(DeliveryError):
    """The session was closed; a new session needs a new UUID (`session-closed`)."""

    code = "session-closed"


class StoreFailedError(DeliveryError):
    """The daemon's durable store failed (`store-failed`)."""

    code = "store-failed"


class DeliveryUnavailableError(DeliveryError):
    """The daemon runs without its delivery router (`delivery-unavailable`)."""

    code = "delivery-unavailable"


class TooManyAttachmentsError(DeliveryError):
    """The connection already has 256 attachments (`too-many-attachments`)."""

    code = "too-many-attachments"


class FeatureNotAllowedError(DeliveryError):
    """The daemon's `feature_allow` list gives this uid no access to the feature (`feature-not-allowed`)."""

    code = "feature-not-allowed"


class NotAttachedError(DeliveryError):
    """Reserved code `not-attached`: no operation of this daemon version needs an attachment, so
    it never sends it; kept so a client written against it keeps importing."""

    code = "not-attached"


class TooManyPingsError(DaemonError):
    """This uid already has 4 `ping` requests running (`too-many-pings`); wait for one to end."""

    code = "too-many-pings"


ERROR_CLASSES: Dict[str, Type[DaemonError]] = {
    "bad-magic": FrameError, "unsupported-version": FrameError, "bad-frame": FrameError,
    "frame-too-large": FrameError, "unexpected-kind": FrameError,
}
for _cls in (BadRequestError, TooManyRequestsError, TooManyConnectionsError, ShuttingDownError,
             ConnectionTimedOutError, TooManyPingsError,
             UnknownOperationError, UnsupportedBodyError, InvalidArgumentError, InternalError,
             UnknownPeerError, PeerNotActiveError, NotRunningError, StoppingError,
             NotImplementedByDaemonError, NotPermittedError, PairingExpiredError,
             PairingCodeInvalidatedError, PairingCancelledError, PairingReplacedError,
             PairingCodeUsedError, PairingBusyError, PairingFailedError, InvalidCodeError,
             UnreachableError, PairingRefusedError, InviterNotFoundError, DiscoveryOffError,
             AlreadyPairedError, InviterAmbiguousError, QueueFullError, NotFoundError, SessionClosedError, StoreFailedError,
             DeliveryUnavailableError, TooManyAttachmentsError, FeatureNotAllowedError, NotAttachedError):
    ERROR_CLASSES[_cls.code] = _cls
del _cls


def error_for_code(code: str, message: str, operation: Optional[str] = None) -> DaemonError:
    """The typed exception for a daemon error body (`DaemonError` for a code this client does not know)."""
    cls = ERROR_CLASSES.get(code, DaemonError)
    return cls(message, code=code, operation=operation)
