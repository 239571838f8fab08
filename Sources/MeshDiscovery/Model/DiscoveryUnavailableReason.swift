/// Why mDNS discovery is not working right now, in words a person can act on.
public struct DiscoveryUnavailableReason: Sendable, Equatable, CustomStringConvertible {
    /// The kind of outage.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Value: String, Sendable, Hashable {
            case daemonNotRunning, busUnreachable, disconnected, failed
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// D-Bus works but no avahi-daemon owns `org.freedesktop.Avahi`; waiting for it.
        public static let daemonNotRunning = Code(.daemonNotRunning)
        /// The D-Bus system bus cannot be reached, so avahi-daemon cannot be either.
        public static let busUnreachable = Code(.busUnreachable)
        /// avahi-daemon went away (stopped or restarted); reconnecting.
        public static let disconnected = Code(.disconnected)
        /// Any other Avahi client failure.
        public static let failed = Code(.failed)

        /// The code's name, e.g. `daemonNotRunning`.
        public var description: String { value.rawValue }
    }

    /// The kind of outage.
    public var code: Code
    /// What happened and what to do about it.
    public var message: String

    /// Creates a reason.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`.
    public var description: String { "\(code): \(message)" }
}
