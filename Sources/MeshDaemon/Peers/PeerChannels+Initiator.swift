import MeshCrypto
import MeshCore

/// An outgoing handshake between message 1 and message 2.
struct PendingInitiator: Sendable {
    let peer: DeviceID
    var handshake: ChannelHandshake
    let localIndex: UInt32
    /// The connection it runs on (the node registers it once message 1 is built).
    var connectionID: UInt64
    /// Monotonic instant message 1 was built (the handshake-time figure starts here).
    let startedAt: UInt64
}

extension PeerChannels {
    /// Builds framed message 1 (with its `HandshakeMac`) towards `peer` at monotonic `now` and
    /// wall-clock `wall` (ns), announcing `udpPort`, for a path of `kind`; nil when no dial is
    /// needed any more: the device is gone, or a channel is active, unless
    /// `replacingLiveChannel` or this is a direct path while the channel runs on the relay
    /// (path choice prefers direct) — and then not while path choice holds the channel on the
    /// relay (`PathChoice.directDialDelay`). The peer counts as having an outgoing handshake
    /// in flight until `initiatorEnded` or activation.
    mutating func startHandshake(_ peer: DeviceID, replacingLiveChannel: Bool, kind: PathChoice.Kind = .direct,
                                 udpPort: UInt16, wall: Int64, now: UInt64) -> ([UInt8], PendingInitiator)? {
        guard let runtime = peers[peer] else { return nil }
        if runtime.channel != nil {
            let leavesRelay = runtime.channelOnRelay && kind == .direct
            guard replacingLiveChannel || leavesRelay else { return nil }
            guard kind == .direct || !runtime.channelOnDirectPath else { return nil }
            if leavesRelay, runtime.path.directDialDelay(now: now) > 0 { return nil }
        }
        let index = allocateIndex(for: peer)
        let payload = HandshakePayload(sessionIndex: index, udpPort: udpPort, wallNanoseconds: wall, isRekey: false, speaksDeviceSet: true)
        do {
            let (handshake, message1) = try ChannelHandshake.initiate(localStatic: localKeys, peerPublicKey: runtime.record.publicKey,
                                                                      pairKey: runtime.record.pairKey, payload: payload,
                                                                      ephemeral: random.ephemeralKey())
            let macKey = HandshakeMac.key(pairKey: runtime.record.pairKey, responderPublicKey: runtime.record.publicKey)
            let framed = try WireFrame.encode(HandshakeMac.append(to: message1, key: macKey))
            peers[peer]?.outgoingHandshakeInFlight = true
            return (framed, PendingInitiator(peer: peer, handshake: handshake, localIndex: index, connectionID: 0, startedAt: now))
        } catch {
            indexTable.removeValue(forKey: index)
            return nil
        }
    }

    /// What `finishHandshake` decided.
    enum InitiatorOutcome: Sendable {
        /// Message 2 did not authenticate or the confirm could not be sealed.
        case failed
        /// The device's live channel wins a simultaneous connect: give this one up.
        case lostSimultaneousConnect
        /// The device was unpaired meanwhile.
        case gone
        /// Write `confirm` and install `channel`; `udpPort` is the responder's announced port.
        case established(ActiveChannel, confirm: [UInt8], udpPort: UInt16)
    }

    /// Reads the responder's message 2 at monotonic `now`, on a path of `kind`.
    func finishHandshake(_ pending: PendingInitiator, message2: [UInt8], kind: PathChoice.Kind = .direct,
                         now: UInt64) -> InitiatorOutcome {
        var handshake = pending.handshake
        guard let runtime = peers[pending.peer] else { return .gone }
        let payload: HandshakePayload
        let keys: ChannelKeys
        do {
            (payload, keys) = try handshake.readResponse(message2)
        } catch {
            return .failed
        }
        if let connection = runtime.connection, runtime.channel != nil,
           !Self.candidateWins(kind: kind, isLocal: true, over: connection, localKey: localKeys.publicKey,
                               peerKey: runtime.record.publicKey) {
            return .lostSimultaneousConnect
        }
        var active = ActiveChannel(keys: keys, localIndex: pending.localIndex, remoteIndex: payload.sessionIndex,
                                   locallyInitiated: true, now: now, tuning: tuning)
        active.peerSpeaksDeviceSet = payload.speaksDeviceSet
        guard let confirm = try? active.sealStream(.confirm) else { return .failed }
        return .established(active, confirm: confirm, udpPort: payload.udpPort)
    }

    /// An outgoing handshake ended without a channel (the responder closed, answered garbage,
    /// or lost a simultaneous connect): no longer in flight, its index freed.
    mutating func initiatorEnded(_ pending: PendingInitiator) {
        peers[pending.peer]?.outgoingHandshakeInFlight = false
        releaseIndex(pending.localIndex, of: pending.peer)
    }
}

extension PeerChannels {
    /// Whether a new channel on a path of `kind`, initiated by this side when `isLocal`,
    /// replaces the live one on `existing`. Across kinds path choice decides: a direct path
    /// replaces the relay; the relay replaces a direct channel only when the peer dialled it
    /// (it does only once it has no channel: its direct path died). Between two paths of one
    /// kind, `SimultaneousConnectRule` does.
    static func candidateWins(kind: PathChoice.Kind, isLocal: Bool, over existing: ChannelConnection,
                              localKey: [UInt8], peerKey: [UInt8]) -> Bool {
        if kind != existing.kind { return kind == .direct || !isLocal }
        return SimultaneousConnectRule.candidateWins(candidateIsLocal: isLocal, existingIsLocal: existing.locallyInitiated,
                                                     localKey: localKey, peerKey: peerKey)
    }
}
