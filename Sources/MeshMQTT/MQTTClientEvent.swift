/// What the client tells its owner, on the client's event loop.
public enum MQTTClientEvent: Sendable, Equatable {
    /// The broker accepted the connection (CONNACK success) with this protocol version; the
    /// client has subscribed again to every topic it was asked to.
    case connected(MQTTProtocolVersion)
    /// The connection attempt failed, or a connection ended. The client does not retry by
    /// itself: its owner decides when (with backoff) and calls `connect()` again.
    case disconnected(MQTTFailure)
    /// The broker confirmed the subscription to this topic (SUBACK) on the connection that is
    /// up: from now on what is published there reaches this client.
    case subscribed(String)
    /// A message arrived on a subscribed topic.
    case message(MQTTMessage)
}
