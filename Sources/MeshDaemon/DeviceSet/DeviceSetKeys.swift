import MeshCrypto

/// The keys of two members that never paired directly (docs/PROTOCOL.md, "Derived pair keys").
///
/// Both come from the X25519 of the two devices' static keys, which only those two can compute:
/// no key is shared by the set, and no third device (a removed one included) can derive a key
/// of a pair it is not in. The pair key also depends on the roster's epoch, so every effective
/// removal (and every rotate record) gives every derived pair a new key.
enum DeviceSetKeys {
    static let pairKeySalt = Array("SessionMesh set pair key v1".utf8)
    static let noticeKeySalt = Array("SessionMesh removal notice v1".utf8)

    /// The channel psk of `own` and `peer` at `epoch` (32 bytes); nil for a low-order key.
    static func pairKey(own: X25519KeyPair, peer: [UInt8], epoch: [UInt8]) -> SecretBytes? {
        guard let shared = PairingSupport.x25519(privateKey: own.privateKey, publicKey: peer) else { return nil }
        return PairingSupport.hkdfSHA256(secret: shared, salt: pairKeySalt, info: epoch + ordered(own.publicKey, peer))
    }

    /// The key of removal notices between `own` and `peer` (the same at every epoch).
    static func noticeKey(own: X25519KeyPair, peer: [UInt8]) -> SecretBytes? {
        guard let shared = PairingSupport.x25519(privateKey: own.privateKey, publicKey: peer) else { return nil }
        return PairingSupport.hkdfSHA256(secret: shared, salt: noticeKeySalt, info: ordered(own.publicKey, peer))
    }

    /// The two public keys, the byte-wise smaller first.
    static func ordered(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] {
        a.lexicographicallyPrecedes(b) ? a + b : b + a
    }
}
