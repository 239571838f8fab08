import Logging
import MeshCore
import MeshCrypto
import MeshMQTT
import NIOCore

/// The device's store-and-forward mailbox at the relay broker: a second broker connection, in
/// a persistent session, that holds the subscriptions to every paired device's mailbox topic
/// towards this device (`RelayPairTopics.inboundMailbox`, QoS 1), so the broker keeps the boxes
/// left for this device while it is off; and the posting of boxes to the peers' mailboxes.
///
/// - The session: a stable client ID that names neither the device nor a key
///   (``MailboxClientID``), clean session off, MQTT 3.1.1 (libmosquitto's non-blocking connect
///   sends no MQTT 5 session expiry). The broker keeps the session until its own expiry
///   (Mosquitto: `persistent_client_expiration`, docs/RELAY.md). The live channel keeps its own
///   clean connection, so channel traffic never fills the queue the broker keeps for the mailbox.
/// - A box (`MailboxSeal`) travels as one relay message of kind 4 (item) or 5 (ack); the
///   receiver reads its counter before opening it (`MailboxReplayGuard`: a replay costs no
///   decryption), opens at most ``MailboxOpenBudget`` boxes a second per peer, and drops what
///   does not parse or open, silently and counted.
/// - What opens goes to the router (`DeliveryMailboxInbound`), which stores items and acks them.
///
/// Event-loop bound: every method runs on the node's loop.
final class RelayMailbox: DeliveryMailbox, @unchecked Sendable {
    /// Seconds the connection must be up before posting (boxes kept for this device arrive first).
    static let settleSeconds: Double = 5
    /// How often the subscriptions follow the paired devices.
    static let refreshInterval = TimeAmount.seconds(5)

    /// What the mailbox counted, for `meshctl status --counters`.
    struct Counters: Sendable, Equatable {
        var boxesPosted: UInt64 = 0
        var postFailures: UInt64 = 0
        var boxesOpened: UInt64 = 0
        var malformed: UInt64 = 0
        var replayed: UInt64 = 0
        var tooOld: UInt64 = 0
        var unopened: UInt64 = 0
        var rateLimited: UInt64 = 0
        var unknownTopic: UInt64 = 0
        var droppedEarly: UInt64 = 0
    }

    private struct Peer {
        var pairKey: SecretBytes
        var topics: RelayPairTopics
        var seal: MailboxSeal
        var counter = MailboxCounter()
        var replayGuard = MailboxReplayGuard()
        var budget = MailboxOpenBudget()
    }

    let settings: RelaySettings
    let clientID: String
    private let identity: X25519KeyPair
    private let clock: any MeshClock
    private let logger: Logger
    /// The paired devices, read on the loop (set by the node before `start`).
    var peerKeys: (() -> [RelayTransport.PeerKeys])?
    private(set) var link: (any RelayBrokerConnection)?
    private let brokers: any RelayBrokerFactory
    private(set) var counters = Counters()
    private var peers: [DeviceID: Peer] = [:]
    private var topicOwners: [String: DeviceID] = [:]
    private var inbound: (any DeliveryMailboxInbound)?
    private var refresh: RepeatedTask?
    private var connectedAt: UInt64?
    private var epoch: UInt64 = 0
    private var faultWarning = RateLimitedWarning()
    /// Boxes that opened before the router took over (the broker hands over what it kept as
    /// soon as the session resumes), bounded like the router's own queue.
    private var held: [(peer: DeviceID, kind: MailboxSeal.Kind, plaintext: [UInt8])] = []
    private var heldBytes = 0

    init(settings: RelaySettings, identity: X25519KeyPair, clock: any MeshClock, logger: Logger,
         brokers: any RelayBrokerFactory = RelayBrokerLinkFactory()) {
        self.settings = settings
        self.brokers = brokers
        self.identity = identity
        self.clock = clock
        self.logger = logger
        clientID = MailboxClientID.derive(privateKey: identity.privateKey)
    }

