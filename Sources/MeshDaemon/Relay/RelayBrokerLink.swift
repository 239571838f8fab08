import Logging
import MeshCore
import MeshMQTT
import NIOCore

/// The daemon's connection to its relay broker: one ``MQTTClient`` on the node's event loop,
/// kept up by ``RelayBrokerPolicy`` (reconnect with backoff, MQTT 5 or 3.1.1), its state for
/// `meshctl status`, and the messages of the topics the relay path subscribes to.
///
/// Event-loop bound: every method runs on `eventLoop`, the node's loop.
final class RelayBrokerLink {
    let settings: RelaySettings
    let eventLoop: any EventLoop
    private let client: MQTTClient
    private var policy: RelayBrokerPolicy
    private let clock: any MeshClock
    private let logger: Logger
    private var retry: Scheduled<Void>?
    private var rng = SystemRandomNumberGenerator()
    private var started = false
    /// The last state words logged, so a broker down for hours logs once, not once per retry.
    private var loggedState: String?

    /// Called on the loop for each message of a subscribed topic.
    var onMessage: ((MQTTMessage) -> Void)?
    /// Called on the loop when a connection is up (subscriptions already renewed).
    var onConnected: ((MQTTProtocolVersion) -> Void)?
    /// Called on the loop when the broker confirmed a subscription (SUBACK).
    var onSubscribed: ((String) -> Void)?
    /// Called on the loop when a connection ends or an attempt fails.
    var onDisconnected: ((MQTTFailure) -> Void)?

    /// Creates the link (not connected yet); zeroes `password` once the client holds it.
    /// `clientID` must not name the device: a random one per start suits.
    /// With `persistentSession`, the broker keeps the session (subscriptions and the QoS 1
    /// messages queued for them) under `clientID` while the link is down, and the link speaks
    /// MQTT 3.1.1 only (see ``MQTTClientOptions/cleanSession``).
    init(settings: RelaySettings, password: MQTTPassword?, clientID: String, eventLoop: any EventLoop,
         clock: any MeshClock, logger: Logger, connectTimeoutSeconds: Double = 10,
         persistentSession: Bool = false) throws(MQTTFailure) {
        self.settings = settings
        self.eventLoop = eventLoop
        self.clock = clock
        self.logger = logger
        policy = RelayBrokerPolicy(now: clock.monotonicNanoseconds(), pinned: persistentSession ? .v311 : nil)
        let options = MQTTClientOptions(host: settings.url.host, port: settings.url.port, useTLS: settings.url.useTLS,
                                        caFile: settings.caFile, username: settings.url.username, clientID: clientID,
                                        connectTimeoutSeconds: connectTimeoutSeconds, cleanSession: !persistentSession)
        let bound = NIOLoopBound(WeakLink(), eventLoop: eventLoop)
        client = try MQTTClient(options: options, password: password, eventLoop: eventLoop, logger: logger) { event in
            bound.value.link?.handle(event)
        }
        bound.value.link = self
    }

    /// Connects, and keeps connecting after failures until `stop()`.
    func start() {
        eventLoop.preconditionInEventLoop()
        guard !started else { return }
        started = true
        perform(policy.start(now: clock.monotonicNanoseconds()))
    }

    /// Disconnects and stops retrying; the link cannot start again.
    func stop() {
        eventLoop.preconditionInEventLoop()
        started = false
        retry?.cancel()
        retry = nil
        client.close()
    }

    /// Whether the broker connection is up.
    var isConnected: Bool { client.isConnected }

    /// The state for `meshctl status`.
    func status() -> RelayStatus {
        policy.status(url: settings.url, now: clock.monotonicNanoseconds(), wallNow: clock.wallSeconds())
    }

    /// Subscribes to `topic` (again on every connection).
    func subscribe(_ topic: String, qos: MQTTQoS) { client.subscribe(topic, qos: qos) }

    /// Whether the broker confirmed the subscription to `topic` on the connection that is up.
    func isSubscribed(_ topic: String) -> Bool { client.isSubscribed(topic) }

    /// Stops receiving `topic`.
    func unsubscribe(_ topic: String) { client.unsubscribe(topic) }

    /// Publishes one message; throws without a connection (nothing is queued for later).
    func publish(topic: String, payload: UnsafeRawBufferPointer, qos: MQTTQoS, expirySeconds: UInt32?) throws(MQTTFailure) {
        try client.publish(topic: topic, payload: payload, qos: qos, expirySeconds: expirySeconds)
    }

    /// Messages the client dropped on arrival for their size.
    var oversizedMessages: Int { client.oversizedMessages }

    /// QoS 1 messages the broker acknowledged since the link was created.
    var acknowledgedPublishes: UInt64 { client.acknowledgedPublishes }

    /// Whether the broker still held this client's session when the current connection began.
    var sessionPresent: Bool { client.sessionPresent }

    private func handle(_ event: MQTTClientEvent) {
        switch event {
        case .connected(let version):
            policy.connected(version, now: clock.monotonicNanoseconds())
            logState("connected", detail: version.words, level: .info)
            onConnected?(version)
        case .disconnected(let failure):
            guard started else { return }
            let action = policy.failed(failure, now: clock.monotonicNanoseconds(), using: &rng)
            logState(failure.words, detail: failure.detail, level: .warning)
            onDisconnected?(failure)
            perform(action)
        case .subscribed(let topic):
            onSubscribed?(topic)
        case .message(let message):
            onMessage?(message)
        }
    }

    private func perform(_ action: RelayBrokerPolicy.Action) {
        switch action {
        case .connect(let version):
            client.connect(offering: version)
        case .retry(let version, let delay):
            retry?.cancel()
            let bound = NIOLoopBound(WeakLink(self), eventLoop: eventLoop)
            retry = eventLoop.scheduleTask(in: .nanoseconds(Int64(min(delay, UInt64(Int64.max))))) {
                guard let link = bound.value.link, link.started else { return }
                link.retry = nil
                link.client.connect(offering: version)
            }
        }
    }

    private func logState(_ words: String, detail: String, level: Logger.Level) {
        guard loggedState != words else { return }
        loggedState = words
        logger.log(level: level, "relay broker state changed", metadata: [
            "relay.broker": "\(settings.url.endpoint)", "relay.state": "\(words)", "relay.detail": "\(detail)",
        ])
    }
}

/// A weak reference for closures the client and the loop hold.
final class WeakLink {
    weak var link: RelayBrokerLink?
    init(_ link: RelayBrokerLink? = nil) { self.link = link }
}
