/// A discovery call that could not do what was asked, and why.
public struct DiscoveryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Value: String, Sendable, Hashable {
            case invalidAdvertisement, invalidStaticPeer, alreadyStarted, notRunning, backendSetupFailed
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// An advertisement field is out of range (name length, port, hint characters).
        public static let invalidAdvertisement = Code(.invalidAdvertisement)
        /// A static peer entry is not `HOST:PORT` or `[IPV6]:PORT`.
        public static let invalidStaticPeer = Code(.invalidStaticPeer)
        /// `start` was called twice.
        public static let alreadyStarted = Code(.alreadyStarted)
        /// The call needs a running instance (not started, or already stopped).
        public static let notRunning = Code(.notRunning)
        /// The backend could not be set up at all (e.g. the Avahi event loop thread).
        public static let backendSetupFailed = Code(.backendSetupFailed)

        /// The code's name, e.g. `invalidAdvertisement`.
        public var description: String { value.rawValue }
    }

    /// The kind of failure.
    public var code: Code
    /// What was wrong and what to change.
    public var message: String

    /// Creates an error.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`.
    public var description: String { "\(code): \(message)" }
}
