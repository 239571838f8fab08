import MeshCrypto
import NIOCore

/// Rekeying: a fresh `Noise_IKpsk2` handshake carried inside the channel's stream path (see
/// `ActiveChannel`). The side that initiated the current keys starts one after
/// `ChannelTuning.rekeyAfter` (120 s) or when a sealer nears its counter limit; keys older
/// than `rejectAfter` (180 s) close the channel and the normal reconnect takes over.
extension MeshNode {
    func rekeyPayload(index: UInt32) -> HandshakePayload {
        HandshakePayload(sessionIndex: index, udpPort: UInt16(boundListenAddress?.port ?? 0),
                         wallNanoseconds: clock.wallNanoseconds(), isRekey: true)
    }

    /// Starts a rekey towards `peer`.
    func startRekey(_ peer: DeviceID) {
        guard let runtime = peers[peer], let connection = runtime.connection else { return }
        let index = allocateIndex(for: peer)
        var bytes: [UInt8] = []
        let ok = withChannel(peer) { channel, _ in
            bytes = try channel.startRekey(localStatic: identity.keyPair, peerPublicKey: runtime.record.publicKey,
                                           pairKey: runtime.record.pairKey, newLocalIndex: index,
                                           payload: rekeyPayload(index: index))
        }
        guard ok else { return }
        logger.debug("rekey started", metadata: ["peer.id": "\(peer.short)"])
        _ = writeStream(bytes, to: connection)
    }

    /// Answers the peer's rekey (or ignores it when this side's own rekey wins a collision).
    func answerRekey(_ message1: [UInt8], from peer: DeviceID) -> Bool {
        guard let runtime = peers[peer], let connection = runtime.connection else { return false }
        let index = allocateIndex(for: peer)
        var reply: [UInt8]?
        let ok = withChannel(peer) { channel, now in
            reply = try channel.answerRekey(message1, localStatic: identity.keyPair, peerPublicKey: runtime.record.publicKey,
                                            pairKey: runtime.record.pairKey, newLocalIndex: index,
                                            payload: rekeyPayload(index: index), now: now)
        }
        guard ok else { return false }
        if let reply {
            _ = writeStream(reply, to: connection)
        } else {
            indexTable.removeValue(forKey: index)
        }
        return true
    }

    /// Completes this side's rekey with the peer's answer.
    func completeRekey(_ message2: [UInt8], from peer: DeviceID) -> Bool {
        guard let connection = peers[peer]?.connection else { return false }
        var confirm: [UInt8] = []
        let ok = withChannel(peer) { channel, now in
            confirm = try channel.completeRekey(message2, now: now)
        }
        guard ok else { return false }
        _ = writeStream(confirm, to: connection)
        logger.debug("rekey completed", metadata: ["peer.id": "\(peer.short)"])
        return true
    }
}
