/// Constants of the pairing protocol (docs/PAIRING.md), shared by both roles and the framing.
public enum PairingProtocol {
    /// The protocol version carried in the first byte of every pairing message.
    public static let version: UInt8 = 2

    /// No pairing message is longer than this; the framing layer may drop a connection whose
    /// frame announces more without reading it.
    public static let maximumMessageSize = 256

    /// The longest device name pairing carries, in UTF-8 bytes.
    public static let maximumNameBytes = 64

    /// Length of an X25519 public key.
    public static let publicKeyBytes = 32

    /// CPace channel identifier (`ci`).
    static let channelIdentifier = Array("SessionMesh pairing v2".utf8)

    /// Prefix of every HKDF label of the key schedule.
    static let labelPrefix = "SessionMesh pairing v2 "

    /// Length of the joiner's random session id (CPace `sid`).
    static let sessionIDBytes = 16
    /// Length of a CPace share (ristretto255 point).
    static let shareBytes = 32
    /// Length of a key-confirmation tag (HMAC-SHA-256).
    static let confirmationBytes = 32
    /// Length of an ephemeral X25519 public key (E_J in message 1, E_I in message 2).
    static let ephemeralBytes = 32
    /// Length of a proof of possession of a static key (HMAC-SHA-256).
    static let proofBytes = 32
    /// Longest CPace associated data a message may carry.
    static let maximumAssociatedDataBytes = 64

    /// CPace associated data each role sends; the receiver insists on the other role's value,
    /// so a message can never be reflected back to its sender.
    static let joinerAssociatedData = Array("SessionMesh joiner".utf8)
    static let inviterAssociatedData = Array("SessionMesh inviter".utf8)
}
