import MeshCrypto
import MeshCore

/// A responder that answered message 1 and waits for the initiator's `confirm`.
struct PendingResponder: Sendable {
    let peer: DeviceID
    var channel: ActiveChannel
    /// Initiator's announced UDP port.
    let udpPort: UInt16
    let connectionID: UInt64
    /// The initiator's timestamp: recorded as the peer's latest only once it confirmed.
    let initiatorTimestamp: Int64
    /// The kind of path it runs on.
    var kind: PathChoice.Kind = .direct
    /// The connection of the channel to that peer active when message 2 was built, if any.
    var heldConnectionID: UInt64?
}

/// Why a channel handshake was refused or given up. The node counts each (`NodeCounters`)
/// and sends nothing back.
enum HandshakeRefusal: Equatable, Sendable {
    /// Malformed, failed to authenticate or failed to complete (`handshakesFailed`).
    case failed
    /// No paired device's key made the message 1's `HandshakeMac` (`handshakesRefusedUnknownKey`).
    case unknownKey
    /// The global handshake budget is spent (`handshakesRefusedBusy`).
    case busy
    /// The message 1's MAC was seen before: a copy (`handshakesRefusedSeen`).
    case seen
    /// The budget of the device whose key made the MAC is spent (`handshakesRefusedPeerBusy`).
    case peerBusy
    /// The initiator's timestamp is not newer than the last one accepted from that device
    /// (`handshakesRefusedReplay`).
    case replay
    /// Stamped more than `HandshakePayload.maximumLeadNanoseconds` ahead of this device's wall
    /// clock (`handshakesRefusedFuture`); `warning` is the number of warnings suppressed since
    /// the last one when one is due now, nil while warnings are suppressed.
    case future(DeviceID, warning: UInt64?)
    /// The device's other connection wins a simultaneous connect (`simultaneousConnectsResolved`).
    case lostSimultaneousConnect(DeviceID)
    /// The device was unpaired meanwhile: nothing to count.
    case gone
}

extension PeerChannels {
    /// What `answerHandshake` decided.
    enum ResponderAnswer: Sendable {
        /// Write framed message 2 and wait for the initiator's confirm.
        case reply([UInt8], PendingResponder)
        case refused(HandshakeRefusal)
    }

    /// Reads the first frame of an accepted channel connection (message 1 and its
    /// `HandshakeMac`) at monotonic `now` and wall-clock `wall` (ns): framed message 2 that
    /// announces `udpPort`, or why it is refused. The MAC is checked before any X25519 is
    /// spent, then whether that device's recent message 1s had the same MAC (a copy), then the
    /// device's own handshake budget and the global one; after the X25519, the initiator's
    /// timestamp (replay, too far ahead) and a simultaneous connect decide.
    mutating func answerHandshake(_ firstFrame: [UInt8], connectionID: UInt64, kind: PathChoice.Kind = .direct,
                                  udpPort: UInt16, wall: Int64, now: UInt64) -> ResponderAnswer {
        guard let (message1, mac) = HandshakeMac.split(firstFrame) else { return .refused(.failed) }
        guard let (claimed, pairKey) = pairedDeviceAndKey(madeMac: mac, of: message1) else { return .refused(.unknownKey) }
        guard peers[claimed]?.recentHandshakeMacs.admit(mac) == true else { return .refused(.seen) }
        guard peerHandshakeBudget.allow(source: claimed.description, now: now) else { return .refused(.peerBusy) }
        guard handshakeBudget.allow(source: "all", now: now) else { return .refused(.busy) }
        let responder: ChannelHandshake.Responder
        do {
            responder = try ChannelHandshake.respond(localStatic: localKeys, message: message1)
        } catch {
            return .refused(.failed)
        }
        let peerID = DeviceID(publicKey: responder.initiatorPublicKey)
        guard peerID == claimed, let runtime = peers[peerID] else { return .refused(.failed) }
        guard responder.payload.wallNanoseconds > runtime.lastInitiationTimestamp else { return .refused(.replay) }
        let (latest, overflow) = wall.addingReportingOverflow(HandshakePayload.maximumLeadNanoseconds)
        guard overflow || responder.payload.wallNanoseconds <= latest else {
            return .refused(.future(peerID, warning: futureHandshakeWarning.admit(now: now)))
        }
        if respondingLoses(runtime, kind: kind) { return .refused(.lostSimultaneousConnect(peerID)) }
        let localIndex = allocateIndex(for: peerID)
        var accepting = responder
        do {
            let payload = HandshakePayload(sessionIndex: localIndex, udpPort: udpPort, wallNanoseconds: wall, isRekey: false, speaksDeviceSet: true)
            let (message2, keys) = try accepting.accept(pairKey: pairKey, payload: payload,
                                                        ephemeral: random.ephemeralKey())
            var channel = ActiveChannel(keys: keys, localIndex: localIndex, remoteIndex: responder.payload.sessionIndex,
                                        locallyInitiated: false, now: now, tuning: tuning)
            channel.peerSpeaksDeviceSet = responder.payload.speaksDeviceSet
            let pending = PendingResponder(peer: peerID, channel: channel, udpPort: responder.payload.udpPort,
                                           connectionID: connectionID, initiatorTimestamp: responder.payload.wallNanoseconds,
                                           kind: kind, heldConnectionID: runtime.channel == nil ? nil : runtime.connection?.id)
            let framed = try WireFrame.encode(message2)
            // TEST ONLY (`testBugTimestampRecordedAtAnswer`): the historical bug the simulator
            // must catch, the timestamp counted before the initiator confirmed.
            if tuning.testBugTimestampRecordedAtAnswer { peers[peerID]?.lastInitiationTimestamp = responder.payload.wallNanoseconds }
            return .reply(framed, pending)
        } catch {
            indexTable.removeValue(forKey: localIndex)
            return .refused(.failed)
        }
    }

