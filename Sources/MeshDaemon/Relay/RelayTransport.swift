import Logging
import MeshCore
import MeshCrypto
import MeshMQTT
import NIOCore

/// The relay as a `NodeTransport`: stream paths and datagrams to paired devices through the MQTT
/// broker, on the pair's blinded topics (`RelayPairTopics`), in relay messages
/// (`RelayEnvelope`), each peer's incoming messages put in order by its own `RelayReceiver`.
///
/// It listens on nothing: a peer's new path arrives as a message on a topic this device
/// subscribed to for that peer, and is served as an accepted stream (its preamble first).
/// Datagrams go at QoS 0 with a short message expiry (MQTT 5), stream messages at QoS 1.
/// Messages that do not parse or do not fit a path are dropped (and counted by the receiver);
/// what they carry is authenticated by the node as on UDP and TCP, so the broker can delay or
/// drop, never forge.
///
/// Everything runs on the node's loop; `peerKeys` (the paired devices' keys) is read there.
final class RelayTransport: NodeTransport, @unchecked Sendable {
    /// What the transport needs of one paired device.
    struct PeerKeys {
        var deviceID: DeviceID
        var publicKey: [UInt8]
        var pairKey: SecretBytes
    }

    /// How long the broker may hold a datagram it cannot deliver (MQTT 5 message expiry).
    static let datagramExpirySeconds: UInt32 = 5
    /// How often the subscriptions follow the paired devices and the UTC day.
    static let refreshInterval = TimeAmount.seconds(30)

    let relay: NodeRelay
    private let ownPublicKey: [UInt8]
    private let clock: any MeshClock
    private let logger: Logger
    /// The paired devices, read on the loop (set by the node before `bind`).
    var peerKeys: (() -> [PeerKeys])?

    private struct Peer {
        var topics: RelayPairTopics
        var receiver = RelayReceiver()
        var subscribed: [String] = []
        var pairKey: SecretBytes
    }

    /// What a topic or a path belongs to: a paired device's channel, or a pairing rendezvous
    /// (the live code's, as the inviter; or a join in progress, as the joiner).
    enum RouteKey: Hashable {
        case peer(DeviceID)
        case rendezvous(hint: String, inviting: Bool)
    }

    var loop: (any EventLoop)?
    private var datagramReceiver: (any DatagramReceiver)?
    private var peers: [DeviceID: Peer] = [:]
    var topicOwners: [String: RouteKey] = [:]
    var paths: [PathKey: RelayStreamPath] = [:]
    /// The rendezvous this device listens on (`RelayTransport+Rendezvous.swift`).
    var rendezvous: [RouteKey: Rendezvous] = [:]
    /// The live code's hint while this device shows one (its rendezvous is subscribed).
    var invitingHint: String?
    /// Dials waiting for the broker to confirm their rendezvous subscriptions.
    var subscriptionWaiters: [SubscriptionWaiter] = []
    private var refresh: RepeatedTask?
    /// When each peer stream path began to wait for a missing message (monotonic ns), and the
    /// timer that ends the ones that waited `holeTimeout` (`RelayTransport+Holes.swift`).
    var holes: [PathKey: UInt64] = [:]
    var holeCheck: Scheduled<Void>?
    private var closed: EventLoopPromise<Void>?
    private let accepted: AsyncStream<RelayStreamPath>
    private let acceptedQueue: AsyncStream<RelayStreamPath>.Continuation

    struct PathKey: Hashable {
        var route: RouteKey
        var path: RelayPathID
    }

    init(relay: NodeRelay, ownPublicKey: [UInt8], clock: any MeshClock, logger: Logger) {
        self.relay = relay
        self.ownPublicKey = ownPublicKey
        self.clock = clock
        self.logger = logger
        (accepted, acceptedQueue) = AsyncStream.makeStream(of: RelayStreamPath.self)
    }

    var maximumDatagramBytes: Int { MeshNode.maximumDatagramBytes }

    func bind(_ listen: DaemonConfiguration.Endpoint, on loop: any EventLoop,
              receiver: any DatagramReceiver) async throws -> DaemonConfiguration.Endpoint {
        try await loop.submit {
            self.loop = loop
            self.datagramReceiver = receiver
            self.closed = loop.makePromise(of: Void.self)
            do {
                try self.relay.start(loop: loop, clock: self.clock)
            } catch {
                throw NodeError(code: .relay, message: "cannot start the relay client: \(error)")
            }
            self.relay.link?.onMessage = { [weak self] message in self?.received(message) }
            self.relay.link?.onSubscribed = { [weak self] topic in self?.subscriptionConfirmed(topic) }
            self.relay.link?.onDisconnected = { [weak self] _ in self?.brokerConnectionLost() }
            self.refreshPeers()
            self.refreshRendezvous()
            self.refresh = loop.scheduleRepeatedTask(initialDelay: Self.refreshInterval, delay: Self.refreshInterval) { [weak self] _ in
                self?.refreshPeers()
                self?.refreshRendezvous()
            }
        }.get()
        return listen
    }

