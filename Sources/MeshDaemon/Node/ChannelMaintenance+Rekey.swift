import MeshCrypto
import NIOCore

/// Rekeying (see `PeerChannels+Rekey.swift`): writes what each step produced.
extension ChannelMaintenance {
    /// Starts a rekey towards `peer`.
    func startRekey(_ node: isolated MeshNode, _ peer: DeviceID) {
        guard admitsRekey(node, peer) else { return }
        let clock = node.clock
        let step = node.channels.startRekey(peer, udpPort: node.announcedUDPPort, wall: clock.wallNanoseconds(),
                                            now: clock.monotonicNanoseconds(), wallSeconds: clock.wallSeconds())
        guard case .proceed = step else {
            perform(node, step, for: peer)
            return
        }
        node.logger.debug("rekey started", metadata: ["peer.id": "\(peer.short)"])
        perform(node, step, for: peer)
    }

    /// Answers the peer's rekey (or ignores it when this side's own rekey wins a collision).
    func answerRekey(_ node: isolated MeshNode, _ message1: [UInt8], from peer: DeviceID) -> Bool {
        guard admitsRekey(node, peer) else { return false }
        let clock = node.clock
        return perform(node, node.channels.answerRekey(message1, from: peer, udpPort: node.announcedUDPPort, wall: clock.wallNanoseconds(),
                                                       now: clock.monotonicNanoseconds(), wallSeconds: clock.wallSeconds()), for: peer)
    }

    /// Completes this side's rekey with the peer's answer.
    func completeRekey(_ node: isolated MeshNode, _ message2: [UInt8], from peer: DeviceID) -> Bool {
        guard admitsRekey(node, peer) else { return false }
        let step = node.channels.completeRekey(message2, from: peer, now: node.clock.monotonicNanoseconds(),
                                               wallSeconds: node.clock.wallSeconds())
        guard perform(node, step, for: peer) else { return false }
        node.logger.debug("rekey completed", metadata: ["peer.id": "\(peer.short)"])
        return true
    }

    /// The peer confirmed the rekey this side answered.
    func confirmRekey(_ node: isolated MeshNode, from peer: DeviceID) -> Bool {
        perform(node, node.channels.confirmRekey(from: peer, now: node.clock.monotonicNanoseconds(), wallSeconds: node.clock.wallSeconds()),
                for: peer)
    }

    /// Whether a rekey message may be written to `peer` now: the daemon's own traffic in the
    /// connection's outbound budget, decided before the step seals it (a peer that sends rekey
    /// initiations and never reads gets its channel closed at the hard limit). True without a
    /// connection: the step itself finds no channel.
    func admitsRekey(_ node: isolated MeshNode, _ peer: DeviceID) -> Bool {
        guard let connection = node.channels.peers[peer]?.connection else { return true }
        return node.admitStream(.own, to: peer, on: connection)
    }

    /// Carries out a rekey step: writes its bytes, counts new keys, or closes the channel when
    /// it failed. False when the channel is gone.
    @discardableResult
    func perform(_ node: isolated MeshNode, _ step: PeerChannels.RekeyStep, for peer: DeviceID) -> Bool {
        switch step {
        case .noChannel:
            return false
        case .failed:
            node.dropChannel(peer, reason: "rekey failed", redial: true)
            return false
        case .proceed(let bytes, let completed):
            if completed { node.counters.rekeysCompleted += 1 }
            if let bytes, let connection = node.channels.peers[peer]?.connection { _ = node.writeStream(bytes, to: connection) }
            return true
        }
    }
}
