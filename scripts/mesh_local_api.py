#!/usr/bin/env python3
"""A minimal SessionMesh local API client, written from docs/LOCAL-API.md alone.

Usage:  mesh_local_api.py [--socket PATH] OPERATION [JSON-BODY]
        e.g. mesh_local_api.py --socket /tmp/a.sock status
             mesh_local_api.py --socket /tmp/a.sock ping '{"deviceID": "ABCD", "count": 20}'
Prints the reply body as JSON. Exit status: 0 ok, 1 the daemon answered with an error
(printed as {"error": {...}}), 3 the daemon cannot be reached.
"""
import json
import os
import socket
import struct
import sys

MAGIC = 0x534D            # "SM"
VERSION = 1
HEADER = struct.Struct(">HBBHHII")  # magic, version, kind, op, flags, request id, body length
KIND_REQUEST, KIND_REPLY, KIND_EVENT, KIND_ERROR = 1, 2, 3, 4
OPS = {
    "hello": 0x0001, "status": 0x0002, "peers": 0x0003,
    "pair.create": 0x0010, "pair.wait": 0x0011, "pair.cancel": 0x0012, "pair.join": 0x0013,
    "unpair": 0x0014, "ping": 0x0020,
}


class MeshError(Exception):
    """The daemon answered with an error frame."""

    def __init__(self, code, message):
        super().__init__(f"{message} ({code})")
        self.code, self.message = code, message


class MeshLocalAPI:
    """One connection to meshd; call request() for each operation."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.next_id = 1
        self.buffer = b""

    def close(self):
        self.sock.close()

    def _read_exact(self, n):
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("meshd closed the connection")
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def read_frame(self):
        """Returns (kind, op, request_id, body_bytes) of the next frame."""
        magic, version, kind, op, flags, rid, length = HEADER.unpack(self._read_exact(HEADER.size))
        if magic != MAGIC or version != VERSION:
            raise ConnectionError("not a SessionMesh local API stream")
        return kind, op, rid, self._read_exact(length)

    def request(self, operation, body=None):
        """Sends one request and returns the decoded JSON reply; raises MeshError."""
        rid = self.next_id
        self.next_id += 1
        payload = json.dumps(body or {}).encode()
        self.sock.sendall(HEADER.pack(MAGIC, VERSION, KIND_REQUEST, OPS[operation], 0, rid, len(payload)) + payload)
        while True:
            kind, op, reply_id, data = self.read_frame()
            if kind == KIND_EVENT:
                continue  # no subscriptions in this client
            if kind == KIND_ERROR and reply_id in (rid, 0):
                error = json.loads(data)
                raise MeshError(error["code"], error["message"])
            if kind == KIND_REPLY and reply_id == rid:
                return json.loads(data)


def default_socket():
    """The user daemon's socket if present (as meshctl looks for it), else the system one."""
    env = os.environ
    state = env.get("XDG_STATE_HOME") or os.path.join(env.get("HOME", "/nonexistent"), ".local/state")
    user = (os.path.join(env["XDG_RUNTIME_DIR"], "sessionmesh") if env.get("XDG_RUNTIME_DIR")
            else os.path.join(state, "sessionmesh"))
    user_socket = os.path.join(user, "meshd.sock")
    return user_socket if os.path.exists(user_socket) else "/run/sessionmesh/meshd.sock"


def main(argv):
    path = default_socket()
    if len(argv) >= 2 and argv[0] == "--socket":
        path, argv = argv[1], argv[2:]
    if not argv or argv[0] not in OPS:
        print(__doc__, file=sys.stderr)
        print("operations: " + ", ".join(OPS), file=sys.stderr)
        return 2
    try:
        body = json.loads(argv[1]) if len(argv) > 1 else {}
    except ValueError as error:
        print(f"the request body is not valid JSON: {error}", file=sys.stderr)
        return 2
    try:
        client = MeshLocalAPI(path)
    except OSError as error:
        print(f"cannot reach meshd at {path}: {error.strerror} (is meshd running?)", file=sys.stderr)
        return 3
    try:
        print(json.dumps(client.request(argv[0], body), indent=2, sort_keys=True))
        return 0
    except MeshError as error:
        print(json.dumps({"error": {"code": error.code, "message": error.message}}))
        return 1
    except ConnectionError as error:
        print(f"meshd: {error}", file=sys.stderr)
        return 3
    finally:
        client.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
