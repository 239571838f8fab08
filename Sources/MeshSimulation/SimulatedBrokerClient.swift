import Logging
import MeshCore
import MeshDaemon
import MeshMQTT
import NIOCore

/// One broker connection of a simulated node (its relay's or its mailbox's): what
/// `RelayBrokerLink` is to the daemon, over a `SimulatedBroker`. It connects after a round
/// trip, renews its subscriptions on every connection, and after a failure or an outage
/// retries after 0.1 s, doubling to 2 s, until `stop()`.
///
/// Event-loop bound: everything runs on the node's loop (the simulation's thread).
package final class SimulatedBrokerClient: RelayBrokerConnection, @unchecked Sendable {
    static let firstRetry: UInt64 = 100_000_000
    static let maximumRetry: UInt64 = 2_000_000_000

    let broker: SimulatedBroker
    let clientID: String
    let persistent: Bool
    let loop: any EventLoop
    private let settings: RelaySettings
    private let clock: any MeshClock
    package var onMessage: ((MQTTMessage) -> Void)?
    package var onConnected: ((MQTTProtocolVersion) -> Void)?
    package var onDisconnected: ((MQTTFailure) -> Void)?
    /// The simulated broker takes a subscription at once: confirmed on the next loop turn.
    package var onSubscribed: ((String) -> Void)?
    private(set) var subscriptions: [String: MQTTQoS] = [:]
    package private(set) var isConnected = false
    package private(set) var sessionPresent = false
    package private(set) var acknowledgedPublishes: UInt64 = 0
    package let oversizedMessages = 0
    private var started = false
    /// Counts connections, so a delivery meant for an earlier one is not taken.
    private var connection: UInt64 = 0
    private var retry = SimulatedBrokerClient.firstRetry
    private var since: Double?

    init(broker: SimulatedBroker, request: RelayBrokerRequest) {
        self.broker = broker
        clientID = request.clientID
        persistent = request.persistentSession
        loop = request.eventLoop
        settings = request.settings
        clock = request.clock
    }

    package func start() {
        guard !started else { return }
        started = true
        attempt(after: 2 * broker.faults.minimumDelay)
    }

    package func stop() {
        started = false
        guard isConnected else { return }
        isConnected = false
        broker.disconnect(self)
    }

    package func status() -> RelayStatus {
        RelayStatus(url: settings.url.description, host: settings.url.host, state: isConnected ? "connected" : "connecting",
                    mqtt: isConnected ? (persistent ? MQTTProtocolVersion.v311 : .v5).words : nil, since: since)
    }

    package func subscribe(_ topic: String, qos: MQTTQoS) {
        subscriptions[topic] = qos
        guard isConnected else { return }
        broker.subscriptionsChanged(self)
        confirm([topic])
    }

    package func isSubscribed(_ topic: String) -> Bool { isConnected && subscriptions[topic] != nil }

    /// Tells `onSubscribed` of `topics` on the next loop turn, if still subscribed then.
    private func confirm(_ topics: [String]) {
        let current = connection
        loop.execute { [self] in
            for topic in topics where current == connection && isSubscribed(topic) { onSubscribed?(topic) }
        }
    }

    package func unsubscribe(_ topic: String) {
        subscriptions[topic] = nil
        if isConnected { broker.subscriptionsChanged(self) }
    }

    package func publish(topic: String, payload: UnsafeRawBufferPointer, qos: MQTTQoS, expirySeconds: UInt32?) throws(MQTTFailure) {
        guard isConnected else { throw MQTTFailure(.unreachable, "not connected to the simulated broker") }
        broker.publish(MQTTMessage(topic: topic, payload: Array(payload)), qos: qos)
        if qos == .atLeastOnce { acknowledgedPublishes &+= 1 }
    }

    // MARK: - From the broker

    /// A message due `delay` ns from now, for this connection only.
    func deliver(_ message: MQTTMessage, id: UInt64, in delay: UInt64) {
        let current = connection
        loop.scheduleTask(in: .nanoseconds(Int64(min(delay, UInt64(Int64.max))))) { [self] in
            guard current == connection, isConnected else { return }
            broker.taken(id, by: self)
            onMessage?(message)
        }
    }

    /// The broker dropped this connection (an outage, or a takeover of its session).
    func brokerDropped() {
        guard isConnected else { return }
        isConnected = false
        since = Double(clock.wallNanoseconds()) / 1e9
        let current = connection
        loop.execute { [self] in
            guard current == connection, started else { return }
            onDisconnected?(MQTTFailure(.unreachable, "the simulated broker dropped the connection"))
            attempt(after: retry)
        }
    }

    private func attempt(after delay: UInt64) {
        loop.scheduleTask(in: .nanoseconds(Int64(delay))) { [self] in
            guard started, !isConnected else { return }
            guard let present = broker.connect(self) else {
                onDisconnected?(MQTTFailure(.unreachable, "the simulated broker is down"))
                retry = min(retry * 2, Self.maximumRetry)
                return attempt(after: retry)
            }
            connection += 1
            isConnected = true
            sessionPresent = present
            retry = Self.firstRetry
            since = Double(clock.wallNanoseconds()) / 1e9
            onConnected?(persistent ? .v311 : .v5)
            confirm(subscriptions.keys.sorted())
            if persistent { broker.resume(self) }
        }
    }
}
