// The control plane's failures with fixed wording (pairing, peers, arguments).

extension MeshError {
    /// The device ID is not a paired device.
    public static func unknownPeer(_ id: String) -> MeshError {
        MeshError(.unknownPeer, "no paired device matches '\(id)'; see `meshctl peers`")
    }
    /// The peer has no active channel.
    public static func peerNotActive(_ id: String) -> MeshError {
        MeshError(.peerNotActive, "device \(id) has no active channel; is its daemon running and reachable?")
    }
    /// A bad argument in a request.
    public static func invalidArgument(_ detail: String) -> MeshError {
        MeshError(.invalidArgument, detail)
    }
    /// The code expired before a device paired.
    public static let pairingExpired = MeshError(.pairingExpired, "the pairing code expired; create a new one with `meshctl pair`")
    /// The code saw too many failed attempts and is no longer accepted.
    public static let pairingCodeInvalidated = MeshError(.pairingCodeInvalidated, "the pairing code was invalidated after too many failed attempts; create a new one")
    /// The code was wrong (or the other side rejected it).
    public static let pairingFailed = MeshError(.pairingFailed, "pairing failed: the code did not match; check it and try again")
    /// The code already paired a device; codes are single use.
    public static let pairingCodeUsed = MeshError(
        .pairingCodeUsed, "the pairing code was already used; create a new one with `meshctl pair`")
    /// As many attempts are running as the code has failures left; a new one must wait.
    public static let pairingBusy = MeshError(
        .pairingBusy, "another device is trying this pairing code right now; try again in a few seconds")
    /// A newer code replaced this one.
    public static let pairingReplaced = MeshError(.pairingReplaced, "a newer pairing code replaced this one")
    /// The code was withdrawn (`pair.cancel`).
    public static let pairingCancelled = MeshError(.pairingCancelled, "the pairing code was cancelled")
    /// The daemon is stopping.
    public static let stopping = MeshError(.stopping, "the daemon is stopping")
    /// The daemon does not run its network service.
    public static let notRunning = MeshError(.notRunning, "the daemon is not running its network service")
    /// The code was mistyped (check character mismatch).
    public static func invalidCode(_ detail: String) -> MeshError {
        MeshError(.invalidCode, "the pairing code is not valid: \(detail)")
    }
    /// No reply from the address given.
    public static func unreachable(_ address: String, _ detail: String) -> MeshError {
        MeshError(.unreachable, "could not reach a SessionMesh daemon at \(address): \(detail)")
    }
    /// The other device is already paired with this one and `replace` was not asked for.
    public static func alreadyPaired(name: String, id: DeviceID, advice: String) -> MeshError {
        MeshError(.alreadyPaired, "device \(name) (\(id.short)) is already paired with this device; \(advice)")
    }
}
