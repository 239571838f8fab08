"""The envelope/snapshot encoding against docs/ENCODING.md, without a daemon."""
import os
import random
import sys
import unittest
import uuid

from sessionmesh import encoding as E
from sessionmesh.socketpath import SYSTEM_SOCKET, default_socket_path, user_socket_path

SEED = int(os.environ.get("MESH_TEST_SEED", random.randrange(1 << 30)))


def metadata(**changes):
    base = dict(session_id=uuid.UUID("5E551011-0000-4000-8000-000000000001"), feature_id="tally",
                source_peer_id="a", event_id=uuid.UUID("00112233-4455-6677-8899-aabbccddeeff"), sequence=300,
                causal_timestamp=1700000000.0, payload_type="TallyEvent")
    base.update(changes)
    return E.Metadata(**base)


class EncodingTests(unittest.TestCase):
    def test_the_documented_example_encodes_byte_for_byte(self):
        data = E.encode_envelope(E.Envelope(metadata(), b"\xaa"))
        expected = bytes.fromhex("534D0101" "01" "5E551011000040008000000000000001" "00" "057461 6C6C79"
                                 "0161" "00112233445566778899AABBCCDDEEFF" "AC02" "41C5821440000000"
                                 "0A54616C6C794576656E74" "01AA".replace(" ", ""))
        self.assertEqual(data, expected)
        self.assertEqual(E.decode_envelope(data), E.Envelope(metadata(), b"\xaa"))

    def test_optional_fields_and_snapshots_round_trip(self):
        m = metadata(monotonic_timestamp=12.5, acknowledged_sequence=7, protocol_version=3)
        self.assertEqual(E.decode_envelope(E.encode_envelope(E.Envelope(m, b""))).metadata, m)
        snap = E.Snapshot(m, revision=2**64 - 1, state=b"state", reflected_sequences={"b": 2, "a": 1, "é": 3})
        data = E.encode_snapshot(snap)
        self.assertEqual(E.decode_snapshot(data), snap)
        request = E.SnapshotRequest(session_id=uuid.uuid4(), requesting_peer_id="x", feature_id="f",
                                    target_peer_id=None, expected_sequence=5, received_sequence=None)
        self.assertEqual(E.decode_snapshot_request(E.encode_snapshot_request(request)), request)

    def test_malformed_input_is_refused_with_a_code(self):
        good = E.encode_envelope(E.Envelope(metadata(), b"xy"))
        cases = {
            "truncated": good[:-1],
            "trailingBytes": good + b"\x00",
            "badMagic": b"XM" + good[2:],
            "unsupportedFormatVersion": good[:2] + b"\x02" + good[3:],
            "unexpectedKind": good[:3] + b"\x02" + good[4:],
            "unknownKind": good[:3] + b"\x09" + good[4:],
            "reservedFlagsSet": good[:21] + b"\x04" + good[22:],
            "malformedVarint": good[:4] + b"\x81\x00" + good[5:],
        }
        for code, data in cases.items():
            with self.subTest(code=code):
                with self.assertRaises(E.WireFormatError) as caught:
                    E.decode_envelope(data)
                self.assertEqual(caught.exception.code, code)
        unsorted = bytearray(E.encode_snapshot(E.Snapshot(metadata(), 1, b"", {"a": 1, "b": 2})))
        index = unsorted.index(b"\x01a\x01\x01b")
        unsorted[index + 1], unsorted[index + 4] = ord("b"), ord("a")
        with self.assertRaises(E.WireFormatError) as caught:
            E.decode_snapshot(bytes(unsorted))
        self.assertEqual(caught.exception.code, "unsortedPeers")

    def test_values_the_decoder_would_refuse_are_not_encoded(self):
        for bad in (metadata(causal_timestamp=float("nan")), metadata(sequence=-1), metadata(sequence=2**64),
                    metadata(feature_id="x" * 1025), metadata(protocol_version=2**31)):
            with self.subTest(bad=bad):
                with self.assertRaises(E.WireFormatError):
                    E.encode_envelope(E.Envelope(bad, b""))

    def test_random_mutations_never_crash_and_accepted_input_re_encodes_to_itself(self):
        print(f"\nMESH_TEST_SEED={SEED}", file=sys.stderr)
        rng = random.Random(SEED)
        seeds = [E.encode_envelope(E.Envelope(metadata(monotonic_timestamp=1.0), b"payload")),
                 E.encode_snapshot(E.Snapshot(metadata(), 9, b"s", {"p": 1, "q": 2}))]
        accepted = 0
        for _ in range(3000):
            data = bytearray(rng.choice(seeds))
            for _ in range(rng.randint(1, 4)):
                position = rng.randrange(len(data))
                data[position] = rng.randrange(256)
            data = bytes(data[:rng.randint(0, len(data))]) if rng.random() < 0.2 else bytes(data)
            for decode, encode in ((E.decode_envelope, E.encode_envelope), (E.decode_snapshot, E.encode_snapshot)):
                try:
                    value = decode(data)
                except E.WireFormatError:
                    continue
                accepted += 1
                self.assertEqual(encode(value), data, f"seed {SEED}")
        self.assertGreater(accepted, 0)


class SocketPathTests(unittest.TestCase):
    def test_the_lookup_order_is_meshctls(self):
        self.assertEqual(user_socket_path({"XDG_RUNTIME_DIR": "/r", "XDG_STATE_HOME": "/s", "HOME": "/h"}),
                         "/r/sessionmesh/meshd.sock")
        self.assertEqual(user_socket_path({"XDG_STATE_HOME": "/s", "HOME": "/h"}), "/s/sessionmesh/meshd.sock")
        self.assertEqual(user_socket_path({"XDG_RUNTIME_DIR": "relative", "HOME": "/h"}),
                         "/h/.local/state/sessionmesh/meshd.sock")
        self.assertIsNone(user_socket_path({}))
        self.assertEqual(default_socket_path({"XDG_RUNTIME_DIR": "/nonexistent-dir"}), SYSTEM_SOCKET)

    def test_an_existing_user_socket_wins(self):
        import tempfile
        with tempfile.TemporaryDirectory() as runtime:
            os.makedirs(os.path.join(runtime, "sessionmesh"))
            path = os.path.join(runtime, "sessionmesh", "meshd.sock")
            open(path, "w").close()
            self.assertEqual(default_socket_path({"XDG_RUNTIME_DIR": runtime}), path)


if __name__ == "__main__":
    unittest.main()
