"""The notes example against two real daemons, as a user runs it."""
import json
import os
import signal
import subprocess
import sys
import time
import unittest

from harness import MeshTestCase, wait_until

NOTES = os.path.join(os.path.dirname(__file__), "..", "examples", "notes.py")
TIMER = os.path.join(os.path.dirname(__file__), "..", "examples", "shared_timer.py")


class SharedTimerHelpTests(unittest.TestCase):
    def test_shared_timer_help_lists_its_commands(self):
        result = subprocess.run([sys.executable, TIMER, "--help"], capture_output=True, text=True, timeout=60,
                                env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
        self.assertEqual(result.returncode, 0, result.stderr)
        for command in ("start", "pause", "resume", "lap", "show [MICROS]", "close", "quit"):
            self.assertIn(f"\n  {command} ", result.stdout)


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
        # A note that came without a newer snapshot (sent by another app of the feature): show
        # merges what watch received with the snapshot, each note once, oldest first.
        a.send("notes", json.dumps({"text": "sent alone", "at": time.time()}).encode(), mode="reliable")
        code, out, err = self.notes(self.beta, "watch", "--count", "1", "--timeout", "30")
        self.assertEqual((code, out.splitlines()), (0, ["note from alpha: sent alone"]), err)
        code, out, err = self.notes(self.beta, "show")
        self.assertEqual(out.splitlines(), ["this device (0):", "alpha (4):", "  buy milk", "  call Ana", "  ship it",
                                            "  sent alone"], err)

    def test_no_daemon_is_one_clear_line(self):
        code, out, err = self.notes(self.alpha, "show")
        self.assertEqual(code, 0, err)
        self.alpha.kill()
        code, out, err = self.notes(self.alpha, "show")
        self.assertEqual(code, 1)
        self.assertIn("cannot reach meshd at", err)
