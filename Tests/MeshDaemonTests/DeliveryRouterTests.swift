import Foundation
import MeshLocalAPI
import SessionMesh
import Testing
@testable import MeshDaemon

extension DeliveryRouter {
    /// Durably queues `item` for `peers` as a reliable send does (`DeliverySender.enqueueReliable`).
    func enqueueReliable(_ item: DeliveryItem, for peers: [DeviceID]) async throws {
        try await sender.enqueueReliable(self, item, for: peers)
    }
}

extension DeliveryIntegration {
    @Suite("Delivery modes between two daemons", .serialized)
    struct DeliveryRouterTests {
        @Test func reliableArrivesOnceAndLeavesTheOutboxOnAck() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let (a, b) = try await bed.pair()
            let sink = CollectingSink()
            _ = await b.router.attach(features: ["demo"], sink: sink)
            for index in 1...20 {
                let (envelope, encoded) = try RouterFixtures.envelope("r\(index)", sequence: UInt64(index))
                let outcome = try await a.router.send(envelope, encoded: encoded, mode: 2, to: b.id)
                #expect(outcome.outcome == "queued" && outcome.peers == 1)
            }
            try await waitUntil("20 reliable items", timeout: 5) { sink.envelopes.count >= 20 }
            let got = sink.envelopes
            #expect(got.map { RouterFixtures.text($0.envelope) } == (1...20).map { "r\($0)" })
            #expect(got.allSatisfy { $0.inboxID != 0 && !$0.redelivery && $0.mode == 2 && $0.from == a.id })
            try await waitUntil("outbox empty", timeout: 5) { try await a.router.queue().isEmpty }
            #expect(try await b.router.acknowledgeInbox(ids: got.map(\.inboxID)) == 20)
            #expect(try b.store.counts().inbox.items == 0)
            await bed.shutdown()
        }

