"""The client against a scripted fake daemon: what a real one rarely does on demand."""
import json
import os
import socket
import struct
import tempfile
import threading
import time
import unittest

import sessionmesh

HEADER = struct.Struct(">HBBHHII")


def frame(kind, op, rid, body=b"", flags=0):
    if isinstance(body, dict):
        body = json.dumps(body).encode()
    return HEADER.pack(0x534D, 1, kind, op, flags, rid, len(body)) + body


class FakeDaemon:
    """Accepts connections on a Unix socket; `script(conn, op, rid, body)` answers each request."""

    def __init__(self, script):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "fake.sock")
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(self.path)
        self.server.listen(8)
        self.script = script
        self.connections = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._handle, args=(conn, self.connections), daemon=True).start()

    def _handle(self, conn, number):
        with conn:
            buffer = b""
            while True:
                while len(buffer) < 16:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buffer += chunk
                _, _, _, op, _, rid, length = HEADER.unpack(buffer[:16])
                while len(buffer) < 16 + length:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buffer += chunk
                body, buffer = buffer[16:16 + length], buffer[16 + length:]
                if self.script(conn, op, rid, body, number) == "close":
                    return

    def close(self):
        self.server.close()
        self.dir.cleanup()


class ProtocolTests(unittest.TestCase):
    def fake(self, script):
        daemon = FakeDaemon(script)
        self.addCleanup(daemon.close)
        return daemon

    def test_a_shutting_down_daemon_is_retried_for_safe_calls_only(self):
        def script(conn, op, rid, body, number):
            if number == 1 or op == 0x0010:
                conn.sendall(frame(4, 0, 0, {"code": "shutting-down", "message": "meshd is stopping"}))
                return "close"
            conn.sendall(frame(2, op, rid, {"deviceID": "AAAAAAA-B", "name": "n", "counters": {}}))
        daemon = self.fake(script)
        client = sessionmesh.connect(daemon.path, reconnect_timeout=5)
        self.addCleanup(client.close)
        self.assertEqual(client.status().device_id, "AAAAAAA-B")
        self.assertEqual(daemon.connections, 2)
        with self.assertRaises(sessionmesh.ShuttingDownError) as caught:
            client.create_pairing_code()
        self.assertEqual(caught.exception.operation, "pair.create")

    def test_error_codes_become_typed_exceptions_and_the_connection_stays(self):
        answers = {0x0003: {"code": "not-permitted", "message": "only root may list peers"},
                   0x0002: {"code": "brand-new-code", "message": "from the future"}}

        def script(conn, op, rid, body, number):
            if op in answers:
                conn.sendall(frame(4, op, rid, answers[op]))
            else:
                conn.sendall(frame(2, op, rid, b"not json"))
        daemon = self.fake(script)
        client = sessionmesh.connect(daemon.path)
        self.addCleanup(client.close)
        with self.assertRaises(sessionmesh.NotPermittedError):
            client.peers()
        with self.assertRaises(sessionmesh.DaemonError) as caught:
            client.status()
        self.assertEqual(caught.exception.code, "brand-new-code")
        with self.assertRaises(sessionmesh.ProtocolViolationError):
            client.queue()
        self.assertEqual(daemon.connections, 1)

    def test_an_event_that_does_not_decode_ends_the_attachment_with_an_error(self):
        def script(conn, op, rid, body, number):
            if op == 0x0100:
                conn.sendall(frame(2, op, rid, {"attachmentID": 1, "localDeviceID": "X", "peers": []}))
                conn.sendall(frame(3, 0x0183, rid, {"peer": "P", "reachable": True, "reason": "channel-active"}))
                conn.sendall(frame(3, 0x01FF, rid, b"future"))
                conn.sendall(frame(3, 0x0180, rid, b"\x00" * 5, flags=1))
        daemon = self.fake(script)
        client = sessionmesh.connect(daemon.path)
        self.addCleanup(client.close)
        with client.attach("f") as events:
            first = events.next_event(timeout=5)
            self.assertEqual((first.kind, first.from_device, first.reachable, first.feature),
                             ("reachability", "P", True, None))
            self.assertEqual(events.next_event(timeout=5).kind, "unknown-0x01ff")
            with self.assertRaises(sessionmesh.ProtocolViolationError):
                events.next_event(timeout=5)
            with self.assertRaises(sessionmesh.ProtocolViolationError):
                next(events)

    def test_a_connection_lost_while_attaching_is_retried_once_not_twice(self):
        def script(conn, op, rid, body, number):
            if op != 0x0100:
                return None
            if number == 2:  # 1 is the client's request connection
                return "close"  # the daemon went away before answering the attach
            conn.sendall(frame(2, op, rid, {"attachmentID": number, "localDeviceID": "X", "peers": []}))
            conn.sendall(frame(3, 0x00F0, 0, {"dropped": number}))
        daemon = self.fake(script)
        client = sessionmesh.connect(daemon.path, reconnect_timeout=5)
        self.addCleanup(client.close)
        with client.attach("f") as events:
            event = events.next_event(timeout=5)
            self.assertEqual((event.kind, event.dropped, events.attachment_id), ("dropped", 3, 3))
            with self.assertRaises(sessionmesh.ClientTimeoutError):
                events.next_event(timeout=0.5)
        self.assertEqual(daemon.connections, 3, "one request connection and two attach attempts")

    def test_closing_the_client_ends_its_threads(self):
        def script(conn, op, rid, body, number):
            reply = {"attachmentID": 1, "localDeviceID": "X", "peers": []} if op == 0x0100 else {"peers": []}
            conn.sendall(frame(2, op, rid, reply))
        daemon = self.fake(script)
        before = {t for t in threading.enumerate() if t.name.startswith("sessionmesh")}
        for _ in range(3):
            client = sessionmesh.connect(daemon.path)
            client.peers()
            client.attach("f")
            client.attach(["g", "h"])
            client.close()
        deadline = time.monotonic() + 10
        while {t for t in threading.enumerate() if t.name.startswith("sessionmesh")} - before:
            self.assertLess(time.monotonic(), deadline, "reader threads outlived their client")
            time.sleep(0.01)

    def test_a_call_timeout_and_a_daemon_that_never_answers(self):
        daemon = self.fake(lambda conn, op, rid, body, number: None)
        client = sessionmesh.connect(daemon.path)
        self.addCleanup(client.close)
        with self.assertRaises(sessionmesh.ClientTimeoutError):
            client.wait_for_pairing("ABCD-EFGH", timeout=0.2)
        with self.assertRaises(sessionmesh.ClientTimeoutError):
            client.attach("f", timeout=0.2)


class ModelTests(unittest.TestCase):
    def test_values_people_see(self):
        code = sessionmesh.PairingCode("K7Q2-9XWM", 1.0)
        self.assertNotIn("K7Q2", repr(code) + str(code))
        paused = sessionmesh.TimerAnchor(started_at=100.0, accumulated_elapsed_before_anchor=5.0, is_paused=True)
        running = sessionmesh.TimerAnchor(started_at=100.0, accumulated_elapsed_before_anchor=5.0)
        self.assertEqual((paused.elapsed(200.0), running.elapsed(110.0)), (5.0, 15.0))
        self.assertEqual(sessionmesh.TimerAnchor.from_json(running.to_json()), running)
        self.assertEqual(sessionmesh.Event(kind="snapshot").ack(), 0)


if __name__ == "__main__":
    unittest.main()