    /// The broker host, as relay addresses name it.
    var brokerHost: String { relay.settings.url.host }

    func acceptStreams(_ serve: @escaping @Sendable (any ChannelPath, inout PathFrames) async -> Void) async throws {
        await withDiscardingTaskGroup { group in
            for await path in accepted {
                group.addTask {
                    var frames = PathFrames(path.inbound.source)
                    await serve(path, &frames)
                    path.close()
                }
            }
        }
    }

    func dialStream<Result: Sendable>(to address: PathAddress, kind: ConnectionKind, timeout: TimeAmount,
                                      _ body: (any ChannelPath, inout PathFrames) async throws -> Result) async throws -> Result {
        guard let loop else { throw PathConnectError(address: address, reason: "the relay is not started") }
        if case .relay(let relayAddress) = address, case .rendezvous(let hint) = relayAddress.route {
            return try await dialRendezvous(hint: String(decoding: hint, as: UTF8.self), address: address, kind: kind,
                                            on: loop, body)
        }
        let path: RelayStreamPath = try await loop.submit {
            guard case .relay(let relayAddress) = address, case .peer(let peer) = relayAddress.route else {
                throw PathConnectError(address: address, reason: "not a relay route to a paired device")
            }
            guard self.relay.link?.isConnected == true else {
                throw PathConnectError(address: address, reason: "the relay broker is not connected")
            }
            if self.peers[peer] == nil { self.refreshPeers() }
            guard self.peers[peer] != nil else { throw PathConnectError(address: address, reason: "not a paired device") }
            return self.open(route: .peer(peer), pathID: .random(), preamble: kind.preamble, remote: address, on: loop,
                             outbound: { [weak self] day in self?.peers[peer]?.topics.outboundChannel(day: day) })
        }.get()
        defer { path.close() }
        var frames = PathFrames(path.inbound.source)
        return try await body(path, &frames)
    }

    var canSendDatagrams: Bool { relay.link?.isConnected ?? false }

    func datagramBuffer(capacity: Int) -> ByteBuffer { ByteBuffer() }

    func sendDatagram(_ datagram: ByteBuffer, to address: PathAddress, batched: Bool) {
        guard case .relay(let relayAddress) = address, case .peer(let peer) = relayAddress.route,
              let topics = peers[peer]?.topics,
              let message = RelayEnvelope.unnumbered(.datagram, payload: Array(datagram.readableBytesView)).encode() else { return }
        let topic = topics.outboundChannel(day: RelayDay.of(wallNanoseconds: clock.wallNanoseconds()))
        _ = publish(message, topic: topic, qos: .atMostOnce, expiry: Self.datagramExpirySeconds)
    }

    func flushDatagrams() {}

    func waitUntilClosed() async throws {
        try await closed?.futureResult.get()
    }

    func close() {
        guard let loop else { return }
        loop.execute {
            self.acceptedQueue.finish()
            self.refresh?.cancel()
            self.holeCheck?.cancel()
            for path in Array(self.paths.values) { path.close() }
            self.failSubscriptionWaiters()
            self.relay.stop()
            self.closed?.succeed()
        }
    }

    /// The paired devices changed (a pairing stored): follow them now, not at the next refresh.
    /// On the loop.
    func pairedDevicesChanged() {
        guard loop != nil else { return }
        refreshPeers()
    }

    // MARK: - On the loop

    /// Follows the paired devices and the day: one receiver per device, subscribed to its
    /// inbound topics of today and yesterday.
    private func refreshPeers() {
        guard let keys = peerKeys?(), let prefix = try? RelayTopicPrefix(relay.settings.topicPrefix) else { return }
        let day = RelayDay.of(wallNanoseconds: clock.wallNanoseconds())
        var seen = Set<DeviceID>()
        for key in keys {
            seen.insert(key.deviceID)
            if peers[key.deviceID]?.pairKey != key.pairKey {
                peers[key.deviceID].map { old in old.subscribed.forEach(unsubscribe) }
                guard let topics = RelayPairTopics(prefix: prefix, pairKey: key.pairKey, ownPublicKey: ownPublicKey,
                                                   peerPublicKey: key.publicKey) else { continue }
                peers[key.deviceID] = Peer(topics: topics, pairKey: key.pairKey)
            }
            guard var peer = peers[key.deviceID] else { continue }
            let wanted = peer.topics.inboundChannel(day: day)
            for topic in peer.subscribed where !wanted.contains(topic) { unsubscribe(topic) }
            for topic in wanted where !peer.subscribed.contains(topic) {
                topicOwners[topic] = .peer(key.deviceID)
                relay.link?.subscribe(topic, qos: .atLeastOnce)
            }
            peer.subscribed = wanted
            peers[key.deviceID] = peer
        }
        for (id, peer) in peers where !seen.contains(id) {
            peer.subscribed.forEach(unsubscribe)
            peers[id] = nil
            for (key, path) in paths where key.route == .peer(id) { path.close() }
        }
    }

