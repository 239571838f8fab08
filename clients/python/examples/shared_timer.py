#!/usr/bin/env python3
"""A stopwatch shared by paired devices: the Python side of Examples/SharedTimer.

    python3 shared_timer.py [--socket PATH] [--feature shared-timer] [--session UUID]

Interoperates with the Swift `shared-timer` (same feature, session and payloads; the format is
in Examples/SharedTimer/README.md). Reads commands on stdin, one per line: start, pause, resume,
lap, show [MICROS], close, quit; prints the same lines as the Swift app.

The engine below is the part of SessionMesh's `SessionSyncEngine` a feature needs: per-device
sequence numbers, events applied once and in order, snapshots that say which events they
reflect, and the events a peer lacks after adopting its snapshot.
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import sessionmesh
from sessionmesh import Envelope, Metadata, Snapshot

EVENT_TYPE = "sharedtimer.event.v1"
STATE_TYPE = "sharedtimer.state.v1"
CLOSED_TYPE = "sessionmesh.session.closed"
ACTIONS = ("start", "pause", "resume", "lap")
HISTORY_LIMIT = 1024


def now_micros() -> int:
    return time.time_ns() // 1000


def seconds(micros: int) -> str:
    sign = "-" if micros < 0 else ""
    whole, fraction = divmod(abs(micros), 1_000_000)
    return "%s%d.%06d" % (sign, whole, fraction)


def short(device_id: str) -> str:
    return device_id.split("-", 1)[0]


# --- the timer: state, rules, payloads (Examples/SharedTimer/README.md) ----------------------

@dataclass
class TimerState:
    """`timer` is None before the first start, else startedAt/accumulated/pausedAt in microseconds."""

    timer: Optional[Dict[str, Optional[int]]] = None
    laps: List[int] = field(default_factory=list)

    def elapsed(self, at: int) -> int:
        if self.timer is None:
            return 0
        end = self.timer["pausedAt"] if self.timer["pausedAt"] is not None else at
        return self.timer["accumulated"] + max(0, end - self.timer["startedAt"])

    @property
    def phase(self) -> str:
        if self.timer is None:
            return "stopped"
        return "paused" if self.timer["pausedAt"] is not None else "running"

    def apply(self, action: str, at: int) -> None:
        timer = self.timer
        if action == "start" and timer is None:
            self.timer = {"startedAt": at, "accumulated": 0, "pausedAt": None}
        elif action == "pause" and timer is not None and timer["pausedAt"] is None:
            timer["pausedAt"] = max(at, timer["startedAt"])
        elif action == "resume" and timer is not None and timer["pausedAt"] is not None:
            pause = max(timer["pausedAt"], timer["startedAt"])
            resume = max(at, pause)
            timer["accumulated"] += pause - timer["startedAt"]
            timer["startedAt"], timer["pausedAt"] = resume, None
        elif action == "lap" and timer is not None:
            self.laps.append(self.elapsed(at))

    def copy(self) -> "TimerState":
        return TimerState(dict(self.timer) if self.timer is not None else None, list(self.laps))

    def encode(self) -> bytes:
        return json.dumps({"timer": self.timer, "laps": self.laps}, sort_keys=True).encode()

    @staticmethod
    def decode(data: bytes) -> "TimerState":
        body = json.loads(data)
        timer = body.get("timer")
        laps = [int(lap) for lap in body.get("laps", [])]
        if timer is None:
            return TimerState(None, laps)
        paused = timer.get("pausedAt")
        state = {"startedAt": int(timer["startedAt"]), "accumulated": int(timer["accumulated"]),
                 "pausedAt": int(paused) if paused is not None else None}
        if state["accumulated"] < 0:
            raise ValueError("accumulated time is negative")
        return TimerState(state, laps)


def decode_event(data: bytes) -> Tuple[str, int]:
    body = json.loads(data)
    action, at = body["action"], int(body["at"])
    if action not in ACTIONS:
        raise ValueError("unknown action %r" % action)
    return action, at


# --- the engine --------------------------------------------------------------------------------

@dataclass
class Entry:
    metadata: Metadata
    action: str
    at: int
    local: bool


class Engine:
    """Applies local and remote timer events once and in per-device order; makes and adopts snapshots."""

    def __init__(self, session: uuid.UUID, feature: str, me: str) -> None:
        self.session, self.feature, self.me = session, feature, me
        self.state = TimerState()
        self.revision = 0
        self.local_sequence = 0
        self.last_sequence: Dict[str, int] = {}
        self.seen: "OrderedDict[uuid.UUID, None]" = OrderedDict()
        self.history: List[Entry] = []
        self.adopted: Dict[str, int] = {}

    def _remember(self, metadata: Metadata, action: str, at: int, local: bool) -> None:
        self.seen[metadata.event_id] = None
        while len(self.seen) > HISTORY_LIMIT:
            self.seen.popitem(last=False)
        self.history.append(Entry(metadata, action, at, local))
        del self.history[:-HISTORY_LIMIT]

    def reflected(self) -> Dict[str, int]:
        result = dict(self.last_sequence)
        if self.local_sequence > 0:
            result[self.me] = self.local_sequence
        return result

    def _ours(self, metadata: Metadata, payload_type: str) -> bool:
        return (metadata.session_id == self.session and metadata.feature_id == self.feature
                and metadata.payload_type == payload_type and metadata.protocol_version == 1)

    def submit(self, action: str, at: int) -> Envelope:
        metadata = Metadata(session_id=self.session, feature_id=self.feature, source_peer_id=self.me,
                            event_id=uuid.uuid4(), sequence=self.local_sequence + 1, causal_timestamp=at / 1e6,
                            payload_type=EVENT_TYPE)
        self.state.apply(action, at)
        self.local_sequence += 1
        self.revision += 1
        self._remember(metadata, action, at, True)
        return Envelope(metadata, json.dumps({"action": action, "at": at}).encode())

    def receive(self, metadata: Metadata, payload: bytes) -> str:
        """`applied`, `duplicate`, `snapshot-required` or `foreign` (another session or type)."""
        if not self._ours(metadata, EVENT_TYPE):
            return "foreign"
        source = metadata.source_peer_id
        if source == self.me or metadata.event_id in self.seen:
            return "duplicate"
        last = self.last_sequence.get(source, 0)
        if metadata.sequence <= last:
            return "duplicate"
        if metadata.sequence != last + 1:
            return "snapshot-required"
        action, at = decode_event(payload)
        self.state.apply(action, at)
        self.last_sequence[source] = metadata.sequence
        self.revision += 1
        self._remember(metadata, action, at, False)
        return "applied"

    def adopt(self, metadata: Metadata, revision: int, reflected: Dict[str, int], state: bytes) -> bool:
        """Adopts a peer's snapshot when it brings events this engine lacks, re-applying what it does not reflect."""
        if not self._ours(metadata, STATE_TYPE):
            return False
        source = metadata.source_peer_id
        if revision <= self.adopted.get(source, -1):
            return False
        current = self.reflected()
        if not any(sequence > current.get(peer, 0) for peer, sequence in reflected.items()):
            return False
        replay = [e for e in self.history if e.metadata.sequence > reflected.get(e.metadata.source_peer_id, 0)]
        for peer, have in current.items():
            missing = have - reflected.get(peer, 0)
            if missing > 0 and sum(1 for e in replay if e.metadata.source_peer_id == peer) != missing:
                return False    # it would need events older than the history holds
        adopted = TimerState.decode(state)
        for entry in replay:
            adopted.apply(entry.action, entry.at)
        self.state = adopted
        for peer, sequence in reflected.items():
            if peer == self.me:
                self.local_sequence = max(self.local_sequence, sequence)
            else:
                self.last_sequence[peer] = max(self.last_sequence.get(peer, 0), sequence)
        self.adopted[source] = revision
        self.revision = max(self.revision, revision) + 1
        return True

    def snapshot(self) -> Snapshot:
        metadata = Metadata(session_id=self.session, feature_id=self.feature, source_peer_id=self.me,
                            event_id=uuid.uuid4(), sequence=self.local_sequence, causal_timestamp=time.time(),
                            payload_type=STATE_TYPE)
        return Snapshot(metadata, self.revision, self.state.encode(), self.reflected())

    def missing_for(self, reflected: Dict[str, int], peer: str) -> List[Envelope]:
        """This engine's events a peer whose snapshot reflects `reflected` lacks, in order."""
        expected: Dict[str, int] = {}
        out = []
        for entry in self.history:
            source = entry.metadata.source_peer_id
            if source == peer:
                continue
            want = expected.get(source, reflected.get(source, 0) + 1)
            if entry.metadata.sequence == want:
                expected[source] = want + 1
                out.append(Envelope(entry.metadata, json.dumps({"action": entry.action, "at": entry.at}).encode()))
        return out


