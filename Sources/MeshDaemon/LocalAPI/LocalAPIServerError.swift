/// Why the local API server could not start.
public struct LocalAPIServerError: Error, Sendable, Equatable, CustomStringConvertible {
    private enum Code: Sendable, Equatable {
        case anotherDaemonLive, notASocket, pathTooLong, cannotPrepare, cannotBind
    }
    private let code: Code
    /// A sentence a person can act on.
    public let message: String

    /// Another daemon answers on the socket path.
    public static func anotherDaemonLive(_ path: String) -> LocalAPIServerError {
        LocalAPIServerError(code: .anotherDaemonLive,
                            message: "another meshd is already serving on \(path); stop it or choose another --socket")
    }
    /// Something that is not a socket is in the way.
    public static func notASocket(_ path: String) -> LocalAPIServerError {
        LocalAPIServerError(code: .notASocket,
                            message: "\(path) exists and is not a socket; remove it or choose another --socket")
    }
    /// The path does not fit `sun_path`.
    public static func pathTooLong(_ path: String, limit: Int) -> LocalAPIServerError {
        LocalAPIServerError(code: .pathTooLong,
                            message: "socket path \(path) is \(path.utf8.count) bytes; the limit is \(limit); choose a shorter --socket")
    }
    /// The folder or file could not be prepared.
    public static func cannotPrepare(_ path: String, _ detail: String) -> LocalAPIServerError {
        LocalAPIServerError(code: .cannotPrepare, message: "cannot prepare the local API socket \(path): \(detail)")
    }
    /// Binding failed.
    public static func cannotBind(_ path: String, _ detail: String) -> LocalAPIServerError {
        LocalAPIServerError(code: .cannotBind, message: "cannot listen on the local API socket \(path): \(detail)")
    }

    /// Whether another daemon holds the socket.
    public var isAnotherDaemonLive: Bool { code == .anotherDaemonLive }

    /// `message`.
    public var description: String { message }
}
