import MeshCrypto
import MeshCore

/// A request to join a pairing, checked before anything is sent: the code parsed (a typo
/// never opens a connection) and the inviter's address, when one is given, as an endpoint.
struct PairingJoinRequest {
    let code: PairingCode
    /// The inviter's address; nil: find it by the code's public hint.
    let endpoint: DaemonConfiguration.Endpoint?

    /// Throws `MeshError` `.invalidCode` or `.invalidArgument` (the address, in the config
    /// parser's words: no port, port out of range, …).
    init(code: String, address: String?) throws {
        do {
            self.code = try PairingCode.parse(code)
        } catch {
            throw MeshError.invalidCode("\(error)")
        }
        guard let address else {
            endpoint = nil
            return
        }
        guard let given = EndpointParser.parse(address) else {
            var detail = "'\(address)' is not HOST:PORT"
            do { _ = try DaemonConfiguration.Endpoint(parsing: address) } catch { detail = error.message }
            throw MeshError.invalidArgument("--address: \(detail)")
        }
        endpoint = given
    }

    /// Whether to store the device a finished exchange paired with: throws `MeshError` when it
    /// is this daemon itself (`localPublicKey`), or a device already paired here (`existing`)
    /// and `replace` is false (`already-paired`: the stored pairing is kept).
    static func accept(_ outcome: PairingOutcome, localPublicKey: [UInt8], existing: PairedPeer?,
                       replace: Bool) throws(MeshError) {
        guard outcome.peerPublicKey != localPublicKey else {
            throw MeshError.invalidArgument("that address is this daemon itself")
        }
        if let existing, !replace {
            throw MeshError.alreadyPaired(
                name: existing.name, id: outcome.peerDeviceID,
                advice: "its pairing here was kept. If the other device stored this new pairing, the channel between them fails until both hold the same one: pair again with a new code and `meshctl pair - --replace` (the other device needs `meshctl pair --replace` when it already knows this one)")
        }
    }
}