# --- the app -------------------------------------------------------------------------------------

class SharedTimer:
    def __init__(self, client: "sessionmesh.Client", engine: Engine) -> None:
        self.client, self.engine = client, engine
        self.lock = threading.Lock()
        self.closed = False

    @staticmethod
    def say(line: str) -> None:
        print(line, flush=True)

    def describe(self, at: int) -> str:
        state = self.engine.state
        laps = " ".join(seconds(lap) for lap in state.laps)
        return "elapsed %s s (%s) at %d, laps: [%s]" % (seconds(state.elapsed(at)), state.phase, at, laps)

    def publish(self) -> None:
        if not self.closed:
            self.client.publish_snapshot_message(self.engine.snapshot())

    def tap(self, action: str) -> None:
        with self.lock:
            at = now_micros()
            envelope = self.engine.submit(action, at)
            self.say("applied %s (here) -> %s" % (action, self.describe(at)))
            self.client.send_envelope(envelope, mode="reliable")
            self.publish()

    def adopt(self, metadata: Metadata, revision: int, reflected: Dict[str, int], state: bytes, verb: str) -> bool:
        try:
            if not self.engine.adopt(metadata, revision, reflected, state):
                return False
        except (ValueError, KeyError, TypeError) as error:
            print("shared_timer: ignored a snapshot from %s: %s" % (short(metadata.source_peer_id), error), file=sys.stderr)
            return False
        self.say("%s %s's snapshot (revision %d) -> %s" % (verb, short(metadata.source_peer_id), revision,
                                                            self.describe(now_micros())))
        return True

    def catch_up(self) -> None:
        """Adopts the newest snapshot the daemon holds from a peer, then asks reachable peers for a fresh one."""
        latest = self.client.latest_snapshot(self.engine.feature, session=self.engine.session)
        if latest is not None:
            with self.lock:
                self.adopt(latest.metadata, latest.revision, latest.reflected_sequences, latest.payload, "caught up from")
        self.client.request_snapshot(self.engine.feature, session=self.engine.session)

    def handle(self, event: "sessionmesh.Event") -> None:
        with self.lock:
            if event.kind == "envelope" and event.metadata is not None:
                self.on_envelope(event)
            elif event.kind == "snapshot" and event.metadata is not None:
                self.adopt(event.metadata, event.revision or 0, event.reflected_sequences, event.payload, "adopted")
                for envelope in self.engine.missing_for(event.reflected_sequences, event.metadata.source_peer_id):
                    self.client.send_envelope(envelope, mode="reliable")
            elif event.kind == "snapshot_request" and event.request is not None:
                if event.request.session_id == self.engine.session:
                    self.publish()
        event.ack()

    def on_envelope(self, event: "sessionmesh.Event") -> None:
        metadata = event.metadata
        if metadata.session_id != self.engine.session:
            return
        if metadata.payload_type == CLOSED_TYPE:
            if not self.closed:
                self.say("session closed by %s" % short(event.from_device or metadata.source_peer_id))
            self.closed = True
            return
        try:
            outcome = self.engine.receive(metadata, event.payload)
        except (ValueError, KeyError, TypeError) as error:
            print("shared_timer: ignored an event from %s: %s" % (short(metadata.source_peer_id), error), file=sys.stderr)
            return
        if outcome == "applied":
            action = self.engine.history[-1].action
            self.say("applied %s (from %s) -> %s" % (action, short(metadata.source_peer_id), self.describe(now_micros())))
            self.publish()
        elif outcome == "snapshot-required":
            self.client.request_snapshot(self.engine.feature, session=self.engine.session)

    def close(self) -> None:
        result = self.client.close_session(self.engine.feature, session=self.engine.session)
        self.closed = True
        self.say("session closed: delivered to %d device(s), queued for %d" % (len(result.delivered), len(result.queued)))


