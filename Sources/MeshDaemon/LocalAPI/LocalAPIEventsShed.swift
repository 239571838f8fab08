/// A user outbound event on a local API connection: `count` events meant for this client were
/// shed before reaching the connection (by the router or an attach's sink). The connection's
/// `LocalAPIConnectionHandler` adds it to its `events.dropped` report.
struct LocalAPIEventsShed: Sendable {
    /// How many events were shed.
    let count: UInt64
}
