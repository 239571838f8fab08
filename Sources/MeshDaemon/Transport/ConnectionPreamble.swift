/// The 4 bytes that open every daemon-to-daemon TCP connection, from the connecting side.
///
/// ```
///  0     1     2         3
/// +-----+-----+---------+------+
/// | 'S' | 'M' | version | kind |     version = 1; kind 1 = channel handshake, 2 = pairing
/// +-----+-----+---------+------+
/// ```
/// A listener that reads anything else closes without writing a byte.
public enum ConnectionKind: UInt8, Sendable, Equatable {
    /// A Noise channel handshake follows.
    case channel = 1
    /// A pairing attempt follows.
    case pairing = 2
    /// A device asks whether the device set removed it (`RemovalNotice`).
    case removalQuery = 3

    /// Wire version of the preamble.
    public static let version: UInt8 = 1

    /// The preamble bytes for this kind.
    public var preamble: [UInt8] { [0x53, 0x4D, ConnectionKind.version, rawValue] }

    /// Parses a preamble; nil for anything else.
    public init?(preamble bytes: [UInt8]) {
        guard bytes.count == 4, bytes[0] == 0x53, bytes[1] == 0x4D, bytes[2] == ConnectionKind.version,
              let kind = ConnectionKind(rawValue: bytes[3]) else { return nil }
        self = kind
    }
}
