/// Why `meshd` cannot claim its state folder: another daemon uses it, the folder or its lock
/// file cannot be made, or the folder's owner or mode is unsafe.
public struct StateDirectoryLockError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, for callers that pick an exit status.
    public enum Code: Sendable, Equatable {
        /// Another running `meshd` holds the lock.
        case inUse
        /// The folder or the lock file could not be created or locked.
        case cannotCreate
        /// The folder belongs to another user, or group or others may access it.
        case unsafe
    }

    /// What went wrong.
    public var code: Code
    /// The folder or lock file concerned.
    public var path: String
    /// What is wrong and what to do.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, path: String, message: String) {
        self.code = code
        self.path = path
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
