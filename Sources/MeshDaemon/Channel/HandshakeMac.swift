import MeshCrypto

/// The MAC that ends handshake message 1 on a new TCP connection, so a responder can tell a
/// paired device's message 1 from anyone else's before it spends any X25519 on it.
///
/// ```
/// frame body = noise message 1 (112 bytes) | mac (16 bytes)      128 bytes, nothing else
/// key = HKDF-SHA-256(ikm = pair key, salt = "SessionMesh handshake mac v1",
///                    info = responder's static public key, 32 bytes)
/// mac = first 16 bytes of HMAC-SHA-256(key, noise message 1)
/// ```
/// WireGuard's `mac1` keys this MAC with the responder's public key; here it is keyed with the
/// pair's secret, so only a device holding a pair key of the responder can produce it (the
/// responder tries the key of each paired device, a few HMACs). Replays of a recorded message 1
/// still pass it: the global handshake budget bounds what they cost.
enum HandshakeMac {
    /// Length of the MAC.
    static let length = 16
    /// Length of a Noise message 1: ephemeral key 32, sealed static key 32 + 16, sealed
    /// payload `HandshakePayload.encodedSize` + 16.
    static let message1Length = 32 + 48 + HandshakePayload.encodedSize + 16
    /// Length of the first frame's body: message 1 and its MAC.
    static let frameBodyLength = message1Length + length
    /// HKDF salt (domain separation).
    static let salt = Array("SessionMesh handshake mac v1".utf8)

    /// The MAC key of the pair whose secret is `pairKey`, for messages to `responderPublicKey`.
    static func key(pairKey: SecretBytes, responderPublicKey: [UInt8]) -> SecretBytes {
        PairingSupport.hkdfSHA256(secret: pairKey, salt: salt, info: responderPublicKey, count: 32)
    }

    /// The MAC of `message1` under `key`.
    static func mac(key: SecretBytes, message1: [UInt8]) -> [UInt8] {
        Array(PairingSupport.hmacSHA256(key: key, message: message1).prefix(length))
    }

    /// `message1` followed by its MAC: the body of the first frame.
    static func append(to message1: [UInt8], key: SecretBytes) -> [UInt8] {
        message1 + mac(key: key, message1: message1)
    }

    /// Splits a first-frame body into message 1 and MAC; nil when it is not `frameBodyLength`
    /// long.
    static func split(_ body: [UInt8]) -> (message1: [UInt8], mac: [UInt8])? {
        guard body.count == frameBodyLength else { return nil }
        return (Array(body.dropLast(length)), Array(body.suffix(length)))
    }

    /// Whether `mac` is the MAC of `message1` under `key` (constant time).
    static func verify(_ mac: [UInt8], of message1: [UInt8], key: SecretBytes) -> Bool {
        PairingSupport.constantTimeEqual(self.mac(key: key, message1: message1), mac)
    }
}
