/// Why a `MeshNode` could not start or run. Says what failed and what to do.
public struct NodeError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What kind of failure this is.
    public enum Code: String, Sendable, Equatable {
        /// The state folder could not be created or used.
        case stateDirectory
        /// The device identity key could not be loaded or created.
        case identity
        /// The paired-device store could not be read.
        case pairedDevices
        /// UDP or TCP could not listen on the configured address.
        case listen
        /// `run()` was called on a node that already ran.
        case alreadyRan
        /// The relay's MQTT client could not be set up (its password file, CA file or thread).
        case relay
    }

    /// The kind of failure.
    public var code: Code
    /// A sentence a person can act on (never contains a key).
    public var message: String

    /// Creates an error.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// `message`.
    public var description: String { message }
}
