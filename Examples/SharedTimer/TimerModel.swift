import Foundation
import SessionMesh

/// What one tap on a device does to the shared timer.
///
/// On the wire (payload type `sharedtimer.event.v1`): `{"action": "start"|"pause"|"resume"|"lap",
/// "at": MICROS}`, `at` being microseconds since 1970 on the tapping device's clock. The
/// Python example (clients/python/examples/shared_timer.py) reads and writes the same bytes.
struct TimerEvent: Sendable, Codable, Equatable {
    enum Action: String, Sendable, Codable, CaseIterable {
        case start, pause, resume, lap
    }

    var action: Action
    /// Microseconds since 1970 on the sender's clock.
    var at: Int64
}

/// The timer everyone sees: an anchor (nil before the first start) and the laps taken.
///
/// On the wire (payload type `sharedtimer.state.v1`): `{"timer": null | {"startedAt": MICROS,
/// "accumulated": MICROS, "pausedAt": MICROS|null}, "laps": [MICROS…]}`. Instants are
/// microseconds since 1970, `accumulated` and the laps are elapsed microseconds.
struct TimerState: Sendable, Equatable {
    var timer: SessionTimerAnchor?
    /// Elapsed time at each lap, in microseconds.
    var laps: [Int64] = []

    /// Active time at `instant`, in microseconds (0 before the start).
    func elapsedMicroseconds(at instant: Date) -> Int64 {
        timer?.elapsedMicroseconds(at: instant) ?? 0
    }

    /// `stopped`, `running` or `paused`.
    var phase: String {
        guard let timer else { return "stopped" }
        return timer.isPaused ? "paused" : "running"
    }
}

/// The timer's rules, identical on every device (the Python example implements the same):
/// start only a stopped timer, pause a running one, resume a paused one, lap a started one;
/// anything else changes nothing.
struct TimerReducer: SessionSyncReducer {
    func reduce(state: inout TimerState, event: TimerEvent, context: SessionEventContext) throws {
        let instant = UnixMicros.date(event.at)
        switch event.action {
        case .start:
            if state.timer == nil { state.timer = .started(at: instant) }
        case .pause:
            state.timer = state.timer?.paused(at: instant)
        case .resume:
            state.timer = state.timer?.resumed(at: instant)
        case .lap:
            if let timer = state.timer { state.laps.append(timer.elapsedMicroseconds(at: instant)) }
        }
    }
}

/// The engine the example runs.
typealias TimerEngine = SessionSyncEngine<TimerState, TimerEvent, TimerReducer, AcceptAllConflictPolicy<TimerState, TimerEvent>>

/// Payload type names both implementations use.
enum TimerPayload {
    static let event = "sharedtimer.event.v1"
    static let state = "sharedtimer.state.v1"
}

/// Instants as whole microseconds since 1970: the form the payloads carry, exact both ways for
/// the anchor's microsecond arithmetic.
enum UnixMicros {
    static func date(_ micros: Int64) -> Date { Date(timeIntervalSince1970: Double(micros) / 1_000_000) }
    static func of(_ date: Date) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1_000_000).rounded()
        guard value.isFinite, abs(value) < 9.0e18 else { return 0 }
        return Int64(value)
    }
}

extension TimerState: Codable {
    private enum Keys: String, CodingKey { case timer, laps }
    private enum AnchorKeys: String, CodingKey { case startedAt, accumulated, pausedAt }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        laps = try container.decodeIfPresent([Int64].self, forKey: .laps) ?? []
        guard container.contains(.timer), try !container.decodeNil(forKey: .timer) else { return }
        let anchor = try container.nestedContainer(keyedBy: AnchorKeys.self, forKey: .timer)
        let startedAt = try anchor.decode(Int64.self, forKey: .startedAt)
        let accumulated = try anchor.decode(Int64.self, forKey: .accumulated)
        let pausedAt = try anchor.decodeIfPresent(Int64.self, forKey: .pausedAt)
        guard accumulated >= 0 else {
            throw DecodingError.dataCorruptedError(forKey: .accumulated, in: anchor, debugDescription: "accumulated time is negative")
        }
        timer = SessionTimerAnchor(startedAt: UnixMicros.date(startedAt),
                                   accumulatedElapsedBeforeAnchor: Double(accumulated) / 1_000_000,
                                   pauseStartedAt: pausedAt.map(UnixMicros.date), isPaused: pausedAt != nil)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(laps, forKey: .laps)
        guard let timer else {
            try container.encodeNil(forKey: .timer)
            return
        }
        var anchor = container.nestedContainer(keyedBy: AnchorKeys.self, forKey: .timer)
        try anchor.encode(UnixMicros.of(timer.startedAt), forKey: .startedAt)
        try anchor.encode(Int64((timer.accumulatedElapsedBeforeAnchor * 1_000_000).rounded()), forKey: .accumulated)
        if timer.isPaused, let paused = timer.pauseStartedAt {
            try anchor.encode(UnixMicros.of(paused), forKey: .pausedAt)
        } else {
            try anchor.encodeNil(forKey: .pausedAt)
        }
    }
}
