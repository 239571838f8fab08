import MeshCore
import MeshMQTT

/// The decisions about the daemon's connection to its relay broker, as a value: which MQTT
/// version to offer, when to try again after a failure (jittered exponential backoff), and the
/// state a user sees, in words.
///
/// MQTT 5 is offered first. A broker that refuses it (CONNACK "unsupported protocol version", or
/// a 3.1.1 broker's reply libmosquitto cannot read as MQTT 5) is offered 3.1.1 at once; a broker
/// that then refuses 3.1.1 is offered 5 again, after the backoff.
struct RelayBrokerPolicy: Sendable {
    /// What the link does next.
    enum Action: Equatable, Sendable {
        /// Connect now, offering this version.
        case connect(MQTTProtocolVersion)
        /// Connect after `afterNanoseconds`, offering this version.
        case retry(MQTTProtocolVersion, afterNanoseconds: UInt64)
    }

    /// The state a user sees.
    enum State: Equatable, Sendable {
        case connecting
        case connected(MQTTProtocolVersion)
        case failed(MQTTFailure, retryAt: UInt64)
    }

    private(set) var offered: MQTTProtocolVersion = .v5
    private(set) var state: State = .connecting
    /// Monotonic time the state began.
    private(set) var since: UInt64
    private var backoff: ReconnectBackoff
    private let pinned: MQTTProtocolVersion?

    /// A policy whose first attempt is now; delays from `initialSeconds` doubling to `maximumSeconds`.
    /// With `pinned`, only that version is ever offered (the mailbox's persistent session needs
    /// 3.1.1, see ``RelayMailbox``).
    init(now: UInt64, initialSeconds: Double = 0.5, maximumSeconds: Double = 30, pinned: MQTTProtocolVersion? = nil) {
        since = now
        self.pinned = pinned
        if let pinned { offered = pinned }
        backoff = ReconnectBackoff(initialSeconds: initialSeconds, maximumSeconds: maximumSeconds, jitter: 0.25)
    }

    /// The first attempt.
    mutating func start(now: UInt64) -> Action {
        state = .connecting
        since = now
        return .connect(offered)
    }

    /// The broker accepted a connection.
    mutating func connected(_ version: MQTTProtocolVersion, now: UInt64) {
        backoff.reset()
        state = .connected(version)
        since = now
    }

    /// An attempt failed or a connection ended: what to do next.
    mutating func failed<R: RandomNumberGenerator>(_ failure: MQTTFailure, now: UInt64, using rng: inout R) -> Action {
        if failure.kind == .protocolRefused, pinned == nil {
            let previous = offered
            offered = previous == .v5 ? .v311 : .v5
            if previous == .v5 {
                state = .connecting
                return .connect(offered)
            }
        }
        let delay = backoff.nextDelay(using: &rng)
        if case .failed(let previous, _) = state, previous.kind == failure.kind {
            // Same trouble again: the state keeps its start time.
        } else {
            since = now
        }
        state = .failed(failure, retryAt: now &+ delay)
        return .retry(offered, afterNanoseconds: delay)
    }

    /// Whether the state is `connected`.
    var isConnected: Bool {
        if case .connected = state { return true }
        return false
    }

    /// The state for `meshctl status`.
    func status(url: RelayURL, now: UInt64, wallNow: Double) -> RelayStatus {
        let sinceWall = wallNow - Double(Int64(bitPattern: now &- since)) / 1e9
        switch state {
        case .connecting:
            return RelayStatus(url: url.description, host: url.host, state: "connecting", since: sinceWall)
        case .connected(let version):
            return RelayStatus(url: url.description, host: url.host, state: "connected", mqtt: version.words, since: sinceWall)
        case .failed(let failure, let retryAt):
            let wait = retryAt > now ? Double(retryAt - now) / 1e9 : 0
            return RelayStatus(url: url.description, host: url.host, state: failure.words, detail: failure.detail,
                               since: sinceWall, retryInSeconds: wait)
        }
    }
}
