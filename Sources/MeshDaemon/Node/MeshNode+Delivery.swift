import MeshCrypto

/// Small read-only views the delivery router needs (through `NodeDeliveryChannels`).
extension MeshNode {
    /// Round trip (latest sample) and clock offset (peer minus local, lowest-RTT sample) of
    /// `peer`, in nanoseconds, when measured.
    func linkEstimate(of peer: DeviceID) -> DeliveryLinkEstimate {
        channels.linkEstimate(of: peer, now: clock.monotonicNanoseconds())
    }

    /// Whether `peer` has an active channel now.
    func isActive(_ peer: DeviceID) -> Bool {
        guard let index = channels.peers.index(forKey: peer) else { return false }
        return channels.peers.values[index].channel != nil
    }
}
