/// A stream path could not be opened (`NodeTransport.dialStream`): nothing answered, the
/// connection was refused, or the transport cannot reach that kind of address.
public struct PathConnectError: Error, Sendable, CustomStringConvertible {
    /// Where the path was to lead.
    public var address: PathAddress
    /// What happened, in words (an errno's text, "timed out", "no relay configured").
    public var reason: String
    /// The transport's own error, when there was one (kept for the pairing messages).
    public var underlying: (any Error & Sendable)?

    /// A failure to reach `address`.
    public init(address: PathAddress, reason: String, underlying: (any Error & Sendable)? = nil) {
        self.address = address
        self.reason = reason
        self.underlying = underlying
    }

    /// "cannot open a path to ADDRESS: REASON".
    public var description: String { "cannot open a path to \(address): \(reason)" }
}
