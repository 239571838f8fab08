import MeshCrypto

/// Small read-only views the delivery router needs.
extension MeshNode {
    /// Round trip (latest sample) and clock offset (peer minus local, lowest-RTT sample) of
    /// `peer`, in nanoseconds, when measured.
    func linkEstimate(of peer: DeviceID) -> (roundTripNanoseconds: Int64?, offsetNanoseconds: Int64?) {
        guard let index = peers.index(forKey: peer) else { return (nil, nil) }
        let estimate = peers.values[index].estimator.estimate(now: clock.monotonicNanoseconds())
        return (peers.values[index].estimator.latestRoundTripNanoseconds, estimate?.offsetNanoseconds)
    }

    /// Every paired device.
    func pairedDeviceIDs() -> [DeviceID] { Array(peers.keys) }

    /// Whether `peer` has an active channel now.
    func isActive(_ peer: DeviceID) -> Bool {
        guard let index = peers.index(forKey: peer) else { return false }
        return peers.values[index].channel != nil
    }

    /// Resolves a full or short device ID (or unique prefix) among paired devices.
    func resolvePairedPeer(_ text: String) throws -> DeviceID { try resolvePeer(text) }
}
