/// Why a connection to the broker failed or ended, in words a person can act on.
///
/// A struct with a kind, so new kinds can be added without breaking callers that switch on the
/// four a user sees in `meshctl status`.
public struct MQTTFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure it was.
    public enum Kind: Sendable, Equatable {
        /// The broker refused the user name or password, or the account may not connect.
        case authRefused
        /// The TLS handshake failed: the certificate did not verify, the name did not match,
        /// or the broker does not speak TLS on that port.
        case tlsFailed
        /// No connection: the name did not resolve, the port refused, the link or the broker
        /// went away, or the broker stopped answering.
        case unreachable
        /// The broker refused the MQTT protocol version offered (the client then offers 3.1.1).
        case protocolRefused
        /// The broker broke the protocol or refused for another reason.
        case refused
    }

    /// The kind.
    public var kind: Kind
    /// What happened, e.g. "connection refused by 127.0.0.1:1883".
    public var detail: String

    /// Creates a failure.
    public init(_ kind: Kind, _ detail: String) {
        self.kind = kind
        self.detail = detail
    }

    /// The state a user sees: "auth refused", "TLS failed", "unreachable", ….
    public var words: String {
        switch kind {
        case .authRefused: "auth refused"
        case .tlsFailed: "TLS failed"
        case .unreachable: "unreachable"
        case .protocolRefused: "protocol refused"
        case .refused: "refused"
        }
    }

    public var description: String { "\(words): \(detail)" }
}
