import Logging
import MeshCore
import MeshDaemon
import MeshMQTT
import NIOCore

/// A simulated MQTT broker on virtual time: the relay path's broker in the simulator, which
/// the nodes' real `RelayTransport` and `RelayMailbox` reach through `SimulatedBrokerClient`s
/// (their `RelayBrokerConnection`).
///
/// - **Routing**: exact topic names (the relay subscribes to nothing else), QoS 0 and 1, the
///   lower of the publish's and the subscription's QoS.
/// - **Sessions**: a clean session ends with its connection; a persistent one (the mailbox's)
///   keeps its subscriptions and its QoS 1 messages while its client is away, and hands them
///   over again (with those delivered but not yet taken) when a client with its ID connects;
///   a new connection under a live client's ID takes the session over.
/// - **Faults** (`BrokerFaults`, seeded): delay, QoS 0 loss, duplication, reordering, replay of
///   an earlier message of the topic, and outages (`setDown`) that disconnect every client and
///   refuse connects. Without reordering, one subscriber gets its messages in publish order.
///
/// Every delivery is a timer on the subscriber's loop, so it happens in virtual time order
/// with everything else; every draw comes from the broker's own random stream.
public final class SimulatedBroker: RelayBrokerFactory, @unchecked Sendable {
    /// What the broker did, for the run summary and the tests.
    public struct Tally: Sendable, Equatable {
        public var published = 0, delivered = 0, lost = 0, duplicated = 0, reordered = 0, replayed = 0
        /// Messages held for an absent persistent session, and outages.
        public var queued = 0, outages = 0
        /// Connections made, and connect attempts refused while down.
        public var connects = 0, refused = 0
    }

    final class Session {
        let clientID: String
        let persistent: Bool
        var subscriptions: [String: MQTTQoS] = [:]
        weak var client: SimulatedBrokerClient?
        /// QoS 1 messages for an absent (persistent) session, oldest first.
        var queue: [MQTTMessage] = []
        /// QoS 1 messages on their way to the client, not yet taken, by delivery number.
        var inflight: [(id: UInt64, message: MQTTMessage)] = []
        /// The latest arrival scheduled (deliveries in order unless reordered).
        var lastArrival: UInt64 = 0
        init(clientID: String, persistent: Bool) {
            self.clientID = clientID
            self.persistent = persistent
        }
    }

    /// Messages an absent persistent session may hold (Mosquitto's `max_queued_messages`).
    public static let maximumQueued = 1000
    /// Earlier messages per topic kept for replays.
    static let replayDepth = 16

    let clock: VirtualClock
    public var faults: BrokerFaults { didSet { worstAsymmetry = max(worstAsymmetry, faults.asymmetry) } }
    /// The largest delay asymmetry the broker had in the run (`BrokerFaults.asymmetry`).
    public private(set) var worstAsymmetry: UInt64
    var random: SimulationRandom
    public private(set) var down = false
    /// Tests: the next this many QoS 1 deliveries are lost although both ends are connected.
    public var droppingQoS1 = 0
    /// Sessions in the order they were created (never walked in hash order).
    var sessions: [Session] = []
    var history: [String: [MQTTMessage]] = [:]
    var nextDelivery: UInt64 = 0
    public internal(set) var tally = Tally()
    /// When the current outage ends (the simulation brings the broker back up then).
    public var upAt: UInt64?

    public init(clock: VirtualClock, random: SimulationRandom, faults: BrokerFaults = .none) {
        self.clock = clock
        self.random = random
        self.faults = faults
        worstAsymmetry = faults.asymmetry
    }

    /// A connection for a node's relay (`RelayBrokerFactory`).
    package func connection(for request: RelayBrokerRequest) -> any RelayBrokerConnection {
        request.password?.zero()
        return SimulatedBrokerClient(broker: self, request: request)
    }

    /// Takes the broker down (every client disconnected, connects refused) or brings it back up.
    public func setDown(_ isDown: Bool) {
        guard isDown != down else { return }
        down = isDown
        guard isDown else { return upAt = nil }
        tally.outages += 1
        for session in sessions {
            guard let client = session.client, client.isConnected else { continue }
            detach(session)
            client.brokerDropped()
        }
        sessions.removeAll { !$0.persistent }
    }

    /// An honest broker from now on, up.
    public func heal() {
        faults = .none
        setDown(false)
    }

    // MARK: - For the clients

    func session(_ clientID: String) -> Session? { sessions.first { $0.clientID == clientID } }

