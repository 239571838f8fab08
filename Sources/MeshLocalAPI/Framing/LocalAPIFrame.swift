import NIOCore

/// One message on the local API socket: a fixed 16-byte header and a body.
///
/// The wire layout is drawn on `LocalAPIFrameDecoder`. A frame is a request from a client, or a
/// reply, an error or an event from the daemon. Replies and errors carry the `requestID` of the
/// request they answer; events carry the id of the request that subscribed (an `attach`), and
/// connection-level errors that answer no request carry id 0.
public struct LocalAPIFrame: Sendable, Equatable {
    /// What a frame is.
    public enum Kind: UInt8, Sendable, Equatable, CaseIterable {
        /// Client → daemon: perform `operation`.
        case request = 1
        /// Daemon → client: the operation succeeded; the body is its result.
        case reply = 2
        /// Daemon → client: something happened that the client subscribed to.
        case event = 3
        /// Daemon → client: the request (or, with request id 0, the connection) failed; the body
        /// is a `LocalAPIErrorBody`.
        case error = 4
    }

    /// Bits of the header's flags field.
    public struct Flags: OptionSet, Sendable, Equatable, Hashable {
        /// The raw 16-bit value.
        public var rawValue: UInt16
        /// Creates flags from their raw value.
        public init(rawValue: UInt16) { self.rawValue = rawValue }

        /// The body is binary (the protocol core's encoding, docs/ENCODING.md) instead of UTF-8 JSON.
        public static let binaryBody = Flags(rawValue: 1 << 0)
        /// Every flag this version defines; a frame with any other bit set is rejected.
        public static let known: Flags = [.binaryBody]
    }

    /// Request, reply, event or error.
    public var kind: Kind
    /// The operation the frame belongs to.
    public var operation: LocalAPIOperation
    /// Header flags.
    public var flags: Flags
    /// Chosen by the client per request; echoed by the daemon.
    public var requestID: UInt32
    /// The body: UTF-8 JSON unless `flags` contains `.binaryBody`. May be empty.
    public var body: ByteBuffer

    /// Creates a frame.
    public init(kind: Kind, operation: LocalAPIOperation, flags: Flags = [], requestID: UInt32,
                body: ByteBuffer) {
        self.kind = kind
        self.operation = operation
        self.flags = flags
        self.requestID = requestID
        self.body = body
    }

    /// Bytes this frame takes on the wire (header plus body).
    public var wireLength: Int { LocalAPIWireFormat.headerLength + body.readableBytes }
}