def join_or_start(client: "sessionmesh.Client", feature: str, session: Optional[str], owner: str) -> uuid.UUID:
    """`--session`, else the newest open session of the feature, else a new announced one."""
    if session is not None:
        return client.announce_session(feature, uuid.UUID(session), owner=owner)
    for row in client.sessions(feature):
        if row.status != "closed":
            return row.session_id
    return client.announce_session(feature, uuid.uuid4(), owner=owner)


def main() -> int:
    parser = argparse.ArgumentParser(
        description="A stopwatch shared by paired devices through meshd.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""commands, one per line on standard input:
  start          start the timer (on every device of the session)
  pause          pause it
  resume         resume it after a pause
  lap            record a lap
  show [MICROS]  print the elapsed time now, or at MICROS (microseconds since 1970)
  close          close the session on every device and exit
  quit           exit; the session goes on on the other devices""")
    parser.add_argument("--socket", help="the daemon's socket (default: the one meshctl uses)")
    parser.add_argument("--feature", default="shared-timer")
    parser.add_argument("--session", help="the session to join (UUID)")
    args = parser.parse_args()
    if args.session is not None:
        try:
            uuid.UUID(args.session)
        except ValueError:
            parser.error("--session must be a UUID")

    client = sessionmesh.connect(args.socket)
    status = client.status()
    session = join_or_start(client, args.feature, args.session, status.name)
    timer = SharedTimer(client, Engine(session, args.feature, status.device_id))
    events = client.attach([args.feature], session=session, app="shared_timer.py")
    timer.catch_up()
    timer.say("ready: device %s (%s), feature %s, session %s" % (short(status.device_id), status.name, args.feature, session))

    def receive() -> None:
        try:
            for event in events:
                try:
                    timer.handle(event)
                except sessionmesh.MeshError as error:
                    print("shared_timer: %s event: %s" % (event.kind, error), file=sys.stderr)
        except sessionmesh.MeshError as error:
            print("shared_timer: the attachment ended: %s" % error, file=sys.stderr)

    threading.Thread(target=receive, daemon=True).start()
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        command = words[0]
        try:
            if command in ACTIONS:
                timer.tap(command)
            elif command == "show":
                at = int(words[1]) if len(words) > 1 else now_micros()
                with timer.lock:
                    timer.say(timer.describe(at))
            elif command == "close":
                timer.close()
                break
            elif command == "quit":
                break
            else:
                timer.say("unknown command %s; use start, pause, resume, lap, show, close or quit" % command)
        except (sessionmesh.MeshError, ValueError) as error:
            timer.say("%s failed: %s" % (command, error))
    events.close()
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
