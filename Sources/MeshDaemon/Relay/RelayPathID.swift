import MeshCrypto

/// The random ID of one relay path: a stream emulated over broker messages, as one TCP
/// connection is on the LAN. A fresh one for every dial, so a redial never continues an old
/// path's sequence numbers.
public struct RelayPathID: Hashable, Sendable, CustomStringConvertible {
    /// The 8 bytes as a big-endian integer.
    public let rawValue: UInt64

    /// The ID with these 8 bytes (big-endian).
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// A fresh ID from libsodium's random generator, never 0 (0 marks messages that belong to no path).
    public static func random() -> RelayPathID {
        for _ in 0..<4 {
            let bytes = PairingSupport.randomBytes(count: 8)
            let value = bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            if value != 0 { return RelayPathID(rawValue: value) }
        }
        return RelayPathID(rawValue: 1)  // four zero draws in a row: the generator is broken anyway
    }

    /// The ID of messages outside any path (datagrams, mailbox items and acks).
    public static let none = RelayPathID(rawValue: 0)

    /// 16 hex digits (an ID is random and not secret).
    public var description: String {
        let hex = String(rawValue, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
