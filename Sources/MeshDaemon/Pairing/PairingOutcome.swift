import MeshCrypto

/// What a successful pairing yields, the same on both sides except that each side learns the
/// *other* device's key and name.
///
/// Store the peer (key, name, device ID) and ``pairKey`` durably, then show the user the peer's
/// name, device ID and ``verification``; the other device shows the same verification string.
public struct PairingOutcome: Sendable {
    /// The other device's static X25519 public key (32 bytes).
    public var peerPublicKey: [UInt8]
    /// The other device's name (validated: 1...64 UTF-8 bytes, no control characters).
    public var peerName: String
    /// The other device's ID, derived from ``peerPublicKey``.
    public var peerDeviceID: DeviceID
    /// The pre-shared key for this pair's Noise IKpsk2 channel; identical on both sides.
    /// A secret: store it like a private key, never log it.
    public var pairKey: SecretBytes
    /// A short string both devices show after pairing; identical on both sides.
    public var verification: String

    /// Creates an outcome (pairing builds these; public for tests and fakes).
    public init(peerPublicKey: [UInt8], peerName: String, peerDeviceID: DeviceID,
                pairKey: SecretBytes, verification: String) {
        self.peerPublicKey = peerPublicKey
        self.peerName = peerName
        self.peerDeviceID = peerDeviceID
        self.pairKey = pairKey
        self.verification = verification
    }

    /// Builds the outcome once both identities are known and confirmed.
    init(peer: PairingIdentity, own: PairingIdentity, isk: SecretBytes, transcript: [UInt8]) {
        self.init(peerPublicKey: peer.publicKey, peerName: peer.name,
                  peerDeviceID: DeviceID(publicKey: peer.publicKey),
                  pairKey: Pairing.pairKey(isk: isk, publicKeyA: own.publicKey, publicKeyB: peer.publicKey),
                  verification: Pairing.verificationString(isk: isk, transcript: transcript))
    }
}
