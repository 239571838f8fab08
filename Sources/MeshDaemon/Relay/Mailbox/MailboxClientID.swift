import MeshCrypto

/// The MQTT client identifier of a device's mailbox session: stable across restarts (the broker
/// keeps a persistent session under it), and derived so it names neither the device ID nor a
/// key.
///
/// ```
/// client ID = "sm-" || the first 16 characters of base32(HMAC-SHA-256(key = static private key,
///                                                       "SessionMesh relay client id v1"))
/// ```
/// The key is the device's own static private key, which never leaves it: no one else can
/// compute the name or link it to the device's public key or ID. 16 base32 characters carry
/// 80 bits; the whole identifier is 19 ASCII characters (`a`–`z`, `2`–`7`), within the
/// 23 that MQTT 3.1.1 brokers must accept.
enum MailboxClientID {
    static let label = Array("SessionMesh relay client id v1".utf8)
    static let prefix = "sm-"

    /// The identifier for the device whose static private key is `privateKey`.
    static func derive(privateKey: SecretBytes) -> String {
        let digest = PairingSupport.hmacSHA256(key: privateKey, message: label)
        return prefix + String(RelayTopicName.encode(digest).prefix(16))
    }
}
