import MeshCrypto
import NIOCore

/// Rekeying (see `PeerChannels+Rekey.swift`): the node writes what each step produced.
extension MeshNode {
    /// Starts a rekey towards `peer`.
    func startRekey(_ peer: DeviceID) {
        let step = channels.startRekey(peer, udpPort: announcedUDPPort, wall: clock.wallNanoseconds(),
                                       now: clock.monotonicNanoseconds(), wallSeconds: clock.wallSeconds())
        guard case .proceed = step else {
            perform(step, for: peer)
            return
        }
        logger.debug("rekey started", metadata: ["peer.id": "\(peer.short)"])
        perform(step, for: peer)
    }

    /// Answers the peer's rekey (or ignores it when this side's own rekey wins a collision).
    func answerRekey(_ message1: [UInt8], from peer: DeviceID) -> Bool {
        perform(channels.answerRekey(message1, from: peer, udpPort: announcedUDPPort, wall: clock.wallNanoseconds(),
                                     now: clock.monotonicNanoseconds(), wallSeconds: clock.wallSeconds()), for: peer)
    }

    /// Completes this side's rekey with the peer's answer.
    func completeRekey(_ message2: [UInt8], from peer: DeviceID) -> Bool {
        let step = channels.completeRekey(message2, from: peer, now: clock.monotonicNanoseconds(), wallSeconds: clock.wallSeconds())
        guard perform(step, for: peer) else { return false }
        logger.debug("rekey completed", metadata: ["peer.id": "\(peer.short)"])
        return true
    }

    /// The peer confirmed the rekey this side answered.
    func confirmRekey(from peer: DeviceID) -> Bool {
        perform(channels.confirmRekey(from: peer, now: clock.monotonicNanoseconds(), wallSeconds: clock.wallSeconds()), for: peer)
    }

    /// Carries out a rekey step: writes its bytes, counts new keys, or closes the channel when
    /// it failed. False when the channel is gone.
    @discardableResult
    func perform(_ step: PeerChannels.RekeyStep, for peer: DeviceID) -> Bool {
        switch step {
        case .noChannel:
            return false
        case .failed:
            dropChannel(peer, reason: "rekey failed", redial: true)
            return false
        case .proceed(let bytes, let completed):
            if completed { counters.rekeysCompleted += 1 }
            if let bytes, let connection = channels.peers[peer]?.connection { _ = writeStream(bytes, to: connection) }
            return true
        }
    }
}
