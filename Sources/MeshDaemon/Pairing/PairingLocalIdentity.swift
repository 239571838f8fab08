import MeshCrypto

/// This device as it takes part in pairing: its static key pair and its name.
///
/// The public key and name are what the other device receives (``presented``); the private
/// key never leaves the device — pairing uses it only to prove, bound to the attempt, that this
/// device holds it (docs/PAIRING.md, "Proof of possession").
public struct PairingLocalIdentity: Sendable {
    /// The device's static X25519 key pair (its identity key).
    public let keyPair: X25519KeyPair
    /// The device's human-readable name.
    public let name: String

    /// Creates the identity; validation happens when pairing starts.
    public init(keyPair: X25519KeyPair, name: String) {
        self.keyPair = keyPair
        self.name = name
    }

    /// The static public key (32 bytes).
    public var publicKey: [UInt8] { keyPair.publicKey }

    /// What the other device receives: public key and name.
    public var presented: PairingIdentity { PairingIdentity(publicKey: keyPair.publicKey, name: name) }

    /// Throws ``PairingError/invalidIdentity(_:)`` when this identity cannot be sent.
    func validated() throws(PairingError) -> PairingLocalIdentity {
        _ = try presented.validated()
        return self
    }
}
