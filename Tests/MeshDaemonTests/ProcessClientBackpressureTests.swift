import Foundation
import MeshLocalAPI
import SessionMesh
@testable import SessionMeshClient
import Testing

/// A `MeshClient` app on B that stops consuming its events while A floods it: the client holds
/// at most its bound (it stops reading instead), B sheds realtime events and says so in
/// `events.dropped`, and once the app catches up it gets every reliable item.
@Suite("A MeshClient app that stalls on a flooded meshd", .serialized,
       .enabled(if: ChildProcess.executable("meshd") != nil && ChildProcess.executable("meshctl") != nil,
                "meshd/meshctl are not built (run `swift build` first)"))
struct ProcessClientBackpressureTests {
    /// What the consuming app saw.
    struct Seen: Sendable {
        var dropped: UInt64 = 0
        var live = 0
        var inboxIDs = Set<UInt64>()
        var reliableSequences = Set<UInt64>()
    }

    @Test func theClientStaysBoundedTheDaemonShedsAndEveryReliableItemArrives() async throws {
        let pair = try await DaemonPair.start()
        defer { pair.stopNow() }
        let limits = MeshEventBufferLimits(capacity: 256, lowWatermark: 64)
        let app = try await MeshClient.connect(socketPath: pair.b.socketPath, eventBufferLimits: limits)
        let appA = try await MeshClient.connect(socketPath: pair.a.socketPath)
        let observer = try await MeshClient.connect(socketPath: pair.b.socketPath)
        let acker = try await MeshClient.connect(socketPath: pair.b.socketPath)
        defer { Task { await app.close(); await appA.close(); await observer.close(); await acker.close() } }
        let attachment = try await app.attach(features: ["flood"], app: "stalled")
        let presence = try await appA.attach(features: ["flood"], app: "sender")
        try await ProcessFixtures.awaitFeatureReachable(presence, peer: pair.idB, feature: "flood", timeout: 8)

        // A floods B's app (realtime) with reliable items among the flood; the app reads nothing.
        let payload = String(repeating: "x", count: 128)
        let start = Date()
        var realtimeSent = 0, reliableSent: UInt64 = 0, peakBuffered = 0, round = 0
        var shed: UInt64 = 0
        while Date().timeIntervalSince(start) < 40, shed == 0 || reliableSent < 320 {
            round += 1
            let realtime = (0..<1_024).map { ProcessFixtures.envelope(UInt64(round * 1_024 + $0), feature: "flood", source: "flooder", payload: payload) }
            realtimeSent += try await appA.send(envelopes: realtime, mode: .realtimeBestEffort, to: pair.idB).count { (try? $0.get()) != nil }
            let reliable = (1...16).map { ProcessFixtures.envelope(reliableSent + UInt64($0), feature: "flood", source: "reliable", payload: payload) }
            let results = try await appA.send(envelopes: reliable, mode: .reliableEventually, to: pair.idB)
            #expect(results.allSatisfy { (try? $0.get()) != nil })
            reliableSent += UInt64(reliable.count)
            peakBuffered = max(peakBuffered, try await app.bufferedEvents().perStream.max() ?? 0)
            if round.isMultiple(of: 4) { shed = try await observer.status().counters["api.events.shed"] ?? 0 }
        }
        let during = try await observer.status().counters
        print("""
            client back-pressure flood: \(realtimeSent) realtime and \(reliableSent) reliable envelopes in \
            \(String(format: "%.1f", Date().timeIntervalSince(start))) s; the stalled app's stream held at most \
            \(peakBuffered) events (bound \(limits.capacity)); B counters: \(SlowReaderProbe.relevant(during))
            """)
        #expect(peakBuffered <= limits.capacity)
        #expect((during["api.events.shed"] ?? 0) > 0, "B shed nothing: the client kept reading")

        // All of A's reliable items are in B's inbox before the app catches up.
        try await waitUntil("B stored the reliable items", timeout: 30) {
            try await observer.status().counters["delivery.inbox.stored"] ?? 0 >= reliableSent
        }

        // The app reads again, acking inbox items through another connection as they come.
        let seen = Locked(Seen())
        let reader = Task {
            for await event in attachment.events {
                switch event {
                case .eventsDropped(let count):
                    seen.withLock { $0.dropped += count }
                case .envelope(let envelope) where envelope.inboxID == 0:
                    seen.withLock { $0.live += 1 }
                case .envelope(let envelope):
                    let fresh = seen.withLock { seen in
                        if envelope.envelope.metadata.sourcePeerID == "reliable" {
                            seen.reliableSequences.insert(envelope.envelope.metadata.sequence)
                        }
                        return seen.inboxIDs.insert(envelope.inboxID).inserted
                    }
                    if fresh { _ = try? await acker.ackInbox([envelope.inboxID]) }
                default:
                    break
                }
            }
        }
        defer { reader.cancel() }
        try await waitUntil("the app got every reliable item and was told what B shed", timeout: 60) {
            let counters = try await observer.status().counters
            let now = seen.withLock { $0 }
            return now.reliableSequences.count == Int(reliableSent)
                && UInt64(now.inboxIDs.count) == counters["delivery.inbox.stored"] ?? 0
                && now.dropped == counters["api.events.shed"] ?? 0
        }
        let final = try await observer.status().counters
        let result = seen.withLock { $0 }
        print("""
            client back-pressure drain: \(result.live) live envelopes, \(result.inboxIDs.count) inbox items \
            (\(result.reliableSequences.count) of \(reliableSent) reliable), told of \(result.dropped) shed events; \
            B counters: \(SlowReaderProbe.relevant(final))
            """)
        #expect(result.reliableSequences == Set(1...reliableSent))
        #expect(result.dropped > 0)
        #expect(result.dropped == final["api.events.shed"] ?? 0)
    }
}
