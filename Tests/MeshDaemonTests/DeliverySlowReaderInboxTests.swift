import Foundation
import MeshCrypto
import MeshLocalAPI
import NIOCore
import SessionMesh
import Testing
@testable import MeshDaemon

extension DeliveryIntegration {
    /// A slow reader's inbox items through a real local API socket: what its connection shed
    /// comes again, and only that — each item reaches the app once per attachment, unmarked the
    /// first time; an attachment after a reconnect gets every unacknowledged item marked.
    @Suite("Slow reader inbox deliveries", .serialized)
    struct DeliverySlowReaderInboxTests {
        /// Envelopes the app's socket got: inbox id → (copies, copies marked as redeliveries),
        /// the `events.dropped` sum, and whether the attach was answered.
        struct Received {
            var copies: [Int64: Int] = [:]
            var marked: [Int64: Int] = [:]
            /// Inbox ids in the order they arrived (one sending peer: its order is theirs).
            var order: [Int64] = []
            var dropped: UInt64 = 0
            var attachReplied = false
            var deliveries: Int { copies.values.reduce(0, +) }
        }

        /// Reads frames until none came for the socket's receive timeout, for at most `seconds`
        /// (a daemon that offers everything again after each catch-up never goes quiet).
        static func readUntilQuiet(_ app: RawSocket, into received: inout Received, seconds: Double = 30) async throws {
            let clock = ContinuousClock(), deadline = clock.now + .seconds(seconds)
            while clock.now < deadline, let frame = try await app.readFrame() {
                if frame.kind == .reply, frame.operation == .attach { received.attachReplied = true }
                guard frame.kind == .event, let event = try? LocalAPIDataEvent.decode(frame) else { continue }
                switch event {
                case .eventsDropped(let dropped):
                    received.dropped += dropped.dropped
                case .envelope(let envelope) where envelope.inboxID != 0:
                    let id = Int64(envelope.inboxID)
                    received.copies[id, default: 0] += 1
                    received.order.append(id)
                    if envelope.isRedelivery { received.marked[id, default: 0] += 1 }
                default:
                    break
                }
            }
        }

        @Test(.timeLimit(.minutes(2)))
        func aSlowReaderGetsEachInboxItemOnceAndItsShedItemsAgain() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let daemon = try await bed.start(name: "slow-inbox")
            let server = try await DeliveryIntegration.LocalAPIDataTests.startServer(daemon, bed: bed)
            let servers = ServerCleanup([server])
            defer { Task { await servers.shutdown() } }

            // The app attaches and then reads nothing while 400 items of 8 KiB (3.2 MiB, far
            // beyond the socket's buffers and the 256 KiB watermark) reach the daemon's inbox.
            let count = 400
            var app: RawSocket? = try RawSocket(path: server.socketPath, receiveTimeout: 2)
            app?.send(.request(.attach, id: 1, json: #"{"features":["slow"],"app":"slow"}"#))
            let peer = DeviceID(publicKey: [UInt8](repeating: 9, count: 32))
            let text = String(repeating: "s", count: 8 * 1024)
            let items = try (1...count).map { index in
                let (envelope, encoded) = try RouterFixtures.envelope(text, sequence: UInt64(index), feature: "slow")
                return (sequence: UInt64(index),
                        item: DeliveryItem(eventID: envelope.metadata.eventID, kind: 2, featureID: "slow",
                                           sessionID: envelope.metadata.sessionID, payload: encoded))
            }
            for start in stride(from: 0, to: count, by: 20) {
                await daemon.router.queueForInbox(.batch(Array(items[start..<min(start + 20, count)])), from: peer)
            }
            try await waitUntil("the inbox stored every item", timeout: 20) {
                await daemon.router.counterValues()["delivery.inbox.stored"] ?? 0 >= UInt64(count)
            }
            try await waitUntil("the connection shed events", timeout: 20) { server.counters.value(.eventsShed) > 0 }

            // The app reads again: the shed items come again, and only they.
            var first = Received()
            try await Self.readUntilQuiet(try #require(app), into: &first)
            let shed = server.counters.value(.eventsShed)
            let counters = await daemon.router.counterValues()
            print("slow-reader inbox: \(count) items, \(first.deliveries) envelopes read "
                  + "(\(String(format: "%.2f", Double(first.deliveries) / Double(count))) per item), "
                  + "\(first.marked.count) marked, \(shed) events shed, events.dropped sum \(first.dropped), "
                  + "delivery.inbox.delivered=\(counters["delivery.inbox.delivered"] ?? 0) "
                  + "delivery.inbox.reoffered=\(counters["delivery.inbox.reoffered"] ?? 0)")
            #expect(first.attachReplied)
            #expect(first.dropped == shed, "the app is told what was shed")
            #expect(first.copies.count == count, "every item reached the app")
            #expect(first.copies.values.allSatisfy { $0 == 1 },
                    "items the app had were offered again: \(first.deliveries) envelopes for \(count) items")
            #expect(first.marked.isEmpty, "\(first.marked.count) first deliveries were marked as redeliveries")
            #expect(first.order == first.order.sorted(), "out of the sender's order: \(Self.breaks(first.order))")
            // Shed items come back in rounds while the app keeps up: offered all at once they
            // overran the socket again (≈ 5.5 sheds per item before; ≈ 1.7 in rounds of 64).
            #expect(shed < UInt64(3 * count), "\(shed) events shed for \(count) items: re-offers overran the reader again")

            // The app goes away without acking; its next attachment gets every item once, marked.
            app = nil
            try await waitUntil("the first attachment ended", timeout: 5) {
                await daemon.router.counterValues()["delivery.attachments"] == 0
            }
            let again = try RawSocket(path: server.socketPath, receiveTimeout: 2)
            again.send(.request(.attach, id: 1, json: #"{"features":["slow"],"app":"slow"}"#))
            var second = Received()
            try await Self.readUntilQuiet(again, into: &second)
            #expect(second.copies.count == count)
            #expect(second.copies.values.allSatisfy { $0 == 1 })
            #expect(second.marked.count == count, "only \(second.marked.count) of \(count) redeliveries were marked")
            #expect(second.order == second.order.sorted(), "out of the sender's order: \(Self.breaks(second.order))")
        }

        /// Where `ids` step back, as "previous→next" (the first 10).
        static func breaks(_ ids: [Int64]) -> String {
            zip(ids, ids.dropFirst()).filter { $0.0 > $0.1 }.prefix(10).map { "\($0.0)→\($0.1)" }.joined(separator: ", ")
        }
    }
}
