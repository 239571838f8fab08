import MeshCore

/// What the local API server asks of the daemon's peer and channel layer.
///
/// The local API server (socket, framing, request dispatch) depends only on this protocol, so it
/// can be tested against a fake, and the channel layer can be tested without a socket. Every
/// method may be called concurrently from many clients. Errors thrown are `MeshError` values;
/// the local API maps each kind to its documented code (LocalAPIErrorMapping.swift).
public protocol MeshControlPlane: Sendable {
    /// The daemon's identity and counters.
    func status() async -> DaemonStatus
    /// Every paired device with its channel state.
    func peers() async -> [PeerStatus]
    /// Creates a pairing code valid for `validFor` seconds. Only one code is live at a time;
    /// creating another replaces the previous one. With `replace` false, a device that is
    /// already paired cannot pair again with this code (it would replace its pairing).
    func createPairingCode(validFor seconds: Double, replace: Bool) async throws -> PairingInvitation
    /// As `createPairingCode(validFor:replace:)`; with `single` the device that pairs stays
    /// out of the device set (paired with this one only).
    func createPairingCode(validFor seconds: Double, replace: Bool, single: Bool) async throws -> PairingInvitation
    /// Waits until a device pairs using `code`, the code expires (throws `.pairingExpired`), is
    /// cancelled, or fails too many times (throws `.pairingCodeInvalidated`).
    func awaitPairing(code: String) async throws -> PairedDevice
    /// Withdraws a live code. Unknown codes are ignored.
    func cancelPairing(code: String) async
    /// Pairs with the daemon that shows `code`: the one at `address` (`HOST:PORT`), or, when
    /// `address` is nil, the one discovery finds advertising the code's public hint. With
    /// `replace` false, an inviter this daemon is already paired with is not stored again.
    func joinPairing(code: String, address: String?, replace: Bool) async throws -> PairedDevice
    /// As `joinPairing(code:address:replace:)`; with `single` the two stay out of each other's
    /// device sets.
    func joinPairing(code: String, address: String?, replace: Bool, single: Bool) async throws -> PairedDevice
    /// Removes a paired device (full or short ID), closing a live channel at once.
    func unpair(deviceID: String) async throws
    /// Measures `count` round trips over each path to a paired device with an active channel.
    func ping(deviceID: String, count: Int) async throws -> PingReport
}

extension MeshControlPlane {
    /// A control plane without a device set pairs every device singly.
    public func createPairingCode(validFor seconds: Double, replace: Bool, single: Bool) async throws -> PairingInvitation {
        try await createPairingCode(validFor: seconds, replace: replace)
    }

    /// A control plane without a device set pairs every device singly.
    public func joinPairing(code: String, address: String?, replace: Bool, single: Bool) async throws -> PairedDevice {
        try await joinPairing(code: code, address: address, replace: replace)
    }
}
