import MeshCrypto

extension ControlError {
    /// The code already paired a device; codes are single use.
    public static let pairingCodeUsed = ControlError(
        code: "pairing-code-used",
        message: "the pairing code was already used; create a new one with `meshctl pair`")

    /// As many attempts are running as the code has failures left; a new one must wait.
    public static let pairingBusy = ControlError(
        code: "pairing-busy",
        message: "another device is trying this pairing code right now; try again in a few seconds")

    /// The other device is already paired with this one and `replace` was not asked for.
    static func alreadyPaired(name: String, id: DeviceID, advice: String) -> ControlError {
        ControlError(code: "already-paired",
                     message: "device \(name) (\(id.short)) is already paired with this device; \(advice)")
    }
}
