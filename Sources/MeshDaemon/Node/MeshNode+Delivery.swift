import MeshCrypto

/// Small read-only views the delivery router needs.
extension MeshNode {
    /// Round trip (latest sample) and clock offset (peer minus local, lowest-RTT sample) of
    /// `peer`, in nanoseconds, when measured.
    func linkEstimate(of peer: DeviceID) -> (roundTripNanoseconds: Int64?, offsetNanoseconds: Int64?) {
        guard let runtime = peers[peer] else { return (nil, nil) }
        let estimate = runtime.estimator.estimate(now: clock.monotonicNanoseconds())
        return (runtime.estimator.latestRoundTripNanoseconds, estimate?.offsetNanoseconds)
    }

    /// Every paired device.
    func pairedDeviceIDs() -> [DeviceID] { Array(peers.keys) }

    /// Whether `peer` has an active channel now.
    func isActive(_ peer: DeviceID) -> Bool { peers[peer]?.channel != nil }

    /// Resolves a full or short device ID (or unique prefix) among paired devices.
    func resolvePairedPeer(_ text: String) throws -> DeviceID { try resolvePeer(text) }
}
