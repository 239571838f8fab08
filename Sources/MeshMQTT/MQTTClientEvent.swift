/// What the client tells its owner, on the client's event loop.
public enum MQTTClientEvent: Sendable, Equatable {
    /// The broker accepted the connection (CONNACK success) with this protocol version; the
    /// client has subscribed again to every topic it was asked to.
    case connected(MQTTProtocolVersion)
    /// The connection attempt failed, or a connection ended. The client does not retry by
    /// itself: its owner decides when (with backoff) and calls `connect()` again.
    case disconnected(MQTTFailure)
    /// A message arrived on a subscribed topic.
    case message(MQTTMessage)
}