        @Test func realtimeGoesByDatagramAndIsAcked() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let (a, _, _, sinkB) = try await bed.pairWithApps()
            for index in 1...50 {
                let (envelope, encoded) = try RouterFixtures.envelope("t\(index)", sequence: UInt64(index))
                let outcome = try await a.router.send(envelope, encoded: encoded, mode: 1, to: nil)
                #expect(outcome.outcome == "sent")
            }
            try await waitUntil("50 realtime items", timeout: 5) { sinkB.envelopes.count >= 50 }
            // A datagram lost or overtaken under load arrives as its queued copy (inboxID ≠ 0).
            #expect(sinkB.envelopes.allSatisfy { $0.mode == 1 })
            #expect(Set(sinkB.envelopes.map { RouterFixtures.text($0.envelope) }).count == 50)
            // Under load an ack may miss its deadline: that item then also goes through the outbox,
            // and the receiver drops the copy. Either way each item is acked or queued exactly once.
            let counters = try await bed.realtimeSettled(a, count: 50)
            print("realtime: \(counters["delivery.realtime.acked"] ?? 0) acked in time, \(counters["delivery.realtime.fallbacks"] ?? 0) fell back")
            #expect(sinkB.envelopes.count == 50)
            let viaInbox = sinkB.envelopes.filter { $0.inboxID != 0 }.count
            #expect(viaInbox <= Int(counters["delivery.realtime.fallbacks"] ?? 0))
            await bed.shutdown()
        }

        @Test func realtimeAndItsQueuedCopyAreOneEvent() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let (a, b, _, sinkB) = try await bed.pairWithApps()
            let (envelope, encoded) = try RouterFixtures.envelope("once", sequence: 1)
            _ = try await a.router.send(envelope, encoded: encoded, mode: 1, to: b.id)
            try await waitUntil("realtime copy", timeout: 5) { sinkB.envelopes.count == 1 }
            // As if the datagram ack was lost: the same event ID also goes through the outbox.
            let item = DeliveryItem(eventID: envelope.metadata.eventID, kind: 1, featureID: "demo",
                                    sessionID: envelope.metadata.sessionID, payload: encoded)
            try await a.router.enqueueReliable(item, for: [b.deviceID])
            try await waitUntil("queued copy acked", timeout: 5) { try await a.router.queue().isEmpty }
            // Bob counted the queued copy as a duplicate: had he handed it out, it would be there.
            try await waitUntil("the queued copy counted as a duplicate", timeout: 5) {
                await b.router.counterValues()["delivery.inbox.duplicates"] ?? 0 >= 1
            }
            #expect(sinkB.envelopes.count == 1)
            await bed.shutdown()
        }

        @Test func reliableSentWhileThePeerIsDownArrivesAfterBothRestarted() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            var (a, b) = try await bed.pair()
            let bFolder = b.running.stateDirectory, bPort = b.running.port
            let aFolder = a.running.stateDirectory, aPort = a.running.port
            await b.stop()
            try await waitUntil("alice sees bob down", timeout: 5) { await !a.node.isActive(b.deviceID) }
            for index in 1...5 {
                let (envelope, encoded) = try RouterFixtures.envelope("down\(index)", sequence: UInt64(index))
                _ = try await a.router.send(envelope, encoded: encoded, mode: 2, to: b.id)
            }
            #expect(try await a.router.queue().count == 5)
            await a.stop()
            a = try await bed.start(name: "alice", stateDirectory: aFolder, port: aPort)
            #expect(try await a.router.queue().count == 5)
            b = try await bed.start(name: "bob", stateDirectory: bFolder, port: bPort)
            let sink = CollectingSink()
            _ = await b.router.attach(features: ["demo"], sink: sink)
            try await waitUntil("5 items after the restarts", timeout: 10) { sink.envelopes.count >= 5 }
            // Once bob acknowledged all of them, nothing more can come.
            try await waitUntil("alice's outbox drained", timeout: 5) { try await a.router.queue().isEmpty }
            #expect(sink.envelopes.map { RouterFixtures.text($0.envelope) } == (1...5).map { "down\($0)" })
            await bed.shutdown()
        }

        @Test func anAppThatDiesBeforeAckingGetsRedeliveries() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let (a, b) = try await bed.pair()
            let first = CollectingSink()
            let attachment = await b.router.attach(features: ["demo"], sink: first)
            let (envelope, encoded) = try RouterFixtures.envelope("again", sequence: 1)
            _ = try await a.router.send(envelope, encoded: encoded, mode: 2, to: b.id)
            try await waitUntil("first delivery", timeout: 5) { first.envelopes.count == 1 }
            await b.router.detach(attachment.attachmentID)
            let second = CollectingSink()
            _ = await b.router.attach(features: ["demo"], sink: second)
            try await waitUntil("redelivery", timeout: 5) { second.envelopes.count == 1 }
            #expect(first.envelopes.first?.redelivery == false)
            #expect(second.envelopes.first?.redelivery == true)
            #expect(second.envelopes.first?.envelope.metadata.eventID == envelope.metadata.eventID)
            await bed.shutdown()
        }

        @Test func aRealtimeCopyArrivingWhileItsQueuedCopyIsBeingStoredIsADuplicate() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let (a, b) = try await bed.pair()
            let sink = CollectingSink()
            _ = await b.router.attach(features: ["demo"], sink: sink)
            for index in 1...20 {
                let (envelope, encoded) = try RouterFixtures.envelope("race\(index)", sequence: UInt64(index))
                let item = DeliveryItem(eventID: envelope.metadata.eventID, kind: 1, featureID: "demo",
                                        sessionID: envelope.metadata.sessionID, payload: encoded)
                await b.router.queueForInbox(.batch([(UInt64(index), item)]), from: a.deviceID)
                await b.router.realtimeReceived(item, from: a.deviceID, path: .datagram)
            }
            try await waitUntil("20 items", timeout: 5) { sink.envelopes.count >= 20 }
            // Each second copy was counted as a duplicate: had it been handed out, it would be there.
            try await waitUntil("20 second copies counted as duplicates", timeout: 5) {
                let counters = await b.router.counterValues()
                return (counters["delivery.inbox.duplicates"] ?? 0) + (counters["delivery.realtime.duplicates"] ?? 0) >= 20
            }
            #expect(sink.envelopes.count == 20)
            #expect(Set(sink.envelopes.map(\.envelope.metadata.eventID)).count == 20)
            await bed.shutdown()
        }
    
        /// An outbox item whose event ID was damaged in the state file while its peer was down
        /// is repaired and sent when the peer comes back, in order, once; the items after it are
        /// not held back (before: reading the outbox threw `.corrupt` at every pump, and the
        /// peer's whole reliable queue stopped there).
        @Test func anOutboxItemWithADamagedIDIsRepairedAndSentInOrder() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            var (a, b) = try await bed.pair()
            let bFolder = b.running.stateDirectory, bPort = b.running.port
            await b.stop()
            try await waitUntil("alice sees bob down", timeout: 5) { await !a.node.isActive(b.deviceID) }
            var sent: [AnySessionSyncEnvelope] = []
            for index in 1...4 {
                let (envelope, encoded) = try RouterFixtures.envelope("q\(index)", sequence: UInt64(index))
                sent.append(envelope)
                _ = try await a.router.send(envelope, encoded: encoded, mode: 2, to: b.id)
            }
            let raw = try SQLiteConnection(path: a.store.path, busyTimeoutMilliseconds: 2000)
            try raw.run("UPDATE outbox SET event_id = ? WHERE event_id = ?",
                        [.text("damaged"), .blob(StoreColumns.blob(sent[1].metadata.eventID))], "test setup")
            try raw.run("UPDATE outbox SET session = ? WHERE event_id = ?",
                        [.blob([7]), .blob(StoreColumns.blob(sent[2].metadata.eventID))], "test setup")
            raw.close()
            let listed = try await a.router.queue()
            #expect(listed.count == 4 && listed[1].summary.eventID == StoreColumns.damagedID, "meshctl queue still lists them")
            b = try await bed.start(name: "bob", stateDirectory: bFolder, port: bPort)
            let sink = CollectingSink()
            _ = await b.router.attach(features: ["demo"], sink: sink)
            try await waitUntil("4 items", timeout: 10) { sink.envelopes.count >= 4 }
            // Drained: every item is acked, so any copy still in flight is a duplicate B drops.
            try await waitUntil("alice's outbox drained", timeout: 5) { try await a.router.queue().isEmpty }
            let got = sink.envelopes
            #expect(got.map { RouterFixtures.text($0.envelope) } == ["q1", "q2", "q3", "q4"])
            #expect(got.map(\.envelope.metadata.eventID) == sent.map(\.metadata.eventID), "the app's IDs travel in the payload")
            #expect(await a.router.counterValues()["delivery.reliable.repaired_ids"] == 2)
            await bed.shutdown()
        }

        /// An inbox item whose event ID was damaged in the state file while no app was attached
        /// is still handed out, whole and in order, when the app attaches; it is counted, and
        /// the items after it are not held back.
        @Test func anInboxItemWithADamagedIDIsStillDeliveredInOrder() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let (a, b) = try await bed.pair()
            var sent: [AnySessionSyncEnvelope] = []
            for index in 1...4 {
                let (envelope, encoded) = try RouterFixtures.envelope("d\(index)", sequence: UInt64(index))
                sent.append(envelope)
                _ = try await a.router.send(envelope, encoded: encoded, mode: 2, to: b.id)
            }
            try await waitUntil("4 items in B's inbox", timeout: 5) { try b.store.counts().inbox.items == 4 }
            let raw = try SQLiteConnection(path: b.store.path, busyTimeoutMilliseconds: 2000)
            try raw.run("UPDATE inbox SET event_id = ? WHERE event_id = ?",
                        [.blob([1, 2, 3]), .blob(StoreColumns.blob(sent[1].metadata.eventID))], "test setup")
            raw.close()
            let sink = CollectingSink()
            _ = await b.router.attach(features: ["demo"], sink: sink)
            try await waitUntil("4 deliveries", timeout: 5) { sink.envelopes.count >= 4 }
            let got = sink.envelopes
            #expect(got.map { RouterFixtures.text($0.envelope) } == ["d1", "d2", "d3", "d4"])
            #expect(got.map(\.envelope.metadata.eventID) == sent.map(\.metadata.eventID), "the app reads the ID from the payload")
            #expect(await b.router.counterValues()["delivery.inbox.damaged_ids"] == 1)
            #expect(try await b.router.acknowledgeInbox(ids: got.map(\.inboxID)) == 4)
            #expect(try b.store.counts().inbox.items == 0)
            await bed.shutdown()
        }

        @Test func itemsThatReachedTheInboxBeforeTheAppAttachedStayAheadOfLiveOnes() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let (a, b) = try await bed.pair()
            var items: [DeliveryItem] = []
            for index in 1...60 {
                let (envelope, encoded) = try RouterFixtures.envelope("o\(index)", sequence: UInt64(index))
                items.append(DeliveryItem(eventID: envelope.metadata.eventID, kind: 1, featureID: "demo",
                                          sessionID: envelope.metadata.sessionID, payload: encoded))
            }
            for item in items[0..<30] { await b.router.realtimeReceived(item, from: a.deviceID, path: .stream) }
            let sink = CollectingSink()
            _ = await b.router.attach(features: ["demo"], sink: sink)
            for item in items[30...] { await b.router.realtimeReceived(item, from: a.deviceID, path: .stream) }
            // A last live item: anything handed out twice would come before it.
            let (marker, markerEncoded) = try RouterFixtures.envelope("last", sequence: 61)
            await b.router.realtimeReceived(DeliveryItem(eventID: marker.metadata.eventID, kind: 1, featureID: "demo",
                                                         sessionID: marker.metadata.sessionID, payload: markerEncoded),
                                            from: a.deviceID, path: .stream)
            try await waitUntil("61 items", timeout: 5) { sink.envelopes.count >= 61 }
            #expect(sink.envelopes.map { RouterFixtures.text($0.envelope) } == (1...60).map { "o\($0)" } + ["last"])
            await bed.shutdown()
        }
    
        /// A sink whose connection shed inbox items (a slow reader) gets those again, with the
        /// mark they had, and nothing it got or acknowledged.
        @Test func aSinkThatShedInboxItemsGetsThoseAgainAndNothingElse() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let (a, b) = try await bed.pair()
            let sink = CollectingSink()
            _ = await b.router.attach(features: ["demo"], sink: sink)
            for index in 1...5 {
                let (envelope, encoded) = try RouterFixtures.envelope("s\(index)", sequence: UInt64(index))
                _ = try await a.router.send(envelope, encoded: encoded, mode: 2, to: b.id)
            }
            try await waitUntil("5 items", timeout: 5) { sink.envelopes.count >= 5 }
            let first = sink.envelopes
            #expect(try await b.router.acknowledgeInbox(ids: [first[0].inboxID]) == 1)
            // The connection shed s1 (acknowledged since), s2 and s4 before the app saw them.
            let shed = [0, 1, 3].map { ShedInboxItem(inboxID: first[$0].inboxID, redelivery: first[$0].redelivery) }
            await b.router.reoffer(shed, to: sink)
            try await waitUntil("2 items offered again", timeout: 5) { sink.envelopes.count >= 7 }
            try await waitUntil("the offer ended", timeout: 5) { await !b.router.isReplayingForTest(sink) }
            let again = Array(sink.envelopes[5...])
            #expect(again.map { RouterFixtures.text($0.envelope) } == ["s2", "s4"])
            #expect(again.allSatisfy { !$0.redelivery })
            #expect(sink.envelopes.count == 7)
            await bed.shutdown()
        }
    }
}