    /// Connects the mailbox session (and keeps it up); `password` is zeroed once the client holds it.
    func start(loop: any EventLoop, password: MQTTPassword?) throws(MQTTFailure) {
        loop.preconditionInEventLoop()
        guard link == nil else { return }
        let link = try brokers.connection(for: RelayBrokerRequest(settings: settings, password: password, clientID: clientID, eventLoop: loop,
                                                  clock: clock, logger: logger, persistentSession: true))
        self.link = link
        link.onMessage = { [weak self] message in self?.received(message) }
        link.onConnected = { [weak self] _ in self?.connected() }
        link.onDisconnected = { [weak self] _ in self?.connectedAt = nil }
        refreshPeers()
        refresh = loop.scheduleRepeatedTask(initialDelay: Self.refreshInterval, delay: Self.refreshInterval) { [weak self] _ in
            self?.refreshPeers()
        }
        link.start()
    }

    /// Boxes posted that the broker has not acknowledged (PUBACK) yet: they may be lost.
    var unacknowledgedBoxes: UInt64 {
        let acknowledged = link?.acknowledgedPublishes ?? 0
        return counters.boxesPosted > acknowledged ? counters.boxesPosted - acknowledged : 0
    }

    /// Disconnects (the broker keeps the session); on the loop. Boxes the broker has not
    /// acknowledged are counted in the log: the items and slots they carried stay unacknowledged
    /// here (they are in no posting state after a restart), so the next run posts them again.
    func stop() {
        if link != nil {
            logger.info("relay mailbox stopped", metadata: ["relay.mailbox.posted": "\(counters.boxesPosted)",
                                                            "relay.mailbox.unacknowledged": "\(unacknowledgedBoxes)"])
        }
        refresh?.cancel()
        refresh = nil
        link?.stop()
        connectedAt = nil
    }

    // MARK: - DeliveryMailbox

    var maximumPlaintextBytes: Int { RelayEnvelope.maximumPayload - MailboxSeal.overhead }

    func postingState(for peer: DeviceID) -> MailboxPostingState? {
        guard let link, link.isConnected, let connectedAt else { return nil }
        if peers[peer] == nil { refreshPeers() }
        guard peers[peer] != nil else { return nil }
        let now = clock.monotonicNanoseconds()
        return MailboxPostingState(epoch: epoch, settled: now >= connectedAt && Double(now - connectedAt) / 1e9 >= Self.settleSeconds)
    }

    func post(_ plaintext: [UInt8], kind: MailboxSeal.Kind, to peer: DeviceID) -> Bool {
        guard let link, link.isConnected, var state = peers[peer], plaintext.count <= maximumPlaintextBytes else { return false }
        let counter = state.counter.next(wallNanoseconds: clock.wallNanoseconds())
        peers[peer] = state
        let box = state.seal.seal(plaintext, kind: kind, counter: counter)
        guard let message = RelayEnvelope.unnumbered(Self.envelopeKind(of: kind), payload: box).encode() else {
            return false
        }
        let topic = state.topics.outboundMailbox
        let failure: MQTTFailure? = message.withUnsafeBytes { buffer in
            do throws(MQTTFailure) {
                try link.publish(topic: topic, payload: buffer, qos: .atLeastOnce, expirySeconds: nil)
                return nil
            } catch {
                return error
            }
        }
        if let failure {
            counters.postFailures &+= 1
            logger.trace("mailbox post failed", metadata: ["relay.state": "\(failure.words)"])
            return false
        }
        counters.boxesPosted &+= 1
        return true
    }

    func setInbound(_ handler: (any DeliveryMailboxInbound)?) {
        inbound = handler
        guard let handler else { return }
        let waiting = held
        held = []
        heldBytes = 0
        for box in waiting { handler.mailboxReceived(box.plaintext, kind: box.kind, from: box.peer) }
    }

    /// The counters for `meshctl status --counters`.
    func counterValues() -> [String: UInt64] {
        [
            "relay.mailbox.connected": link?.isConnected == true ? 1 : 0,
            "relay.mailbox.peers": UInt64(peers.count),
            "relay.mailbox.boxes_posted": counters.boxesPosted,
            "relay.mailbox.boxes_broker_acked": link?.acknowledgedPublishes ?? 0,
            "relay.mailbox.unacknowledged": unacknowledgedBoxes,
            "relay.mailbox.post_failures": counters.postFailures,
            "relay.mailbox.boxes_opened": counters.boxesOpened,
            "relay.mailbox.malformed": counters.malformed,
            "relay.mailbox.replayed": counters.replayed,
            "relay.mailbox.too_old": counters.tooOld,
            "relay.mailbox.unopened": counters.unopened,
            "relay.mailbox.rate_limited": counters.rateLimited,
            "relay.mailbox.dropped_before_router": counters.droppedEarly,
        ]
    }

