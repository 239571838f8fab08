"""The notes example against two real daemons, as a user runs it."""
import os
import signal
import subprocess
import sys

from harness import MeshTestCase, wait_until

NOTES = os.path.join(os.path.dirname(__file__), "..", "examples", "notes.py")


class NotesExampleTests(MeshTestCase):
    def notes(self, daemon, *args, timeout=60):
        state = os.path.join(self.root, f"{daemon.name}-notes.json")
        result = subprocess.run([sys.executable, NOTES, "--socket", daemon.socket, "--state", state, *args],
                                capture_output=True, text=True, timeout=timeout)
        return result.returncode, result.stdout, result.stderr

    def test_notes_sent_while_a_device_is_off_arrive_once_and_the_snapshot_catches_up(self):
        self.pair()
        a = self.client(self.alpha)
        self.beta.kill(signal.SIGKILL)
        wait_until("alpha to see beta down", lambda: not a.peers()[0].active, timeout=20)
        for text in ("buy milk", "call Ana", "ship it"):
            code, out, err = self.notes(self.alpha, "add", text)
            self.assertEqual(code, 0, err)
            self.assertIn(f"sent to 1 device(s): {text}", out)
        self.beta.start()
        code, out, err = self.notes(self.beta, "watch", "--count", "3", "--timeout", "30")
        self.assertEqual(code, 0, err)
        self.assertEqual(out.splitlines(), ["note from alpha: buy milk", "note from alpha: call Ana",
                                            "note from alpha: ship it"])
        code, out, err = self.notes(self.beta, "watch", "--timeout", "1")
        self.assertEqual((code, out), (0, ""), "a note was shown twice")
        code, out, err = self.notes(self.beta, "show")
        self.assertEqual(code, 0, err)
        self.assertEqual(out.splitlines(), ["this device (0):", "alpha (3):", "  buy milk", "  call Ana", "  ship it"])

    def test_no_daemon_is_one_clear_line(self):
        code, out, err = self.notes(self.alpha, "show")
        self.assertEqual(code, 0, err)
        self.alpha.kill()
        code, out, err = self.notes(self.alpha, "show")
        self.assertEqual(code, 1)
        self.assertIn("cannot reach meshd at", err)
