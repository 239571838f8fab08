/// The operation code in a frame header (16 bits).
///
/// Code ranges:
///
/// | range            | use                                                            |
/// |------------------|----------------------------------------------------------------|
/// | `0x0000`         | reserved: connection-level errors that answer no operation     |
/// | `0x0001–0x00FF`  | control operations (JSON bodies): hello, status, pairing, ping |
/// | `0x0100–0x0FFF`  | data operations (docs/LOCAL-API.md §9): attach, send, snapshots, sessions;  |
/// |                  | JSON or binary bodies (`LocalAPIFrame.Flags.binaryBody`)       |
/// | `0x1000–0xFFFF`  | reserved for later versions                                    |
///
/// An unknown code in a well-formed request gets an `unknown-operation` error and the connection
/// stays open, so a client can probe for operations a newer daemon adds.
public struct LocalAPIOperation: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The 16-bit code on the wire.
    public var rawValue: UInt16
    /// Wraps a code.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// Used in error frames that answer no particular operation.
    public static let unspecified = LocalAPIOperation(rawValue: 0x0000)
    /// Protocol version and limits; optional first request.
    public static let hello = LocalAPIOperation(rawValue: 0x0001)
    /// The daemon's `DaemonStatus`.
    public static let status = LocalAPIOperation(rawValue: 0x0002)
    /// The paired devices (`PeerStatus` list).
    public static let peers = LocalAPIOperation(rawValue: 0x0003)
    /// Create a pairing code.
    public static let pairCreate = LocalAPIOperation(rawValue: 0x0010)
    /// Wait until a device pairs with a code (long request).
    public static let pairWait = LocalAPIOperation(rawValue: 0x0011)
    /// Withdraw a live pairing code.
    public static let pairCancel = LocalAPIOperation(rawValue: 0x0012)
    /// Pair with another daemon that shows a code.
    public static let pairJoin = LocalAPIOperation(rawValue: 0x0013)
    /// Remove a paired device.
    public static let unpair = LocalAPIOperation(rawValue: 0x0014)
    /// Measure round trips to a paired device.
    public static let ping = LocalAPIOperation(rawValue: 0x0020)
    /// Event: the daemon shed events for this client because it read too slowly; the body
    /// is `{"dropped": N}` with the count since the last such event.
    public static let eventsDropped = LocalAPIOperation(rawValue: 0x00F0)

    /// Codes reserved for control operations.
    public static let controlRange: ClosedRange<UInt16> = 0x0001...0x00FF
    /// Codes reserved for the data operations (docs/LOCAL-API.md §9).
    public static let dataRange: ClosedRange<UInt16> = 0x0100...0x0FFF

    /// The control operations this version implements, in documentation order.
    public static let controlOperations: [LocalAPIOperation] = [
        .hello, .status, .peers, .pairCreate, .pairWait, .pairCancel, .pairJoin, .unpair, .ping,
    ]

    /// The documented name (`pair.create`, …), or `op-0xNNNN` for an unknown code.
    public var name: String {
        switch self {
        case .unspecified: return "unspecified"
        case .hello: return "hello"
        case .status: return "status"
        case .peers: return "peers"
        case .pairCreate: return "pair.create"
        case .pairWait: return "pair.wait"
        case .pairCancel: return "pair.cancel"
        case .pairJoin: return "pair.join"
        case .unpair: return "unpair"
        case .ping: return "ping"
        case .eventsDropped: return "events.dropped"
        default:
            if let dataName { return dataName }
            let hex = String(rawValue, radix: 16, uppercase: true)
            return "op-0x" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        }
    }

    /// `name`.
    public var description: String { name }
}
