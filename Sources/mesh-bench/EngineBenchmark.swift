import Foundation
import SessionMesh

/// `mesh-bench engine [--events N]`: submit + receive rate between two engines, the same through
/// the full wire path (payload coding + `SessionWireCodec`), the codec alone, and resident
/// memory while one session runs to N events (default 1 000 000) — flat RSS shows that dedup
/// and history memory are bounded.
enum EngineBenchmark {
    struct CounterState: Codable, Sendable, Equatable {
        var total: Int64 = 0
        var last: Int64 = 0
    }

    enum CounterEvent: Codable, Sendable {
        case add(Int64)
    }

    struct CounterReducer: SessionSyncReducer {
        func reduce(state: inout CounterState, event: CounterEvent, context: SessionEventContext) throws {
            if case let .add(n) = event {
                state.total &+= n
                state.last = n
            }
        }
    }

    typealias Engine = SessionSyncEngine<CounterState, CounterEvent, CounterReducer, AcceptAllConflictPolicy<CounterState, CounterEvent>>

    static func run(arguments: [String]) {
        var events = 1_000_000
        if let i = arguments.firstIndex(of: "--events"), i + 1 < arguments.count, let n = Int(arguments[i + 1]), n > 0 { events = n }
        do {
            try runAll(events: events)
        } catch {
            FileHandle.standardError.write(Data("engine benchmark failed: \(error)\n".utf8))
            exit(1)
        }
    }

    static func makePair() -> (Engine, Engine) {
        let session = UUID(uuidString: "BE4C0000-0000-4000-8000-000000000001")!
        func engine(_ id: String, _ seed: UInt64) -> Engine {
            Engine(sessionID: session, featureID: "bench", localPeer: SessionPeer(id: id, deviceClass: .server, appInstanceID: id),
                   initialState: CounterState(), reducer: CounterReducer(), conflictPolicy: AcceptAllConflictPolicy(),
                   configuration: SessionSyncEngineConfiguration(eventIDs: SessionEventIDGenerator(seed: seed)))
        }
        return (engine("a", 1), engine("b", 2))
    }

    static func runAll(events: Int) throws {
        let epoch = Date(timeIntervalSince1970: 1_700_000_000)
        print("engine benchmark: \(events) events in one session, release build expected")
        print(String(format: "  RSS at start:                    %8.1f MiB", rssMiB()))

        // 1. Engine only: A submits, B receives, one session.
        var (a, b) = makePair()
        let checkpoints = Set([events / 10, events / 2])
        var clock = ContinuousClock.now
        for i in 1...events {
            let envelope = try a.submitLocal(.add(Int64(i)), at: epoch.addingTimeInterval(Double(i) / 1000))
            guard case .applied = try b.receive(envelope) else { throw BenchError("event \(i) not applied") }
            if checkpoints.contains(i) {
                print(String(format: "  RSS after %9d events:        %8.1f MiB", i, rssMiB()))
            }
        }
        var elapsed = seconds(since: clock)
        guard a.state == b.state else { throw BenchError("engines diverged") }
        print(String(format: "  engine submit+receive:           %8.0f events/s  (%.2f s)", Double(events) / elapsed, elapsed))
        print(String(format: "  RSS after %9d events:        %8.1f MiB  (dedup ids held: %d, history held: %d)",
                     events, rssMiB(), b.rememberedEventIDCount, b.historyCount))

        // 2. Full wire path: typed -> erased (JSON payload) -> wire bytes -> erased -> typed.
        let wireEvents = max(1, events / 5)
        (a, b) = makePair()
        clock = ContinuousClock.now
        var bytesTotal = 0
        for i in 1...wireEvents {
            let envelope = try a.submitLocal(.add(Int64(i)), at: epoch.addingTimeInterval(Double(i) / 1000))
            let bytes = try SessionWireCodec.encode(AnySessionSyncEnvelope(envelope))
            bytesTotal += bytes.count
            let received = try SessionWireCodec.decodeEnvelope(bytes).typed(as: CounterEvent.self)
            guard case .applied = try b.receive(received) else { throw BenchError("wire event \(i) not applied") }
        }
        elapsed = seconds(since: clock)
        print(String(format: "  submit+JSON+wire+receive:        %8.0f events/s  (%d events, %.0f B/envelope)",
                     Double(wireEvents) / elapsed, wireEvents, Double(bytesTotal) / Double(wireEvents)))

        // 3. Codec alone on one envelope.
        let sample = try AnySessionSyncEnvelope(a.submitLocal(.add(1), at: epoch))
        let rounds = max(1, events / 2)
        clock = ContinuousClock.now
        var sink = 0
        for _ in 0..<rounds {
            let bytes = try SessionWireCodec.encode(sample)
            sink &+= Int(try SessionWireCodec.decodeEnvelope(bytes).metadata.sequence)
        }
        elapsed = seconds(since: clock)
        print(String(format: "  wire encode+decode:              %8.0f envelopes/s (%.0f ns each; check %d)",
                     Double(rounds) / elapsed, elapsed / Double(rounds) * 1e9, sink % 7))
    }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let d = ContinuousClock.now - start
        return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    /// VmRSS from /proc/self/status, in MiB (0 where unavailable).
    static func rssMiB() -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let kb = line.split(separator: " ").dropFirst().first.flatMap { Double($0) } ?? 0
            return kb / 1024
        }
        return 0
    }

    struct BenchError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
