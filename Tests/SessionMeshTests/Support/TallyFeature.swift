import Foundation
import SessionMesh

/// A test feature whose operations commute (`add`) or are last-writer-wins by
/// (causalTimestamp, peer id) (`set`), and which counts how often each event was applied, so
/// "applied twice" is visible in the state itself.
struct TallyState: Codable, Sendable, Equatable {
    struct Stamped: Codable, Sendable, Equatable {
        var value: Int
        var at: Date
        var peer: String
    }

    var total = 0
    var registers: [String: Stamped] = [:]
    /// "peer#sequence" → how many times that event reached the reducer's apply path.
    var applied: [String: Int] = [:]
}

enum TallyEvent: Codable, Sendable, Equatable {
    case add(Int)
    case set(key: String, value: Int)
}

struct TallyReducer: SessionSyncReducer {
    func reduce(state: inout TallyState, event: TallyEvent, context: SessionEventContext) throws {
        let m = context.metadata
        state.applied["\(m.sourcePeerID)#\(m.sequence)", default: 0] += 1
        switch event {
        case let .add(amount):
            state.total += amount
        case let .set(key, value):
            let candidate = TallyState.Stamped(value: value, at: m.causalTimestamp, peer: m.sourcePeerID)
            if let current = state.registers[key], (current.at, current.peer) >= (candidate.at, candidate.peer) { return }
            state.registers[key] = candidate
        }
    }
}

/// Refuses `add` events with a negative amount: a state-independent policy for unit tests.
struct NoNegativeAddsPolicy: SessionConflictPolicy {
    func shouldApply(event: TallyEvent, context: SessionConflictContext<TallyState>) -> Bool {
        if case let .add(amount) = event { return amount >= 0 }
        return true
    }
}

typealias TallyEngine = SessionSyncEngine<TallyState, TallyEvent, TallyReducer, AcceptAllConflictPolicy<TallyState, TallyEvent>>

enum Fixture {
    static let session = UUID(uuidString: "5E551011-0000-4000-8000-000000000001")!
    static let otherSession = UUID(uuidString: "5E551011-0000-4000-8000-000000000002")!
    static let feature = "tally"
    static let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    static func peer(_ id: String, _ device: SessionPeer.DeviceClass = .desktop) -> SessionPeer {
        SessionPeer(id: id, deviceClass: device, appInstanceID: "\(id)-app", userID: nil, topology: .localNetwork)
    }

    static func engine(_ id: String, seed: UInt64 = 1, historyLimit: Int = 1024, dedupMemory: Int = 1024) -> TallyEngine {
        let salt = id.utf8.reduce(UInt64(0)) { $0 &* 31 &+ UInt64($1) }
        return TallyEngine(
            sessionID: session, featureID: feature, localPeer: peer(id), initialState: TallyState(),
            reducer: TallyReducer(), conflictPolicy: AcceptAllConflictPolicy(),
            configuration: SessionSyncEngineConfiguration(
                dedupMemory: dedupMemory, historyLimit: historyLimit,
                eventIDs: SessionEventIDGenerator(seed: seed &* 0x9E37_79B9 &+ salt)))
    }

    static func at(_ seconds: Double) -> Date { t0.addingTimeInterval(seconds) }
}

/// Reads an integer setting from the environment, with a default.
func environmentInteger(_ name: String, default value: UInt64) -> UInt64 {
    ProcessInfo.processInfo.environment[name].flatMap { UInt64($0) } ?? value
}
