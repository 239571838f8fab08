/// The store-wide identifier of an outbox item, shown by `meshctl queue` and used to cancel it.
///
/// Never reused, even after the item is acknowledged or cancelled.
public struct OutboxID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The underlying row id.
    public let rawValue: Int64
    /// Wraps a row id, e.g. one a person typed after `meshctl queue cancel`.
    public init(rawValue: Int64) { self.rawValue = rawValue }
    /// Orders by creation.
    public static func < (lhs: OutboxID, rhs: OutboxID) -> Bool { lhs.rawValue < rhs.rawValue }
    /// The decimal number.
    public var description: String { String(rawValue) }
}