    /// A client's connect; nil while down, else whether its session was present.
    func connect(_ client: SimulatedBrokerClient) -> Bool? {
        guard !down else {
            tally.refused += 1
            return nil
        }
        tally.connects += 1
        var present = false
        if let existing = session(client.clientID) {
            if let old = existing.client, old !== client, old.isConnected {
                detach(existing)
                old.brokerDropped()
            }
            if existing.persistent && client.persistent {
                present = true
            } else {
                sessions.removeAll { $0 === existing }
            }
        }
        let session = self.session(client.clientID) ?? {
            let made = Session(clientID: client.clientID, persistent: client.persistent)
            sessions.append(made)
            return made
        }()
        session.client = client
        session.subscriptions = client.subscriptions
        return present
    }

    /// Hands a (re)connected persistent session what it kept.
    func resume(_ client: SimulatedBrokerClient) {
        guard let session = session(client.clientID), session.client === client else { return }
        let kept = session.queue
        session.queue.removeAll()
        for message in kept { send(message, qos: .atLeastOnce, to: session) }
    }

    /// The client left (stop): a clean session ends, a persistent one keeps what is in flight.
    func disconnect(_ client: SimulatedBrokerClient) {
        guard let session = session(client.clientID), session.client === client else { return }
        detach(session)
        if !session.persistent { sessions.removeAll { $0 === session } }
    }

    private func detach(_ session: Session) {
        session.client = nil
        if session.persistent {
            session.queue = session.inflight.map(\.message) + session.queue
            if session.queue.count > Self.maximumQueued { session.queue.removeLast(session.queue.count - Self.maximumQueued) }
        }
        session.inflight.removeAll()
    }

    func subscriptionsChanged(_ client: SimulatedBrokerClient) {
        guard let session = session(client.clientID), session.client === client else { return }
        session.subscriptions = client.subscriptions
    }

    /// One publish from a connected client.
    func publish(_ message: MQTTMessage, qos: MQTTQoS) {
        tally.published += 1
        var earlier = history[message.topic] ?? []
        for session in sessions {
            guard let subscribed = session.subscriptions[message.topic] else { continue }
            let effective: MQTTQoS = qos == .atLeastOnce && subscribed == .atLeastOnce ? .atLeastOnce : .atMostOnce
            if effective == .atMostOnce && random.chance(faults.loss) {
                tally.lost += 1
                continue
            }
            if effective == .atLeastOnce && (droppingQoS1 > 0 || (faults.qos1Loss > 0 && random.chance(faults.qos1Loss))) {
                droppingQoS1 = max(0, droppingQoS1 - 1)
                tally.lost += 1
                continue
            }
            route(message, qos: effective, to: session)
            if !earlier.isEmpty, random.chance(faults.replay) {
                tally.replayed += 1
                route(earlier[random.int(0...(earlier.count - 1))], qos: effective, to: session)
            }
        }
        earlier.append(message)
        if earlier.count > Self.replayDepth { earlier.removeFirst() }
        history[message.topic] = earlier
    }

    /// Delivers to a session now or later, with the faults' delay, reordering and duplication.
    private func route(_ message: MQTTMessage, qos: MQTTQoS, to session: Session) {
        send(message, qos: qos, to: session)
        if random.chance(faults.duplication) {
            tally.duplicated += 1
            send(message, qos: qos, to: session)
        }
    }

    private func send(_ message: MQTTMessage, qos: MQTTQoS, to session: Session) {
        guard let client = session.client, client.isConnected else {
            guard session.persistent, qos == .atLeastOnce, session.queue.count < Self.maximumQueued else {
                tally.lost += 1
                return
            }
            tally.queued += 1
            session.queue.append(message)
            return
        }
        let now = clock.nanoseconds
        var arrival = max(now + random.uint64(faults.minimumDelay...max(faults.minimumDelay, faults.maximumDelay)), session.lastArrival)
        session.lastArrival = arrival
        if random.chance(faults.reordering) {
            tally.reordered += 1
            arrival += random.uint64(0...faults.reorderDelay)
        }
        nextDelivery += 1
        let id = nextDelivery
        if qos == .atLeastOnce && session.persistent { session.inflight.append((id, message)) }
        client.deliver(message, id: id, in: arrival - now)
    }

    /// A delivery reached its client (which takes it).
    func taken(_ id: UInt64, by client: SimulatedBrokerClient) {
        tally.delivered += 1
        guard let session = session(client.clientID), session.client === client else { return }
        session.inflight.removeAll { $0.id == id }
    }
}

extension SimulatedBroker {
    /// A client of this broker on `loop` outside any node (the broker's own tests).
    package func client(_ clientID: String, persistent: Bool = false, loop: SimulatedEventLoop) -> SimulatedBrokerClient {
        let settings = Simulation.relaySettings
        let request = RelayBrokerRequest(settings: settings, password: nil, clientID: clientID, eventLoop: loop,
                                         clock: SimulatedMeshClock(clock: clock, skewNanoseconds: 0),
                                         logger: Logger(label: "sim.broker", factory: { _ in SwiftLogNoOpLogHandler() }),
                                         persistentSession: persistent)
        return SimulatedBrokerClient(broker: self, request: request)
    }
}
