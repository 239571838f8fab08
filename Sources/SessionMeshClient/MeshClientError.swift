import MeshLocalAPI

/// Why a `MeshClient` call failed.
///
/// Compare `kind` to tell "the daemon is not there" (`unreachable`, `connectionClosed`) from
/// "the daemon said no" (`daemon`, with the daemon's `code` and `message`).
public struct MeshClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The class of failure.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case unreachable, connectionClosed, daemon, protocolViolation, invalidArgument
        }
        private let base: Base

        /// The socket is missing or nothing accepts connections on it.
        public static let unreachable = Kind(base: .unreachable)
        /// The daemon closed the connection before answering.
        public static let connectionClosed = Kind(base: .connectionClosed)
        /// The daemon answered with an error; `code` and `message` are the daemon's.
        public static let daemon = Kind(base: .daemon)
        /// The daemon sent something this client cannot read.
        public static let protocolViolation = Kind(base: .protocolViolation)
        /// The call's arguments cannot be sent (checked before anything was sent); `code` is
        /// `invalid-argument`.
        public static let invalidArgument = Kind(base: .invalidArgument)

        /// The kind's name.
        public var description: String { base.rawValue }
    }

    /// The class of failure.
    public var kind: Kind
    /// A stable code: the daemon's error code for `.daemon`, else `unreachable`,
    /// `connection-closed` or `protocol-violation`.
    public var code: String
    /// A sentence a person can act on.
    public var message: String

    /// Creates an error.
    public init(kind: Kind, code: String, message: String) {
        self.kind = kind
        self.code = code
        self.message = message
    }

    /// `message`.
    public var description: String { message }

    /// The socket cannot be reached.
    public static func unreachable(socketPath: String, detail: String) -> MeshClientError {
        MeshClientError(kind: .unreachable, code: "unreachable",
                        message: "cannot reach meshd: \(detail) (is meshd running? socket \(socketPath))")
    }

    /// The daemon closed the connection.
    public static func connectionClosed(socketPath: String) -> MeshClientError {
        MeshClientError(kind: .connectionClosed, code: "connection-closed",
                        message: "meshd closed the connection before answering (socket \(socketPath))")
    }

    /// The daemon reported an error.
    public static func daemon(_ body: LocalAPIErrorBody) -> MeshClientError {
        MeshClientError(kind: .daemon, code: body.code, message: body.message)
    }

    /// The arguments of a call were refused before sending (e.g. an empty feature list, a
    /// device ID over 255 bytes, a payload the core codec cannot encode).
    public static func invalidArgument(_ body: LocalAPIErrorBody) -> MeshClientError {
        MeshClientError(kind: .invalidArgument, code: body.code, message: body.message)
    }

    /// The reply could not be read.
    public static func protocolViolation(_ detail: String) -> MeshClientError {
        MeshClientError(kind: .protocolViolation, code: "protocol-violation",
                        message: "unexpected reply from meshd: \(detail)")
    }
}
