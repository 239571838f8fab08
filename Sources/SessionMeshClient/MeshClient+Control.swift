import MeshLocalAPI

extension MeshClient {
    /// The daemon's protocol version, limits and operations (`hello`).
    public func hello(client: String = "SessionMeshClient") async throws -> HelloReply {
        try await call(.hello, HelloRequest(client: client), as: HelloReply.self)
    }

    /// The daemon's identity, listen address, uptime and counters (`status`).
    public func status() async throws -> DaemonStatus {
        try await call(.status, EmptyBody(), as: DaemonStatus.self)
    }

    /// Every paired device with its channel state (`peers`).
    public func peers() async throws -> [PeerStatus] {
        try await call(.peers, EmptyBody(), as: PeersReply.self).peers
    }

    /// Creates a pairing code valid for `seconds` (the daemon's default when nil), replacing any
    /// live one (`pair.create`). The code is a secret: show it to the user, never log it.
    /// With `replace`, a device that is already paired may pair again with the code (its
    /// pairing is replaced); without, it is refused with `already-paired`.
    /// With `single`, the device that pairs is paired with this one only and does not join the
    /// device set.
    public func createPairingCode(validFor seconds: Double? = nil, replace: Bool = false, single: Bool = false) async throws -> PairingInvitation {
        try await call(.pairCreate, PairCreateRequest(validFor: seconds, replace: replace ? true : nil, single: single ? true : nil),
                       as: PairingInvitation.self)
    }

    /// Waits until a device pairs with `code` (`pair.wait`). Throws the daemon's
    /// `pairing-expired`, `pairing-code-invalidated` or a cancellation error when the code ends
    /// without a pairing.
    public func awaitPairing(code: String) async throws -> PairedDevice {
        try await call(.pairWait, PairCodeRequest(code: code), as: PairedDevice.self)
    }

    /// Withdraws a live code (`pair.cancel`); unknown codes are ignored.
    public func cancelPairing(code: String) async throws {
        _ = try await call(.pairCancel, PairCodeRequest(code: code), as: EmptyBody.self)
    }

    /// Pairs with the daemon that shows `code` (`pair.join`): the one at `address`
    /// (`HOST:PORT`), or, when nil, the one the daemon finds over mDNS by the code's public hint
    /// (fails with `inviter-not-found` after a few seconds when there is none).
    /// With `replace`, an inviter this daemon is already paired with replaces its pairing;
    /// without, the daemon refuses with `already-paired` and keeps the old one.
    /// With `single`, the two devices are paired with each other only (neither joins the
    /// other's device set).
    public func joinPairing(code: String, address: String? = nil, replace: Bool = false, single: Bool = false) async throws -> PairedDevice {
        try await call(.pairJoin, PairJoinRequest(code: code, address: address, replace: replace ? true : nil, single: single ? true : nil),
                       as: PairedDevice.self)
    }

    /// Removes a paired device by full or short ID (`unpair`).
    public func unpair(deviceID: String) async throws {
        _ = try await call(.unpair, UnpairRequest(deviceID: deviceID), as: EmptyBody.self)
    }

    /// Measures `count` round trips over each path to a paired device (`ping`).
    public func ping(deviceID: String, count: Int = PingRequest.defaultCount) async throws -> PingReport {
        try await call(.ping, PingRequest(deviceID: deviceID, count: count), as: PingReport.self)
    }
}
