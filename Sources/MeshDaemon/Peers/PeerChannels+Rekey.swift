import MeshCrypto
import MeshCore

/// Rekeying: a fresh `Noise_IKpsk2` handshake carried inside the channel's stream path (see
/// `ActiveChannel`). The side that initiated the current keys starts one after
/// `ChannelTuning.rekeyAfter` (120 s) or when a sealer nears its counter limit; keys older
/// than `rejectAfter` (180 s) close the channel and the normal reconnect takes over.
extension PeerChannels {
    /// What a rekey step asks of the node.
    enum RekeyStep: Equatable, Sendable {
        /// No active channel (or connection): nothing done.
        case noChannel
        /// The step failed: close the channel ("rekey failed") and redial.
        case failed
        /// Done: write `bytes` (when any) on the channel's connection; `completed` when new
        /// keys were installed.
        case proceed(bytes: [UInt8]?, completed: Bool)
    }

    /// Starts a rekey towards `peer`, announcing `udpPort` at wall-clock `wall` (ns).
    mutating func startRekey(_ peer: DeviceID, udpPort: UInt16, wall: Int64, now: UInt64, wallSeconds: Double) -> RekeyStep {
        guard let runtime = peers[peer], runtime.connection != nil else { return .noChannel }
        let index = allocateIndex(for: peer)
        let payload = HandshakePayload(sessionIndex: index, udpPort: udpPort, wallNanoseconds: wall, isRekey: true, speaksDeviceSet: true)
        var bytes: [UInt8] = []
        let localKeys = self.localKeys, random = self.random
        let step = withChannel(peer, now: now, wallSeconds: wallSeconds) { channel in
            bytes = try channel.startRekey(localStatic: localKeys, peerPublicKey: runtime.record.publicKey,
                                           pairKey: runtime.record.pairKey, newLocalIndex: index, payload: payload,
                                           ephemeral: random.ephemeralKey())
        }
        guard case .proceed(_, let completed) = step else { return step }
        return .proceed(bytes: bytes, completed: completed)
    }

    /// Answers the peer's rekey message 1 (nothing to write when this side's own rekey wins a
    /// collision).
    mutating func answerRekey(_ message1: [UInt8], from peer: DeviceID, udpPort: UInt16, wall: Int64,
                              now: UInt64, wallSeconds: Double) -> RekeyStep {
        guard let runtime = peers[peer], runtime.connection != nil else { return .noChannel }
        let index = allocateIndex(for: peer)
        let payload = HandshakePayload(sessionIndex: index, udpPort: udpPort, wallNanoseconds: wall, isRekey: true, speaksDeviceSet: true)
        var reply: [UInt8]?
        let localKeys = self.localKeys, random = self.random
        let step = withChannel(peer, now: now, wallSeconds: wallSeconds) { channel in
            reply = try channel.answerRekey(message1, localStatic: localKeys, peerPublicKey: runtime.record.publicKey,
                                            pairKey: runtime.record.pairKey, newLocalIndex: index, payload: payload, now: now,
                                            ephemeral: random.ephemeralKey())
        }
        guard case .proceed(_, let completed) = step else { return step }
        if reply == nil { indexTable.removeValue(forKey: index) }
        return .proceed(bytes: reply, completed: completed)
    }

    /// Completes this side's rekey with the peer's message 2: the confirm to write.
    mutating func completeRekey(_ message2: [UInt8], from peer: DeviceID, now: UInt64, wallSeconds: Double) -> RekeyStep {
        guard peers[peer]?.connection != nil else { return .noChannel }
        var confirm: [UInt8] = []
        let step = withChannel(peer, now: now, wallSeconds: wallSeconds) { channel in
            confirm = try channel.completeRekey(message2, now: now)
        }
        guard case .proceed(_, let completed) = step else { return step }
        return .proceed(bytes: confirm, completed: completed)
    }

    /// The initiator confirmed the rekey this side answered: its keys are installed.
    mutating func confirmRekey(from peer: DeviceID, now: UInt64, wallSeconds: Double) -> RekeyStep {
        withChannel(peer, now: now, wallSeconds: wallSeconds) { channel in try channel.confirmRekey(now: now) }
    }

    /// Runs `body` on the peer's channel and stores it back (nothing is stored when it
    /// throws); new keys count as a handshake at `wallSeconds`.
    private mutating func withChannel(_ peer: DeviceID, now: UInt64, wallSeconds: Double,
                                      _ body: (inout ActiveChannel) throws -> Void) -> RekeyStep {
        guard var runtime = peers[peer], var channel = runtime.channel else { return .noChannel }
        do {
            try body(&channel)
        } catch {
            return .failed
        }
        let completed = channel.rekeys != runtime.channel?.rekeys
        runtime.channel = channel
        if completed { runtime.lastHandshakeWall = wallSeconds }
        peers[peer] = runtime
        syncIndices(of: peer)
        return .proceed(bytes: nil, completed: completed)
    }
}
