"""Local API framing (docs/LOCAL-API.md §2, §3) and the binary bodies of §9."""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any, Dict, Tuple

from .errors import InvalidArgumentError, ProtocolViolationError

MAGIC = 0x534D
VERSION = 1
HEADER = struct.Struct(">HBBHHII")  # magic, version, kind, op, flags, request id, body length
KIND_REQUEST, KIND_REPLY, KIND_EVENT, KIND_ERROR = 1, 2, 3, 4
FLAG_BINARY = 0x0001
MAX_BODY = 1_048_576
#: An envelope or snapshot in `send` / `snapshot.publish` (1 MiB less 128).
MAX_MESSAGE = MAX_BODY - 128

OPS: Dict[str, int] = {
    "hello": 0x0001, "status": 0x0002, "peers": 0x0003,
    "pair.create": 0x0010, "pair.wait": 0x0011, "pair.cancel": 0x0012, "pair.join": 0x0013,
    "unpair": 0x0014, "ping": 0x0020,
    "attach": 0x0100, "send": 0x0101, "snapshot.publish": 0x0102, "snapshot.request": 0x0103,
    "snapshot.latest": 0x0104, "anchor.set": 0x0105, "session.announce": 0x0106, "session.close": 0x0107,
    "sessions": 0x0108, "inbox.ack": 0x0109, "queue": 0x010A, "queue.cancel": 0x010B, "watermark.set": 0x010C,
}
OP_NAMES = {code: name for name, code in OPS.items()}

EVENT_ENVELOPE, EVENT_SNAPSHOT, EVENT_SNAPSHOT_REQUEST = 0x0180, 0x0181, 0x0182
EVENT_REACHABILITY, EVENT_ANCHOR, EVENT_SESSION, EVENT_WATERMARK = 0x0183, 0x0184, 0x0185, 0x0186
EVENT_DROPPED = 0x00F0

MODES: Dict[str, int] = {"realtime": 1, "reliable": 2, "acknowledgement": 5, "ack": 5}
MODE_NAMES: Dict[int, str] = {1: "realtime", 2: "reliable", 3: "snapshot-request", 4: "latest-snapshot", 5: "acknowledgement"}


@dataclass(frozen=True)
class Frame:
    kind: int
    op: int
    flags: int
    request_id: int
    body: bytes

    @property
    def binary(self) -> bool:
        return bool(self.flags & FLAG_BINARY)

    def json(self) -> Dict[str, Any]:
        if self.binary:
            raise ProtocolViolationError(f"{OP_NAMES.get(self.op, hex(self.op))} answered with a binary body where JSON was expected")
        if not self.body:
            return {}
        try:
            value = json.loads(self.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as error:
            raise ProtocolViolationError(f"the daemon sent a body that is not JSON: {error}") from None
        if not isinstance(value, dict):
            raise ProtocolViolationError("the daemon sent a JSON body that is not an object")
        return value


def encode_frame(op: int, request_id: int, body: bytes, binary: bool) -> bytes:
    if len(body) > MAX_BODY:
        raise InvalidArgumentError(f"the request body is {len(body)} bytes, over the {MAX_BODY}-byte frame limit",
                                   operation=OP_NAMES.get(op))
    return HEADER.pack(MAGIC, VERSION, KIND_REQUEST, op, FLAG_BINARY if binary else 0, request_id, len(body)) + body


def json_body(value: Dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


def pack_str(value: str, field: str) -> bytes:
    """A binary body's string: `u8 length | UTF-8` (at most 255 bytes)."""
    data = value.encode("utf-8")
    if len(data) > 255:
        raise InvalidArgumentError(f"'{field}' is {len(data)} bytes; at most 255 fit")
    return bytes([len(data)]) + data


class BodyReader:
    """Reads a binary event or reply body; a short body raises `ProtocolViolationError`."""

    def __init__(self, data: bytes, what: str) -> None:
        self.data, self.pos, self.what = data, 0, what

    def _take(self, count: int, field: str) -> bytes:
        if len(self.data) - self.pos < count:
            raise ProtocolViolationError(f"{self.what}: the body ends inside '{field}'")
        chunk = self.data[self.pos:self.pos + count]
        self.pos += count
        return chunk

    def u8(self, field: str) -> int:
        return self._take(1, field)[0]

    def u64(self, field: str) -> int:
        return int.from_bytes(self._take(8, field), "big")

    def string(self, field: str) -> str:
        data = self._take(self.u8(field + " length"), field)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolViolationError(f"{self.what}: '{field}' is not UTF-8") from None

    def rest(self) -> bytes:
        chunk = self.data[self.pos:]
        self.pos = len(self.data)
        return chunk


def split_header(header: bytes) -> Tuple[int, int, int, int, int, int, int]:
    return HEADER.unpack(header)
