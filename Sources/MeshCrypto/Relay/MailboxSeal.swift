/// Seals store-and-forward boxes to one paired device, and opens the boxes it sends back,
/// without a live handshake: the two may never be online at the same time.
///
/// ```
/// box = version u8 = 1 | kind u8 | counter u64 BE | nonce (24) | XChaCha20-Poly1305 ciphertext | tag (16)
///        \____________ header: 10 bytes ________/
/// key(sender → receiver) = HKDF-SHA-256(ikm  = X25519(own static private key, peer static public key) || pair key,
///                                       salt = "SessionMesh relay mailbox v1",
///                                       info = sender static public key || receiver static public key, 32)
/// associated data        = header (10 bytes) || sender static public key || receiver static public key
/// ```
/// - kind 1 is an item, kind 2 an ack, kind 3 a snapshot; the associated data binds both, the counter, and who
///   sealed it for whom, so no box opens as another kind, in the other direction or for
///   another pair.
/// - The key needs both the pair key and a static private key of the pair, so neither a
///   leaked pair key nor a leaked device key alone opens a box.
/// - The nonce is random (192 bits: no two boxes share one, whatever the counter), so the
///   sender keeps no nonce state across restarts.
/// - *counter* is the sender's number for the box, strictly increasing per direction (the
///   sender's wall clock in nanoseconds, kept above its last one). The receiver refuses a
///   counter it took already or one below its window (``MailboxReplayGuard``), which is how a
///   box replayed by the broker is told from a new one; it checks the counter before opening.
///
/// There is no forward secrecy: a box recorded by the broker opens with the static keys and the
/// pair key, which is why it only ever holds what the sender would store in its own outbox.
public struct MailboxSeal: Sendable {
    /// What a box holds.
    public enum Kind: UInt8, Sendable {
        /// A store-and-forward item.
        case item = 1
        /// An end-to-end ack of items (and of latest-state snapshots).
        case ack = 2
        /// The latest snapshot of one slot (a snapshot push).
        case snapshot = 3
    }

    /// What ``open(_:)`` found in a box.
    public struct Opened: Sendable, Equatable {
        /// The box's kind.
        public let kind: Kind
        /// The sender's number for the box.
        public let counter: UInt64
        /// The sealed bytes.
        public let plaintext: [UInt8]
    }

    static let version: UInt8 = 1
    static let salt = Array("SessionMesh relay mailbox v1".utf8)
    /// Header length: version, kind, counter.
    public static let headerSize = 10
    /// Bytes a box is longer than its plaintext: header, nonce and tag.
    public static let overhead = headerSize + Sodium.xchachaNonceLength + Sodium.aeadTagLength

    private let sendingKey: SecretBytes
    private let receivingKey: SecretBytes
    private let ownPublicKey: [UInt8]
    private let peerPublicKey: [UInt8]

    /// The seal between `identity` (this device's static key pair) and the paired device with
    /// `peerPublicKey` and `pairKey`. Nil when a key has the wrong length or the X25519 result is
    /// all zero (a low-order peer key, which would make the key depend on the pair key alone).
    public init?(identity: X25519KeyPair, peerPublicKey: [UInt8], pairKey: SecretBytes) {
        guard pairKey.count == 32, peerPublicKey.count == 32,
              let shared = try? Sodium.x25519(privateKey: identity.privateKey, publicKey: peerPublicKey) else { return nil }
        let secret = PairingSupport.concatenated([shared, pairKey])
        ownPublicKey = identity.publicKey
        self.peerPublicKey = peerPublicKey
        sendingKey = PairingSupport.hkdfSHA256(secret: secret, salt: Self.salt, info: identity.publicKey + peerPublicKey)
        receivingKey = PairingSupport.hkdfSHA256(secret: secret, salt: Self.salt, info: peerPublicKey + identity.publicKey)
    }

    /// A box of `kind` holding `plaintext`, numbered `counter`, that only the peer opens.
    public func seal(_ plaintext: [UInt8], kind: Kind, counter: UInt64) -> [UInt8] {
        seal(plaintext, kind: kind, counter: counter, nonce: Sodium.randomBytes(count: Sodium.xchachaNonceLength))
    }

    /// ``seal(_:kind:counter:)`` with a given nonce: only for test vectors.
    func seal(_ plaintext: [UInt8], kind: Kind, counter: UInt64, nonce: [UInt8]) -> [UInt8] {
        let header = Self.header(kind: kind, counter: counter)
        let associatedData = header + ownPublicKey + peerPublicKey
        return header + nonce + Sodium.xchachaSeal(key: sendingKey, nonce: nonce, associatedData: associatedData, plaintext: plaintext)
    }

    /// The kind and counter a box from the peer claims, read without opening it (so a replayed
    /// counter costs no decryption). Nil when it is too short or not version 1 of a known kind.
    public static func peek(_ box: [UInt8]) -> (kind: Kind, counter: UInt64)? {
        guard box.count >= overhead, box[0] == version, let kind = Kind(rawValue: box[1]) else { return nil }
        let counter = box[2..<10].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return (kind, counter)
    }

    /// Opens a box the peer sealed for this device. Nil when it is malformed, forged, altered,
    /// sealed for another device or pair, or sealed by this device itself.
    public func open(_ box: [UInt8]) -> Opened? {
        guard let (kind, counter) = Self.peek(box) else { return nil }
        let header = Array(box[0..<Self.headerSize])
        let nonce = Array(box[Self.headerSize..<(Self.headerSize + Sodium.xchachaNonceLength)])
        let ciphertext = Array(box[(Self.headerSize + Sodium.xchachaNonceLength)...])
        let associatedData = header + peerPublicKey + ownPublicKey
        guard let plaintext = try? Sodium.xchachaOpen(key: receivingKey, nonce: nonce, associatedData: associatedData,
                                                      ciphertext: ciphertext) else { return nil }
        return Opened(kind: kind, counter: counter, plaintext: plaintext)
    }

    static func header(kind: Kind, counter: UInt64) -> [UInt8] {
        [version, kind.rawValue] + (0..<8).map { UInt8(truncatingIfNeeded: counter >> (56 - 8 * UInt64($0))) }
    }
}
