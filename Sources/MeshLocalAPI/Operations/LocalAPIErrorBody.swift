/// The JSON body of an error frame: `{"code": "...", "message": "..."}`.
///
/// `code` is stable and machine-readable; `message` is a sentence for a person and may change.
/// The daemon's own failures (`MeshError`) map onto it in one place, the daemon's
/// `LocalAPIErrorMapping`.
public struct LocalAPIErrorBody: Codable, Sendable, Equatable, Error, CustomStringConvertible {
    /// Stable machine-readable code; see `LocalAPIErrorBody.Code` and docs/LOCAL-API.md.
    public var code: String
    /// A sentence a person can act on. Never contains a secret.
    public var message: String

    /// Creates an error body.
    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    /// `message (code)`.
    public var description: String { "\(message) (\(code))" }

    /// Error codes of the protocol layer. Codes of the control layer (`unknown-peer`,
    /// `pairing-expired`, …) are listed in docs/LOCAL-API.md.
    public enum Code {
        /// The first two bytes were not the magic `SM`. Connection closed.
        public static let badMagic = "bad-magic"
        /// The header's version is not spoken here. Connection closed.
        public static let unsupportedVersion = "unsupported-version"
        /// The header is malformed (kind, flags) or the stream ended mid-frame. Connection closed.
        public static let badFrame = "bad-frame"
        /// The body is longer than the maximum. Connection closed.
        public static let frameTooLarge = "frame-too-large"
        /// The client sent a frame whose kind is not `request`. Connection closed.
        public static let unexpectedKind = "unexpected-kind"
        /// The body is not valid JSON for the operation. Connection closed.
        public static let badRequest = "bad-request"
        /// The operation code is unknown to this daemon. The connection stays open.
        public static let unknownOperation = "unknown-operation"
        /// A binary body was sent to an operation that takes JSON. The connection stays open.
        public static let unsupportedBody = "unsupported-body"
        /// Too many requests in flight on this connection. Connection closed.
        public static let tooManyRequests = "too-many-requests"
        /// The daemon already serves its maximum of connections. Connection closed.
        public static let tooManyConnections = "too-many-connections"
        /// The connection sent no whole request within its first deadline, or left a frame
        /// half-sent past its deadline (docs/LOCAL-API.md § 6). Connection closed.
        public static let timedOut = "timed-out"
        /// The uid already has its maximum of `ping` requests running. The connection stays open.
        public static let tooManyPings = "too-many-pings"
        /// The daemon is shutting down. Connection closed.
        public static let shuttingDown = "shutting-down"
        /// An unexpected daemon-side failure. The connection stays open.
        public static let internalError = "internal"
        /// A request argument is out of range or malformed. The connection stays open.
        public static let invalidArgument = "invalid-argument"
        /// The client's uid lacks the role the operation needs (pairing and unpairing need the
        /// control role; docs/LOCAL-API.md § roles). The connection stays open.
        public static let notPermitted = "not-permitted"
    }
}
