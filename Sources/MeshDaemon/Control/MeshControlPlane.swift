import MeshLocalAPI

/// What the local API server asks of the daemon's peer and channel layer.
///
/// The local API server (socket, framing, request dispatch) depends only on this protocol, so it
/// can be tested against a fake, and the channel layer can be tested without a socket. Every
/// method may be called concurrently from many clients. Errors thrown should be
/// `ControlError` values so the server can send a structured reply.
public protocol MeshControlPlane: Sendable {
    /// The daemon's identity and counters.
    func status() async -> DaemonStatus
    /// Every paired device with its channel state.
    func peers() async -> [PeerStatus]
    /// Creates a pairing code valid for `validFor` seconds. Only one code is live at a time;
    /// creating another replaces the previous one. With `replace` false, a device that is
    /// already paired cannot pair again with this code (it would replace its pairing).
    func createPairingCode(validFor seconds: Double, replace: Bool) async throws -> PairingInvitation
    /// Waits until a device pairs using `code`, the code expires (throws `.pairingExpired`), is
    /// cancelled, or fails too many times (throws `.pairingCodeInvalidated`).
    func awaitPairing(code: String) async throws -> PairedDevice
    /// Withdraws a live code. Unknown codes are ignored.
    func cancelPairing(code: String) async
    /// Pairs with the daemon that shows `code`: the one at `address` (`HOST:PORT`), or, when
    /// `address` is nil, the one discovery finds advertising the code's public hint. With
    /// `replace` false, an inviter this daemon is already paired with is not stored again.
    func joinPairing(code: String, address: String?, replace: Bool) async throws -> PairedDevice
    /// Removes a paired device (full or short ID), closing a live channel at once.
    func unpair(deviceID: String) async throws
    /// Measures `count` round trips over each path to a paired device with an active channel.
    func ping(deviceID: String, count: Int) async throws -> PingReport
}

/// A failure the local API reports to its client as `code` + `message`.
public struct ControlError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable machine-readable code (documented in docs/LOCAL-API.md).
    public var code: String
    /// A sentence a person can act on. Never contains a secret.
    public var message: String

    /// Creates an error.
    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    /// `message`.
    public var description: String { message }

    /// The device ID is not a paired device.
    public static func unknownPeer(_ id: String) -> ControlError {
        ControlError(code: LocalAPIDataError.unknownPeer, message: "no paired device matches '\(id)'; see `meshctl peers`")
    }
    /// The peer has no active channel.
    public static func peerNotActive(_ id: String) -> ControlError {
        ControlError(code: LocalAPIDataError.peerNotActive, message: "device \(id) has no active channel; is its daemon running and reachable?")
    }
    /// The code expired before a device paired.
    public static let pairingExpired = ControlError(code: "pairing-expired", message: "the pairing code expired; create a new one with `meshctl pair`")
    /// The code saw too many failed attempts and is no longer accepted.
    public static let pairingCodeInvalidated = ControlError(code: "pairing-code-invalidated", message: "the pairing code was invalidated after too many failed attempts; create a new one")
    /// The code was wrong (or the other side rejected it).
    public static let pairingFailed = ControlError(code: "pairing-failed", message: "pairing failed: the code did not match; check it and try again")
    /// The code was mistyped (check character mismatch).
    public static func invalidCode(_ detail: String) -> ControlError {
        ControlError(code: "invalid-code", message: "the pairing code is not valid: \(detail)")
    }
    /// No reply from the address given.
    public static func unreachable(_ address: String, _ detail: String) -> ControlError {
        ControlError(code: "unreachable", message: "could not reach a SessionMesh daemon at \(address): \(detail)")
    }
    /// A bad argument in a request.
    public static func invalidArgument(_ detail: String) -> ControlError {
        ControlError(code: LocalAPIErrorBody.Code.invalidArgument, message: detail)
    }
}
