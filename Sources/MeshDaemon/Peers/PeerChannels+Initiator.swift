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
    /// wall-clock `wall` (ns), announcing `udpPort`; nil when no dial is needed any more (the
    /// device is gone, or a channel is active unless `replacingLiveChannel`). The peer counts
    /// as having an outgoing handshake in flight until `initiatorEnded` or activation.
    mutating func startHandshake(_ peer: DeviceID, replacingLiveChannel: Bool, udpPort: UInt16,
                                 wall: Int64, now: UInt64) -> ([UInt8], PendingInitiator)? {
        guard let runtime = peers[peer], runtime.channel == nil || replacingLiveChannel else { return nil }
        let index = allocateIndex(for: peer)
        let payload = HandshakePayload(sessionIndex: index, udpPort: udpPort, wallNanoseconds: wall, isRekey: false)
        do {
            let (handshake, message1) = try ChannelHandshake.initiate(localStatic: localKeys, peerPublicKey: runtime.record.publicKey,
                                                                      pairKey: runtime.record.pairKey, payload: payload,
                                                                      random: randomSource)
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

    /// Reads the responder's message 2 at monotonic `now`.
    func finishHandshake(_ pending: PendingInitiator, message2: [UInt8], now: UInt64) -> InitiatorOutcome {
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
           !SimultaneousConnectRule.candidateWins(candidateIsLocal: true, existingIsLocal: connection.locallyInitiated,
                                                   localKey: localKeys.publicKey, peerKey: runtime.record.publicKey) {
            return .lostSimultaneousConnect
        }
        var active = ActiveChannel(keys: keys, localIndex: pending.localIndex, remoteIndex: payload.sessionIndex,
                                   locallyInitiated: true, now: now, tuning: tuning)
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
