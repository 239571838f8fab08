"""The client against two real meshd processes on loopback, paired by code through the client."""
import asyncio
import os
import signal
import subprocess
import tempfile
import threading
import time
import unittest
import uuid

import sessionmesh
from harness import MESHCTL, MeshTestCase, wait_until


def next_of(events, kind, timeout=10.0, where=lambda e: True):
    """The next event of `kind` matching `where`; fails after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"no {kind} event within {timeout} s")
        try:
            event = events.next_event(timeout=left)
        except sessionmesh.ClientTimeoutError:
            raise AssertionError(f"no {kind} event within {timeout} s") from None
        if event.kind == kind and where(event):
            return event


class PairingTests(MeshTestCase):
    def test_pairing_by_code_and_the_devices_it_shows(self):
        self.pair()
        a, b = self.client(self.alpha), self.client(self.beta)
        [peer] = a.peers()
        self.assertEqual((peer.device_id, peer.name, peer.active), (self.beta_id, "beta", True))
        status = b.status()
        self.assertEqual((status.device_id, status.name, status.socket), (self.beta_id, "beta", self.beta.socket))
        self.assertEqual(b.device_id, self.beta_id)
        hello = a.hello()
        self.assertEqual(hello.daemon, "meshd")
        self.assertIn("send", hello.operations)
        ping = a.ping(peer.short_id, count=3)
        self.assertEqual(ping.device_id, self.beta_id)
        self.assertTrue(any(path.received == 3 for path in ping.paths))

    def test_cancel_wrong_code_and_unpair_raise_typed_errors(self):
        a, b = self.client(self.alpha), self.client(self.beta)
        code = a.create_pairing_code(valid_for=60).code
        outcome = []
        waiter = threading.Thread(target=lambda: outcome.append(self._wait_error(a, code)))
        waiter.start()
        # A mistyped code (its check characters do not match) is refused before any network traffic.
        with self.assertRaises(sessionmesh.InvalidCodeError):
            b.join_pairing("AAAA-AAAA", address=f"127.0.0.1:{self.alpha.port}", timeout=30)
        a.cancel_pairing(code)
        waiter.join(15)
        self.assertEqual(len(outcome), 1)
        self.assertIsInstance(outcome[0], sessionmesh.PairingCancelledError)
        with self.assertRaises(sessionmesh.UnknownPeerError):
            a.unpair("ZZZZZZZ")
        with self.assertRaises(sessionmesh.UnknownPeerError):
            a.ping("ZZZZZZZ")

    def test_pairing_again_needs_replace_on_both_sides(self):
        self.pair()
        a, b = self.client(self.alpha), self.client(self.beta)
        address = f"127.0.0.1:{self.alpha.port}"
        code = a.create_pairing_code(valid_for=60).code
        outcome = []
        waiter = threading.Thread(target=lambda: outcome.append(self._wait_error(a, code)))
        waiter.start()
        with self.assertRaises(sessionmesh.PairingError):
            b.join_pairing(code, address=address, timeout=30)
        waiter.join(35)
        self.assertEqual(len(outcome), 1)
        self.assertIsInstance(outcome[0], sessionmesh.AlreadyPairedError)
        # With replace on both sides the devices pair again and agree on the verification string.
        code = a.create_pairing_code(valid_for=60, replace=True).code
        waited = []
        waiter = threading.Thread(target=lambda: waited.append(a.wait_for_pairing(code, timeout=30)))
        waiter.start()
        joined = b.join_pairing(code, address=address, timeout=30, replace=True)
        waiter.join(35)
        self.assertEqual(len(waited), 1)
        self.assertEqual(waited[0].verification, joined.verification)
        self.assertEqual(joined.device_id, self.alpha_id)

    @staticmethod
    def _wait_error(client, code):
        try:
            client.wait_for_pairing(code, timeout=30)
        except sessionmesh.MeshError as error:
            return error
        return None

    def test_no_daemon_is_a_clear_error(self):
        missing = os.path.join(self.root, "nobody.sock")
        with self.assertRaises(sessionmesh.DaemonUnreachableError) as caught:
            sessionmesh.connect(missing)
        self.assertIn(missing, str(caught.exception))
        with self.assertRaises(ConnectionError):  # the built-in base works too
            sessionmesh.connect(missing)


class DeliveryTests(MeshTestCase):
    def setUp(self):
        super().setUp()
        self.pair()
        self.a, self.b = self.client(self.alpha), self.client(self.beta)

    def test_every_send_mode_reaches_the_attached_app(self):
        with self.b.attach(["notes"]) as events:
            wait_until("beta's app to be reachable from alpha", lambda: self._reachable(self.a, "notes"))
            sent = {mode: self.a.send("notes", mode.encode(), mode=mode) for mode in ("realtime", "reliable", "acknowledgement")}
            self.assertEqual(sent["reliable"].outcome, "queued")
            self.assertEqual(sent["realtime"].peers, 1)
            seen = {}
            while len(seen) < 3:
                event = next_of(events, "envelope")
                seen[event.payload.decode()] = event
            for mode, event in seen.items():
                with self.subTest(mode=mode):
                    self.assertEqual(event.mode, mode)
                    self.assertEqual(event.feature, "notes")
                    self.assertEqual(event.from_device, self.alpha_id)
                    self.assertEqual(event.event_id, sent[mode].event_id)
                    self.assertEqual(event.metadata.source_peer_id, self.alpha_id)
                    self.assertEqual(event.session_id, sessionmesh.default_session("notes"))
                    self.assertFalse(event.redelivery)
            self.assertEqual(seen["reliable"].ack(), 1)
            self.assertEqual(seen["realtime"].ack(), 0, "a live realtime item has nothing to acknowledge")

    def _reachable(self, client, feature):
        with client.attach([feature]) as probe:
            return any(peer.reachable for peer in probe.peers)

    def test_an_unacknowledged_item_comes_again_flagged_and_an_acknowledged_one_does_not(self):
        self.a.send("notes", b"one")
        self.a.send("notes", b"two")
        with self.b.attach("notes") as events:
            first = next_of(events, "envelope", where=lambda e: e.payload == b"one")
            second = next_of(events, "envelope", where=lambda e: e.payload == b"two")
            self.assertTrue(first.needs_ack and second.needs_ack)
            self.assertEqual(first.ack(), 1)
        with self.b.attach("notes") as events:
            again = next_of(events, "envelope")
            self.assertEqual((again.payload, again.redelivery), (b"two", True))
            self.assertEqual(self.b.ack([again.inbox_id, again.inbox_id]), 1)
            with self.assertRaises(sessionmesh.ClientTimeoutError):
                events.next_event(timeout=0.5)

    def test_snapshots_publish_latest_and_request(self):
        self.assertIsNone(self.b.latest_snapshot("board", peer=self.alpha_id))
        with self.b.attach(["board"]) as events:
            first = self.a.publish_snapshot("board", b"v1")
            second = self.a.publish_snapshot("board", b"v2")
            self.assertTrue(first.stored and second.stored)
            self.assertGreater(second.revision, first.revision)
            event = next_of(events, "snapshot", where=lambda e: e.payload == b"v2")
            self.assertEqual((event.from_device, event.revision, event.feature), (self.alpha_id, second.revision, "board"))
        latest = self.b.latest_snapshot("board", peer=self.alpha_id)
        self.assertEqual((latest.payload, latest.revision, latest.peer), (b"v2", second.revision, self.alpha_id))
        # A slot already holding a higher revision: the client publishes above it, so the latest call wins.
        self.a.publish_snapshot("board", b"far", revision=second.revision + 10_000_000)
        fresh = sessionmesh.connect(self.alpha.socket)
        self.clients.append(fresh)
        winner = fresh.publish_snapshot("board", b"v3")
        self.assertTrue(winner.stored)
        self.assertEqual(winner.revision, second.revision + 10_000_001)
        with self.assertRaises(sessionmesh.InvalidArgumentError):
            self.a.publish_snapshot("board", b"x" * 1_048_576)
        # Asking: the app attached on alpha is asked and answers with a targeted publish.
        with self.a.attach(["board"]) as asked, self.b.attach(["board"]) as answers:
            self.b.request_snapshot("board", peer=self.alpha_id)
            request = next_of(asked, "snapshot_request")
            self.assertEqual(request.from_device, self.beta_id)
            self.a.publish_snapshot("board", b"answer", to=request.from_device, revision=1)
            answer = next_of(answers, "snapshot", where=lambda e: e.payload == b"answer")
            self.assertEqual(answer.revision, 1)

    def test_timer_anchor_sessions_and_watermark_reach_the_peer(self):
        session = uuid.uuid4()
        with self.b.attach(["timer"]) as events:
            anchor = sessionmesh.TimerAnchor(started_at=time.time() - 5, accumulated_elapsed_before_anchor=2.0)
            self.assertTrue(self.a.set_timer_anchor("timer", anchor, session=session, revision=1))
            self.assertFalse(self.a.set_timer_anchor("timer", anchor, session=session, revision=1))
            got = next_of(events, "anchor")
            self.assertEqual((got.session_id, got.revision, got.from_device), (session, 1, self.alpha_id))
            self.assertAlmostEqual(got.anchor.elapsed(time.time()), anchor.elapsed(time.time()), delta=0.5)
            self.assertEqual(self.a.announce_session("timer", session, status="running"), session)
            announced = next_of(events, "session", where=lambda e: e.session_id == session)
            self.assertEqual((announced.session.owner, announced.session.status), (self.alpha_id, "running"))
            self.assertEqual([s.session_id for s in self.b.sessions("timer")], [session])
            self.a.set_watermark("timer", self.beta_id, 42, session=session)
            mark = next_of(events, "watermark")
            self.assertEqual((mark.sequence, mark.session_id), (42, session))
            closed = self.a.close_session("timer", session)
            self.assertEqual(closed.delivered, (self.beta_id,))
            next_of(events, "session", where=lambda e: e.change == "closed")
        with self.assertRaises(sessionmesh.SessionClosedError):
            self.a.announce_session("timer", session)
        with self.assertRaises(sessionmesh.SessionClosedError):
            self.a.publish_snapshot("timer", b"late", session=session)

    def test_queue_and_cancel_while_the_peer_is_down(self):
        self.beta.kill()
        wait_until("alpha to see beta down", lambda: not self.a.peers()[0].active)
        kept = self.a.send("notes", b"kept")
        dropped = self.a.send("notes", b"dropped")
        items = {item.event_id: item for item in self.a.queue()}
        self.assertEqual(set(items), {kept.event_id, dropped.event_id})
        self.assertEqual(items[kept.event_id].feature, "notes")
        self.a.cancel_queued(items[dropped.event_id].id)
        with self.assertRaises(sessionmesh.NotFoundError):
            self.a.cancel_queued(items[dropped.event_id].id)
        self.assertEqual([item.event_id for item in self.a.queue()], [kept.event_id])
        self.beta.start()
        with self.b.attach("notes") as events:
            self.assertEqual(next_of(events, "envelope", timeout=20).payload, b"kept")
            with self.assertRaises(sessionmesh.ClientTimeoutError):
                events.next_event(timeout=1.0)
        wait_until("alpha's queue to empty", lambda: self.a.queue() == [], timeout=20)

    def test_bad_arguments_are_refused(self):
        with self.assertRaises(sessionmesh.UnknownPeerError):
            self.a.send("notes", b"x", to="ZZZZZZZ")
        with self.assertRaises(ValueError):
            self.a.send("", b"x")
        with self.assertRaises(ValueError):
            self.a.send("notes", b"x", mode="snapshot")
        with self.assertRaises(TypeError):
            self.a.send("notes", "text")
        with self.assertRaises(ValueError):
            self.a.ack([-1])
        self.assertEqual(self.a.ack([0, 123456]), 0)
        with self.assertRaises(TypeError):
            self.a.send("notes", b"x", to=5)
        self.assertEqual(self.a.send("notes", b"to a Peer", to=self.a.peers()[0]).peers, 1)
        # The connection is still good after refusals.
        self.assertEqual(self.a.status().device_id, self.alpha_id)

    def test_meshctl_keeps_one_random_default_session_per_feature_and_device(self):
        with tempfile.TemporaryDirectory() as state, self.b.attach("notes") as events:
            environment = dict(os.environ, XDG_STATE_HOME=state)
            for text in ("from meshctl", "again"):
                subprocess.run([MESHCTL, "--socket", self.alpha.socket, "send", "--feature", "notes", text],
                               check=True, capture_output=True, timeout=30, env=environment)
            first, second = next_of(events, "envelope"), next_of(events, "envelope")
            self.assertEqual(first.payload, b"from meshctl")
            self.assertEqual(first.session_id, second.session_id, "successive sends form one stream")
            self.assertNotEqual(first.session_id, sessionmesh.default_session("notes"),
                                "not derived from the feature name")


class RestartTests(MeshTestCase):
    def test_attach_resumes_after_kill_9_and_items_queued_meanwhile_arrive_once(self):
        self.pair()
        a, b = self.client(self.alpha), self.client(self.beta)
        with b.attach(["notes"]) as events:
            a.send("notes", b"before")
            before = next_of(events, "envelope")
            self.assertEqual(before.ack(), 1)
            self.beta.kill(signal.SIGKILL)
            next_of(events, "disconnected")
            wait_until("alpha to see beta down", lambda: not a.peers()[0].active, timeout=20)
            sent = [a.send("notes", f"while-down-{i}".encode()).event_id for i in range(3)]
            self.assertEqual(len(a.queue()), 3)
            self.beta.start()
            next_of(events, "reattached", timeout=20)
            got = [next_of(events, "envelope", timeout=20) for _ in range(3)]
            self.assertEqual([e.payload for e in got], [b"while-down-0", b"while-down-1", b"while-down-2"])
            self.assertEqual([e.event_id for e in got], sent)
            self.assertTrue(all(e.ack() == 1 for e in got))
            with self.assertRaises(sessionmesh.ClientTimeoutError):
                events.next_event(timeout=1.0)
        # The request connection came back too.
        self.assertEqual(b.status().device_id, self.beta_id)
        wait_until("alpha's queue to empty", lambda: a.queue() == [], timeout=20)

    def test_a_graceful_stop_is_reported_and_the_attachment_comes_back(self):
        self.pair()
        a, b = self.client(self.alpha), self.client(self.beta)
        with b.attach(["notes"]) as events:
            self.beta.kill(signal.SIGTERM)
            gone = next_of(events, "disconnected")
            self.assertEqual(gone.reason, "shutting-down")
            sent = a.send("notes", b"while stopped").event_id
            self.restart_in_background(self.beta)
            next_of(events, "reattached", timeout=20)
            event = next_of(events, "envelope", timeout=20)
            self.assertEqual((event.event_id, event.redelivery), (sent, False))
            self.assertEqual(event.ack(), 1)

    def restart_in_background(self, daemon):
        """Starts `daemon` again on another thread (a killed meshd takes a while to come back)."""
        starter = threading.Thread(target=daemon.start)
        starter.start()
        self.addCleanup(starter.join, 30)
        return starter

    def test_a_call_waits_for_a_restarting_daemon(self):
        b = self.client(self.beta, reconnect_timeout=30)
        before = b.status().device_id
        self.beta.kill(signal.SIGKILL)
        killed = time.monotonic()
        self.restart_in_background(self.beta)
        with self.assertLogs("sessionmesh", "INFO") as logs:
            after = b.status()  # the daemon is away when this starts
        self.assertTrue(any("reconnected to meshd" in line for line in logs.output), logs.output)
        self.assertEqual(after.device_id, before)
        self.assertLess(after.uptime_seconds, time.monotonic() - killed, "answered by the daemon that was killed")
        impatient = self.client(self.alpha, reconnect_timeout=0.3)
        self.alpha.kill(signal.SIGKILL)
        with self.assertRaises(sessionmesh.DaemonUnreachableError):
            impatient.status()

    def test_attach_waits_for_a_restarting_daemon_and_close_ends_iteration(self):
        self.pair()
        a, b = self.client(self.alpha), self.client(self.beta)
        self.beta.kill(signal.SIGKILL)
        self.restart_in_background(self.beta)
        events = b.attach(["notes"])  # the daemon is away when this starts
        a.send("notes", b"after restart")
        self.assertEqual(next_of(events, "envelope", timeout=20).payload, b"after restart")
        for i in range(3):
            a.send("notes", f"unread-{i}".encode())
        wait_until("beta's daemon to take the unread items", lambda: a.queue() == [], timeout=20)
        done = []
        reader = threading.Thread(target=lambda: done.append(list(events)))
        b.close()  # closes the attachment too; iteration ends even with unread events
        reader.start()
        reader.join(10)
        self.assertEqual(done, [[]])

    def test_a_small_event_buffer_holds_back_and_loses_nothing(self):
        self.pair()
        a, b = self.client(self.alpha), self.client(self.beta)
        with b.attach(["bulk"], buffer=2) as events:
            sent = [a.send("bulk", str(i).encode(), mode="reliable").event_id for i in range(60)]
            got = [next_of(events, "envelope", timeout=20) for _ in range(60)]
            self.assertEqual([e.event_id for e in got], sent)
            self.assertEqual(b.ack(e.inbox_id for e in got), 60)


class AsyncTests(MeshTestCase):
    def test_the_asyncio_client_sends_attaches_and_acks(self):
        self.pair()

        async def scenario():
            a = await sessionmesh.aio.connect(self.alpha.socket)
            b = await sessionmesh.connect_async(self.beta.socket)
            self.assertEqual((a.device_id, b.device_id), (self.alpha_id, self.beta_id))
            try:
                async with b.attach(["notes"]) as events:
                    sent = await a.send("notes", b"async hello")
                    async for event in events:
                        if event.kind == "envelope":
                            break
                    self.assertEqual((event.payload, event.event_id), (b"async hello", sent.event_id))
                    self.assertEqual(await b.ack([event.inbox_id]), 1)
                    published = await a.publish_snapshot("notes", b"state")
                    snap = await events.next_event(timeout=10)
                    while snap.kind != "snapshot":
                        snap = await events.next_event(timeout=10)
                    self.assertEqual((snap.payload, snap.revision), (b"state", published.revision))
                awaited = await b.attach("other")
                self.assertTrue(awaited.attachment_id)
                await awaited.close()
                with self.assertRaises(StopAsyncIteration):
                    await awaited.next_event(timeout=1)
                latest = await b.latest_snapshot("notes", peer=a.device_id)
                self.assertEqual(latest.payload, b"state")
                self.assertEqual([p.device_id for p in await a.peers()], [self.beta_id])
                with self.assertRaises(sessionmesh.UnknownPeerError):
                    await a.send("notes", b"x", to="ZZZZZZZ")
            finally:
                await a.close()
                await b.close()

        asyncio.run(asyncio.wait_for(scenario(), 60))

    def test_the_asyncio_attachment_resumes_after_kill_9(self):
        self.pair()
        a = self.client(self.alpha)

        async def scenario():
            b = await sessionmesh.connect_async(self.beta.socket)
            try:
                async with b.attach("notes") as events:
                    self.beta.kill(signal.SIGKILL)
                    kinds = []
                    while "disconnected" not in kinds:
                        kinds.append((await events.next_event(timeout=10)).kind)
                    wait_until("alpha to see beta down", lambda: not a.peers()[0].active, timeout=20)
                    sent = a.send("notes", b"queued meanwhile").event_id
                    self.beta.start()
                    while True:
                        event = await events.next_event(timeout=20)
                        if event.kind == "envelope":
                            break
                        kinds.append(event.kind)
                    self.assertIn("reattached", kinds)
                    self.assertEqual((event.event_id, event.redelivery), (sent, False))
                    self.assertEqual(await b.ack([event.inbox_id]), 1)
                    self.assertEqual((await b.status()).device_id, self.beta_id)
            finally:
                await b.close()

        asyncio.run(asyncio.wait_for(scenario(), 90))


if __name__ == "__main__":
    unittest.main()
