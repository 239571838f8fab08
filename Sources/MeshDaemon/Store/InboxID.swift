/// The store-wide identifier of an inbox item, in arrival order. Never reused.
///
/// Pass it back to ``StoreInbox/markDelivered(ids:)`` and ``StoreInbox/acknowledge(ids:)``.
public struct InboxID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The underlying row id.
    public let rawValue: Int64
    /// Wraps a row id.
    public init(rawValue: Int64) { self.rawValue = rawValue }
    /// Orders by arrival.
    public static func < (lhs: InboxID, rhs: InboxID) -> Bool { lhs.rawValue < rhs.rawValue }
    /// The decimal number.
    public var description: String { String(rawValue) }
}