    /// What `confirmResponder` decided.
    enum ResponderConfirmation: Sendable {
        /// The initiator confirmed: install this channel.
        case confirmed(ActiveChannel)
        case refused(HandshakeRefusal)
    }

    /// Opens the initiator's first stream frame, which must be a `confirm`. Only then is the
    /// initiator's timestamp recorded as the device's latest (a replayed message 1 never gets
    /// here), so a later handshake must be newer; a replay of the same message 1 answered
    /// meanwhile is refused here too.
    mutating func confirmResponder(_ pending: PendingResponder, confirmFrame: [UInt8]) -> ResponderConfirmation {
        var channel = pending.channel
        guard let runtime = peers[pending.peer] else { return .refused(.gone) }
        guard (try? channel.openStreamFrame(confirmFrame)) == [.confirm] else { return .refused(.failed) }
        guard tuning.testBugTimestampRecordedAtAnswer || pending.initiatorTimestamp > runtime.lastInitiationTimestamp else {
            return .refused(.replay)
        }
        peers[pending.peer]?.lastInitiationTimestamp = pending.initiatorTimestamp
        if respondingLoses(runtime, kind: pending.kind) { return .refused(.lostSimultaneousConnect(pending.peer)) }
        return .confirmed(channel)
    }

    /// A responder whose initiator never confirmed: frees its index.
    mutating func responderAbandoned(_ pending: PendingResponder) {
        releaseIndex(pending.channel.current.localIndex, of: pending.peer)
    }

    /// Whether to start a handshake with `peer` next to its live channel at monotonic `now`,
    /// because the peer seems to hold another channel than ours: it handshook with us on
    /// connection `connectionID` (not the channel's), and that handshake was refused for our
    /// channel (a lost simultaneous connect) or ended after our message 2. Without this, each
    /// side keeps a channel the other has not, and every message between them is lost until a
    /// lease runs out. At most one per `ChannelTuning.handshakeTimeout` per peer (counted by
    /// device ID), so a peer that keeps handshaking gets no storm of handshakes back.
    mutating func replacingHandshakeDue(_ peer: DeviceID, besides connectionID: UInt64, now: UInt64) -> Bool {
        guard let slot = peers.index(forKey: peer), peers.values[slot].channel != nil,
              let connection = peers.values[slot].connection, connection.id != connectionID else { return false }
        if let last = peers.values[slot].lastReplacingHandshakeAt,
           now < last &+ Nanoseconds.from(seconds: tuning.handshakeTimeout) { return false }
        peers.values[slot].lastReplacingHandshakeAt = now
        return true
    }

    /// The paired device whose key made `mac` over `message1`; nil when none did. Costs one
    /// HMAC per paired device (their MAC keys are derived once and kept).
    mutating func pairedDevice(madeMac mac: [UInt8], of message1: [UInt8]) -> DeviceID? {
        pairedDeviceAndKey(madeMac: mac, of: message1)?.peer
    }

    /// As `pairedDevice(madeMac:of:)`, with the pair key whose MAC key matched: a derived pair
    /// key of the roster's previous epoch is tried after the current ones (a member that has
    /// not heard of the latest removal yet).
    mutating func pairedDeviceAndKey(madeMac mac: [UInt8], of message1: [UInt8]) -> (peer: DeviceID, pairKey: SecretBytes)? {
        for id in peers.keys {
            guard let key = handshakeMacKey(of: id) else { continue }
            if HandshakeMac.verify(mac, of: message1, key: key), let pairKey = peers[id]?.record.pairKey { return (id, pairKey) }
        }
        for (id, runtime) in peers {
            guard let previous = runtime.record.previousPairKey else { continue }
            let key = HandshakeMac.key(pairKey: previous, responderPublicKey: localKeys.publicKey)
            if HandshakeMac.verify(mac, of: message1, key: key) { return (id, previous) }
        }
        return nil
    }

    /// The `HandshakeMac` key for message 1s from `peer` to this device (derived on first use
    /// and kept with the pair key it came from, so a new pairing gets a new one).
    mutating func handshakeMacKey(of peer: DeviceID) -> SecretBytes? {
        guard let runtime = peers[peer] else { return nil }
        if let cached = runtime.handshakeMacKey, cached.pairKey == runtime.record.pairKey { return cached.key }
        let key = HandshakeMac.key(pairKey: runtime.record.pairKey, responderPublicKey: localKeys.publicKey)
        peers[peer]?.handshakeMacKey = (runtime.record.pairKey, key)
        return key
    }

    /// Whether the peer's connection being answered, on a path of `kind`, loses to the live
    /// channel (`candidateWins`) or the in-flight outgoing attempt with that peer
    /// (`SimultaneousConnectRule`). A direct connection that would take a channel off the
    /// relay still meets this side's own direct attempt, if one is in flight.
    func respondingLoses(_ runtime: PeerRuntime, kind: PathChoice.Kind = .direct) -> Bool {
        let existingIsLocal: Bool
        if let connection = runtime.connection, runtime.channel != nil {
            let leavesRelay = connection.kind == .relay && kind == .direct
            guard leavesRelay, runtime.outgoingHandshakeInFlight else {
                return !Self.candidateWins(kind: kind, isLocal: false, over: connection, localKey: localKeys.publicKey,
                                           peerKey: runtime.record.publicKey)
            }
            existingIsLocal = true
        } else if runtime.outgoingHandshakeInFlight {
            existingIsLocal = true
        } else {
            return false
        }
        return !SimultaneousConnectRule.candidateWins(candidateIsLocal: false, existingIsLocal: existingIsLocal,
                                                      localKey: localKeys.publicKey, peerKey: runtime.record.publicKey)
    }
}