    // MARK: - On the loop

    private func connected() {
        connectedAt = clock.monotonicNanoseconds()
        // A broker that no longer held the session may have lost every box posted before.
        if link?.sessionPresent != true { epoch &+= 1 }
    }

    /// Follows the paired devices: one seal, counter and replay guard per device, and a
    /// subscription to its mailbox topic towards this device.
    private func refreshPeers() {
        guard let keys = peerKeys?(), let prefix = try? RelayTopicPrefix(settings.topicPrefix) else { return }
        var seen = Set<DeviceID>()
        for key in keys {
            seen.insert(key.deviceID)
            guard peers[key.deviceID]?.pairKey != key.pairKey else { continue }
            if let old = peers[key.deviceID] { unsubscribe(old.topics.inboundMailbox) }
            guard let topics = RelayPairTopics(prefix: prefix, pairKey: key.pairKey, ownPublicKey: identity.publicKey,
                                               peerPublicKey: key.publicKey),
                  let seal = MailboxSeal(identity: identity, peerPublicKey: key.publicKey, pairKey: key.pairKey) else {
                peers[key.deviceID] = nil
                continue
            }
            peers[key.deviceID] = Peer(pairKey: key.pairKey, topics: topics, seal: seal)
            topicOwners[topics.inboundMailbox] = key.deviceID
            link?.subscribe(topics.inboundMailbox, qos: .atLeastOnce)
        }
        for (id, peer) in peers where !seen.contains(id) {
            unsubscribe(peer.topics.inboundMailbox)
            peers[id] = nil
        }
    }

    private func unsubscribe(_ topic: String) {
        topicOwners[topic] = nil
        link?.unsubscribe(topic)
    }

    /// One message on a mailbox topic: parsed, its counter checked, opened within the peer's
    /// budget, and handed on. Anything else is dropped without an answer.
    private func received(_ message: MQTTMessage) {
        guard let peerID = topicOwners[message.topic], var peer = peers[peerID] else {
            counters.unknownTopic &+= 1
            return
        }
        guard let envelope = try? RelayEnvelope(decoding: message.payload),
              let (kind, counter) = MailboxSeal.peek(envelope.payload),
              Self.envelopeKind(of: kind) == envelope.kind else {
            counters.malformed &+= 1
            return fault("dropped malformed messages on a mailbox topic", peer: peerID)
        }
        switch peer.replayGuard.check(counter) {
        case .replayed:
            counters.replayed &+= 1
            return fault("dropped replayed mailbox boxes", peer: peerID)
        case .tooOld:
            counters.tooOld &+= 1
            return
        case .fresh:
            break
        }
        guard peer.budget.take(now: clock.monotonicNanoseconds()) else {
            peers[peerID] = peer
            counters.rateLimited &+= 1
            return fault("mailbox boxes arrive faster than they are opened: dropped some", peer: peerID)
        }
        guard let opened = peer.seal.open(envelope.payload) else {
            peers[peerID] = peer
            counters.unopened &+= 1
            return fault("dropped mailbox boxes that do not open", peer: peerID)
        }
        peer.replayGuard.accept(counter)
        peers[peerID] = peer
        counters.boxesOpened &+= 1
        if let inbound {
            inbound.mailboxReceived(opened.plaintext, kind: opened.kind, from: peerID)
        } else if held.count < MailboxCourier.maximumQueuedBoxes,
                  heldBytes + opened.plaintext.count <= MailboxCourier.maximumQueuedBytes {
            held.append((peerID, opened.kind, opened.plaintext))
            heldBytes += opened.plaintext.count
        } else {
            counters.droppedEarly &+= 1
        }
    }

    /// The relay message kind that carries boxes of `kind`.
    static func envelopeKind(of kind: MailboxSeal.Kind) -> RelayEnvelope.Kind {
        switch kind {
        case .item: .mailboxItem
        case .ack: .mailboxAck
        case .snapshot: .mailboxSnapshot
        }
    }

    /// A warning about what came on a peer's mailbox topic, at most once per 10 s.
    private func fault(_ message: String, peer: DeviceID) {
        guard let suppressed = faultWarning.admit(now: clock.monotonicNanoseconds()) else { return }
        logger.warning("\(message)", metadata: ["peer.id": "\(peer.short)", "suppressed": "\(suppressed)"])
    }
}