    func unsubscribe(_ topic: String) {
        topicOwners[topic] = nil
        relay.link?.unsubscribe(topic)
    }

    /// A path on `route`; its messages go to `outbound(day)`, the route's outbound topic of the
    /// day (nil: the route is gone, the write fails).
    func open(route: RouteKey, pathID: RelayPathID, preamble: [UInt8]?, remote: PathAddress, on loop: any EventLoop,
              outbound: @escaping (UInt32) -> String?) -> RelayStreamPath {
        let key = PathKey(route: route, path: pathID)
        let path = RelayStreamPath(remote: remote, pathID: pathID, preamble: preamble, eventLoop: loop) {
            [weak self] message in
            guard let self, let topic = outbound(RelayDay.of(wallNanoseconds: self.clock.wallNanoseconds())) else { return false }
            return self.publish(message, topic: topic, qos: .atLeastOnce, expiry: nil)
        }
        path.onClose = { [weak self] in
            guard let self else { return }
            self.paths[key] = nil
            switch route {
            case .peer(let peer):
                self.peers[peer]?.receiver.closeLocally(pathID)
                self.holes[key] = nil
            case .rendezvous: self.rendezvousPathClosed(route, pathID)
            }
        }
        paths[key] = path
        return path
    }

    /// The broker connection ended: every stream path through it ends too, as TCP connections do
    /// on a reset. What was published in its last moments may never reach the peer (a QoS 1
    /// message the broker had not passed on, a broker that restarted without persistence), and a
    /// stream cannot go on past a hole: its receiver would hold everything after it until a
    /// lease ran out. So both ends start over: the node sees the path close and redials (over the
    /// relay once the broker is back, or directly), and the peer, whose path is now closed here,
    /// takes the new handshake in place of its channel.
    private func brokerConnectionLost() {
        for path in Array(paths.values) { path.remoteEnded() }
    }

    /// Hands a new path from a joiner to the node, as an accepted connection.
    func accept(_ path: RelayStreamPath) { acceptedQueue.yield(path) }

    /// The day now, by the wall clock.
    var today: UInt32 { RelayDay.of(wallNanoseconds: clock.wallNanoseconds()) }

    private func publish(_ message: [UInt8], topic: String, qos: MQTTQoS, expiry: UInt32?) -> Bool {
        guard let link = relay.link else { return false }
        let failure: MQTTFailure? = message.withUnsafeBytes { buffer in
            do throws(MQTTFailure) {
                try link.publish(topic: topic, payload: buffer, qos: qos, expirySeconds: expiry)
                return nil
            } catch {
                return error
            }
        }
        if let failure {
            logger.trace("relay publish failed", metadata: ["relay.state": "\(failure.words)"])
            return false
        }
        return true
    }

    /// One message on a subscribed topic.
    private func received(_ message: MQTTMessage) {
        guard let loop, let route = topicOwners[message.topic] else { return }
        guard case .peer(let peer) = route else {
            receivedOnRendezvous(message, route: route, on: loop)
            return
        }
        guard var state = peers[peer] else { return }
        let actions = state.receiver.receive(message.payload)
        peers[peer] = state
        let address = PathAddress.relay(RelayAddress(broker: relay.settings.url.host, route: .peer(peer)))
        var datagrams = false
        for action in actions {
            switch action {
            case .opened(let id):
                let key = PathKey(route: route, path: id)
                guard paths[key] == nil else { continue }  // the answer on a path this device dialled
                accept(open(route: route, pathID: id, preamble: nil, remote: address, on: loop,
                            outbound: { [weak self] day in self?.peers[peer]?.topics.outboundChannel(day: day) }))
            case .streamData(let id, let bytes):
                guard let path = paths[PathKey(route: route, path: id)] else { continue }
                if !path.inbound.append(bytes) { path.close() }
            case .closed(let id, _):
                paths[PathKey(route: route, path: id)]?.remoteEnded()
            case .datagram(let bytes):
                datagrams = true
                bytes.withUnsafeBytes { datagramReceiver?.receive($0, from: address) }
            case .mailboxItem, .mailboxAck, .mailboxSnapshot:
                continue  // store and forward uses the mailbox topics, never a channel topic
            }
        }
        if datagrams { datagramReceiver?.burstEnded() }
        trackHoles(of: peer)
    }

    /// The monotonic clock, ns.
    func clockNow() -> UInt64 { clock.monotonicNanoseconds() }

    /// The receiver of `peer`'s messages, for the hole timer.
    func receiver(of peer: DeviceID) -> RelayReceiver? { peers[peer]?.receiver }

    /// Closes `peer`'s `path` in its receiver as for a gap (the hole timer).
    func closeForHole(_ path: RelayPathID, of peer: DeviceID) { peers[peer]?.receiver.closeForHole(path) }
}
