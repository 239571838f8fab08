/// What a compare-and-put of something a peer sent (a snapshot slot, a session row, a timer
/// anchor) did.
public enum StorePutResult: Sendable, Equatable {
    /// Stored: the row was new or its revision strictly higher than the stored one.
    case stored
    /// Not stored: an equal or higher revision is there.
    case stale
    /// Not stored: the row belongs to this device or to another peer (a session row); a peer
    /// only ever replaces the rows it sent itself.
    case notOwned
    /// Not stored: a new row would pass this limit (the peer's share or the total).
    case refused(StoreLimit)

    /// Whether the row was stored.
    public var isStored: Bool { self == .stored }
}
