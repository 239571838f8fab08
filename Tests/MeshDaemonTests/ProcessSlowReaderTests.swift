#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshLocalAPI
import SessionMesh
import SessionMeshClient
import Testing

/// The slow-reader policy against two real `meshd`: an app on B attaches and then stops
/// reading while A floods it with realtime envelopes. B's memory stays bounded, other clients
/// of B are answered promptly, and once the app reads again it is told how many events were
/// shed (matching B's counters) and gets every item B's inbox holds for it.
@Suite("A stalled app on a flooded meshd", .serialized,
       .enabled(if: ChildProcess.executable("meshd") != nil && ChildProcess.executable("meshctl") != nil,
                "meshd/meshctl are not built (run `swift build` first)"))
struct ProcessSlowReaderTests {
    /// Envelopes A sends (at most; the flood also ends after `floodSeconds`).
    static let floodCount = Int(ProcessInfo.processInfo.environment["MESH_SLOW_READER_COUNT"] ?? "") ?? 200_000
    static let floodSeconds = Double(ProcessInfo.processInfo.environment["MESH_SLOW_READER_SECONDS"] ?? "") ?? 20
    static let batch = 1_024

    @Test func aStalledAppCannotGrowTheDaemonAndLearnsWhatWasShed() async throws {
        let pair = try await DaemonPair.start()
        defer { pair.stopNow() }
        let pidB = try #require(pair.b.pid)

        // The stalled app: a plain socket that attaches to "flood" and then reads nothing.
        let stalled = try RawSocket(path: pair.b.socketPath, receiveTimeout: 2)
        stalled.send(.request(.attach, id: 1, json: #"{"features":["flood"],"app":"stalled"}"#))
        let appA = try await MeshClient.connect(socketPath: pair.a.socketPath)
        let observer = try await MeshClient.connect(socketPath: pair.b.socketPath)
        defer { Task { await appA.close(); await observer.close() } }
        let presence = try await appA.attach(features: ["flood"], app: "sender")
        try await ProcessFixtures.awaitFeatureReachable(presence, peer: pair.idB, feature: "flood", timeout: 8)
        let baseline = try #require(SlowReaderProbe.residentKiB(pidB))

        // A floods B; meanwhile B's RSS is sampled and another client of B asks for status.
        let flood = Task { try await SlowReaderProbe.flood(appA, to: pair.idB, count: Self.floodCount, batch: Self.batch,
                                                           seconds: Self.floodSeconds) }
        let sampler = Task { try await SlowReaderProbe.sample(pidB, observer: observer, every: .milliseconds(100)) }
        let sent: SlowReaderProbe.Flood
        do {
            sent = try await flood.value
        } catch {
            sampler.cancel()
            throw error
        }
        sampler.cancel()
        let samples = try await sampler.value
        let peakDuring = max(baseline, samples.peakKiB), slowestStatus = samples.slowestStatus, statusCalls = samples.statusCalls
        try await Task.sleep(for: .seconds(2))
        let after = try #require(SlowReaderProbe.residentKiB(pidB))
        let during = try await observer.status().counters

        // The bound: B's working set plus what the configured limits let it hold for one
        // stalled app — 8192 deferred live envelopes and 8192 held attach events (~0.5 KiB each
        // as frames), 256 KiB of outbound buffer, 64 Ki remembered realtime event IDs, SQLite's
        // page caches — is a few MiB; 48 MiB leaves room for allocator arenas and the debug
        // build. The unbounded growth this guards against reached +88 MiB at 400 000 envelopes.
        let boundKiB = baseline + 48 * 1024
        print("""
            slow-reader flood: sent \(sent.sent) realtime envelopes (\(sent.queued) queued by A) in \
            \(String(format: "%.1f", sent.seconds)) s (\(Int(Double(sent.sent) / max(sent.seconds, 0.001)))/s); \
            B RSS baseline \(baseline / 1024) MiB, peak during \(peakDuring / 1024) MiB, 2 s after \(after / 1024) MiB \
            (bound \(boundKiB / 1024) MiB); \(statusCalls) status calls, slowest \(slowestStatus)
            B RSS (anonymous) MiB per second: \(samples.trajectory.map { "\($0.0)s:\($0.1)(\($0.2))" }.joined(separator: " "))
            B counters: \(SlowReaderProbe.relevant(during))
            """)
        #expect(sent.sent >= 50_000, "the flood was too small to test anything")
        #expect(peakDuring < boundKiB, "B's RSS reached \(peakDuring / 1024) MiB (baseline \(baseline / 1024) MiB)")
        #expect(after < boundKiB, "B's RSS stayed at \(after / 1024) MiB after the flood")
        #expect(statusCalls >= 5)
        // Blocked would mean never; the bound is loose because other builds share the 2 cores.
        #expect(slowestStatus < .seconds(3), "a status call took \(slowestStatus) during the flood")
        #expect((during["api.events.shed"] ?? 0) > 0, "nothing was shed: the app did not stall")

        // The app reads again: it is told what was shed, and gets every inbox item (the realtime
        // fallbacks B stored), which it acknowledges (through another connection of B).
        let acker = try await MeshClient.connect(socketPath: pair.b.socketPath)
        defer { Task { await acker.close() } }
        let read = try await SlowReaderProbe.drain(stalled, acker: acker, quiet: 2, seconds: 20)
        let final = try await observer.status().counters
        print("""
            slow-reader drain: attach reply \(read.attachReplied), \(read.frames) frames in \
            \(String(format: "%.1f", read.seconds)) s, \(read.dropped.count) events.dropped (sum \(read.dropped.reduce(0, +))), \
            \(read.live) live envelopes, \(read.inboxIDs.count) distinct inbox items (\(read.redeliveries) redeliveries), \
            \(read.acknowledged) acknowledged
            B counters: \(SlowReaderProbe.relevant(final))
            """)
        #expect(read.attachReplied)
        #expect(read.dropped.reduce(0, +) > 0, "the app was not told that events were shed")
        // Only this app's connection sheds, so what it was told is what B counted.
        #expect(read.dropped.reduce(0, +) == final["api.events.shed"] ?? 0)
        #expect(final["delivery.realtime.shed_during_replay"] ?? 0 <= final["api.events.shed"] ?? 0)
        // Every item B's inbox stored reached the app, and the app's acks removed them all.
        #expect(UInt64(read.inboxIDs.count) == (final["delivery.inbox.stored"] ?? 0))
        #expect(read.acknowledged == read.inboxIDs.count)
        // B's memory after the drain is still within the bound.
        let drained = try #require(SlowReaderProbe.residentKiB(pidB))
        print("slow-reader: B RSS after the drain \(drained / 1024) MiB")
        #expect(drained < boundKiB)
    }
}
