import Logging
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// An MQTT client on the caller's NIO event loop, over libmosquitto's external-loop API.
///
/// Every method runs on `eventLoop`, and so does every call into libmosquitto: a
/// ``SocketReadinessWatcher`` thread only waits in poll(2) and hands readiness to the loop, where
/// the client calls `mosquitto_loop_read`/`_write`; `mosquitto_loop_misc` (keepalives) runs from
/// a one-second loop timer while a connection is up or being set up. Events (connected,
/// disconnected with a ``MQTTFailure`` in words, messages) go to `onEvent`, on the loop.
///
/// The client connects once per `connect(offering:)`: its owner decides when to retry (with
/// backoff) and which protocol version to offer. It subscribes again to its topics on every
/// connection. Call `close()` when done: it stops the watcher thread.
public final class MQTTClient {
    /// The loop every method and event runs on.
    public let eventLoop: any EventLoop
    /// Where and how it connects.
    public let options: MQTTClientOptions

    let handle: MosquittoHandle
    let box: MosquittoCallbackBox
    var watcher: SocketReadinessWatcher?
    let logger: Logger
    let onEvent: (MQTTClientEvent) -> Void

    /// Whether a connection is being set up or is up, and with which version.
    enum Phase: Equatable {
        case idle
        case connecting(MQTTProtocolVersion)
        case connected(MQTTProtocolVersion)
        case closed
    }
    var phase: Phase = .idle
    var topics: [(topic: String, qos: MQTTQoS)] = []
    /// SUBSCRIBEs sent on the connection that is up and not yet answered: message ID → topic.
    var pendingSubscriptions: [Int32: String] = [:]
    /// The topics the broker confirmed on the connection that is up (SUBACK granted).
    public internal(set) var confirmedSubscriptions: Set<String> = []
    var misc: RepeatedTask?
    var connectDeadline: Scheduled<Void>?

    /// Messages dropped on arrival because they were larger than `options.maximumPayloadBytes`.
    public internal(set) var oversizedMessages = 0
    /// QoS 1 messages the broker acknowledged (PUBACK) since the client was created: from then
    /// on they are the broker's to keep, even if this process stops.
    public internal(set) var acknowledgedPublishes: UInt64 = 0
    /// Whether the broker said, on the connection that is up (or was last up), that it still
    /// held this client's session (CONNACK session present). Always false with a clean session.
    public internal(set) var sessionPresent = false

    /// Creates the client (not yet connected); zeroes `password` once libmosquitto has its copy.
    public init(options: MQTTClientOptions, password: MQTTPassword?, eventLoop: any EventLoop, logger: Logger,
                onEvent: @escaping (MQTTClientEvent) -> Void) throws(MQTTFailure) {
        self.options = options
        self.eventLoop = eventLoop
        self.logger = logger
        self.onEvent = onEvent
        box = MosquittoCallbackBox(maximumPayloadBytes: options.maximumPayloadBytes)
        handle = try MosquittoHandle(clientID: options.clientID, cleanSession: options.cleanSession, box: box)
        defer { password?.zero() }
        if let failure = handle.configure(options, password: password) { throw failure }
        let bound = NIOLoopBound(WeakClient(self), eventLoop: eventLoop)
        watcher = try SocketReadinessWatcher(loop: eventLoop) { readiness in
            bound.value.client?.socketReady(readiness)
        }
    }

    deinit { watcher?.stop() }

    /// Whether the broker has accepted the connection and it is still up.
    public var isConnected: Bool {
        if case .connected = phase { return true }
        return false
    }

    /// The protocol version of the connection that is up, if one is.
    public var connectedVersion: MQTTProtocolVersion? {
        if case .connected(let version) = phase { return version }
        return nil
    }

    /// Stops everything: disconnects, ends the watcher thread. The client cannot connect again.
    public func close() {
        eventLoop.preconditionInEventLoop()
        guard phase != .closed else { return }
        if isConnected { _ = handle.disconnect() }
        stopTimers()
        phase = .closed
        watcher?.stop()
        watcher = nil
        box.messages.removeAll()
    }
}

/// A weak reference the watcher's closure holds, so the thread never keeps the client alive.
final class WeakClient {
    weak var client: MQTTClient?
    init(_ client: MQTTClient) { self.client = client }
}
