/// The bytes of one MQTT message on a relay topic: a small clear header around exactly what
/// TCP or UDP would carry.
///
/// ```
/// +---------+------+-----------+-------------+-------------+-------------+------------+
/// | version | kind | path ID   | sequence    | payload len | payload     | padding    |
/// | u8 = 1  | u8   | 8 bytes   | u64 BE      | u16 BE      | len bytes   | zero bytes |
/// +---------+------+-----------+-------------+-------------+-------------+------------+
///  \_____________________ header: 20 bytes ___________________/
/// ```
/// - kind 1, stream data: the next bytes of the path's byte stream (what a TCP connection
///   carries: the preamble, then `len`-framed handshake, pairing or sealed stream frames),
///   1 to ``maximumPayload`` bytes. Sequence 0, 1, 2, … per path.
/// - kind 2, stream close: the sender closed the path; empty payload, the next sequence.
/// - kind 3, datagram: one sealed datagram (docs/PROTOCOL.md §5).
/// - kind 4, mailbox item / kind 5, mailbox ack / kind 6, mailbox snapshot: one ``MailboxSeal``
///   box (of kind 1, 2 or 3). Kinds 3–6 belong to no path: path ID and sequence are 0.
/// - padding: zeros up to a size bucket (``RelayPadding``); the whole message is at most
///   ``maximumSize`` bytes.
///
/// The header is not authenticated: what it carries either is authenticated inside (every
/// payload is a sealed frame, datagram or box, or a handshake that authenticates itself), or
/// can at worst make the receiver drop a message or close a path, which a broker can do anyway.
struct RelayEnvelope: Sendable, Equatable {
    /// The only version this build writes and reads.
    static let version: UInt8 = 1
    /// Bytes in front of the payload.
    static let headerSize = 20
    /// Largest message written or accepted, header, payload and padding together.
    static let maximumSize = 65_536
    /// Largest payload of one message.
    static let maximumPayload = maximumSize - headerSize

    /// What a message carries.
    enum Kind: UInt8, Sendable, CaseIterable {
        /// The next bytes of a path's stream.
        case streamData = 1
        /// The end of a path's stream.
        case streamClose = 2
        /// One sealed datagram.
        case datagram = 3
        /// One store-and-forward item, sealed to the receiver.
        case mailboxItem = 4
        /// One store-and-forward ack, sealed to the item's sender.
        case mailboxAck = 5
        /// One store-and-forward latest-state snapshot, sealed to the receiver.
        case mailboxSnapshot = 6

        /// Whether messages of this kind belong to a path (and are numbered in it).
        var isStream: Bool { self == .streamData || self == .streamClose }
    }

    /// What the message carries.
    var kind: Kind
    /// The path of a stream message; ``RelayPathID/none`` for the others.
    var pathID: RelayPathID
    /// The message's number in its path (0 for messages outside a path).
    var sequence: UInt64
    /// The carried bytes.
    var payload: [UInt8]

    /// A stream message of `path`.
    static func stream(_ path: RelayPathID, sequence: UInt64, data: [UInt8]) -> RelayEnvelope {
        RelayEnvelope(kind: .streamData, pathID: path, sequence: sequence, payload: data)
    }

    /// The close message of `path`, numbered after its last data.
    static func close(_ path: RelayPathID, sequence: UInt64) -> RelayEnvelope {
        RelayEnvelope(kind: .streamClose, pathID: path, sequence: sequence, payload: [])
    }

    /// A message outside any path (datagram, mailbox item or ack).
    static func unnumbered(_ kind: Kind, payload: [UInt8]) -> RelayEnvelope {
        RelayEnvelope(kind: kind, pathID: .none, sequence: 0, payload: payload)
    }

    init(kind: Kind, pathID: RelayPathID, sequence: UInt64, payload: [UInt8]) {
        self.kind = kind
        self.pathID = pathID
        self.sequence = sequence
        self.payload = payload
    }
}
