import Logging
import MeshCore
import MeshMQTT
import NIOCore

/// What the relay path (`RelayTransport`, `RelayMailbox`, `NodeRelay`) needs of a broker
/// connection: connect and stay connected, subscribe, publish, and hear messages and state
/// changes. `RelayBrokerLink` (the real MQTT client) is the daemon's; the simulator gives the
/// node a simulated broker's connections instead (`RelayBrokerFactory`).
///
/// Event-loop bound like `RelayBrokerLink`: every member is used on the node's loop.
package protocol RelayBrokerConnection: AnyObject {
    /// Called on the loop for each message of a subscribed topic.
    var onMessage: ((MQTTMessage) -> Void)? { get set }
    /// Called on the loop when a connection is up (subscriptions already renewed).
    var onConnected: ((MQTTProtocolVersion) -> Void)? { get set }
    /// Called on the loop when a connection ends or an attempt fails.
    var onDisconnected: ((MQTTFailure) -> Void)? { get set }
    /// Called on the loop when the broker confirmed a subscription (its SUBACK), with its topic.
    var onSubscribed: ((String) -> Void)? { get set }
    /// Connects, and keeps connecting after failures until `stop()`.
    func start()
    /// Disconnects and stops retrying; the connection cannot start again.
    func stop()
    /// Whether the broker connection is up.
    var isConnected: Bool { get }
    /// The state for `meshctl status`.
    func status() -> RelayStatus
    /// Subscribes to `topic` (again on every connection).
    func subscribe(_ topic: String, qos: MQTTQoS)
    /// Stops receiving `topic`.
    func unsubscribe(_ topic: String)
    /// Whether the broker confirmed the subscription to `topic` on the current connection.
    func isSubscribed(_ topic: String) -> Bool
    /// Publishes one message; throws without a connection (nothing is queued for later).
    func publish(topic: String, payload: UnsafeRawBufferPointer, qos: MQTTQoS, expirySeconds: UInt32?) throws(MQTTFailure)
    /// Messages dropped on arrival for their size.
    var oversizedMessages: Int { get }
    /// QoS 1 messages the broker acknowledged since the connection was created.
    var acknowledgedPublishes: UInt64 { get }
    /// Whether the broker still held this client's session when the current connection began.
    var sessionPresent: Bool { get }
}

/// What a broker connection is made from: the node's relay settings and the client's own.
package struct RelayBrokerRequest {
    package var settings: RelaySettings
    /// Zeroed by the connection once its client holds it.
    package var password: MQTTPassword?
    package var clientID: String
    package var eventLoop: any EventLoop
    package var clock: any MeshClock
    package var logger: Logger
    /// The broker keeps the session (subscriptions, queued QoS 1 messages) while the
    /// connection is down (the mailbox's).
    package var persistentSession: Bool

    package init(settings: RelaySettings, password: MQTTPassword?, clientID: String, eventLoop: any EventLoop,
                 clock: any MeshClock, logger: Logger, persistentSession: Bool) {
        self.settings = settings
        self.password = password
        self.clientID = clientID
        self.eventLoop = eventLoop
        self.clock = clock
        self.logger = logger
        self.persistentSession = persistentSession
    }
}

/// Makes the node's broker connections: real MQTT clients in the daemon
/// (`RelayBrokerLinkFactory`), a simulated broker's in the simulator.
package protocol RelayBrokerFactory: AnyObject {
    /// A new connection (not started) for `request`.
    func connection(for request: RelayBrokerRequest) throws(MQTTFailure) -> any RelayBrokerConnection
}

/// The daemon's broker connections: one `RelayBrokerLink` (a real MQTT client) per request.
final class RelayBrokerLinkFactory: RelayBrokerFactory {
    func connection(for request: RelayBrokerRequest) throws(MQTTFailure) -> any RelayBrokerConnection {
        try RelayBrokerLink(settings: request.settings, password: request.password, clientID: request.clientID,
                            eventLoop: request.eventLoop, clock: request.clock, logger: request.logger,
                            persistentSession: request.persistentSession)
    }
}

extension RelayBrokerLink: RelayBrokerConnection {}
