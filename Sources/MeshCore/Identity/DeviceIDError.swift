/// A device ID typed or pasted by a person is not valid: which group has the typo, which
/// character is not base32, or how long an ID must be.
public struct DeviceIDError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What is wrong, in words a person can act on.
    public let message: String

    /// Creates an error saying `message`.
    public init(_ message: String) { self.message = message }

    /// `message`.
    public var description: String { message }
}
