/// A user outbound event on a local API connection: `count` events meant for this client were
/// shed before reaching the connection (by the router or an attach's sink). The connection's
/// `LocalAPIConnectionHandler` adds it to its `events.dropped` report, and offers the inbox items
/// among them to their attachment again.
struct LocalAPIEventsShed: Sendable {
    /// How many events were shed.
    let count: UInt64
    /// The attach request whose events they were (its sink's `requestID`).
    var requestID: UInt32 = 0
    /// The inbox items among them.
    var inboxItems: [ShedInboxItem] = []
}
