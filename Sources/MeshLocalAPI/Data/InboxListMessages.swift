import Foundation

/// One item of the `inbox` reply: received from a peer, not yet acknowledged by an app.
public struct MeshInboxItem: Codable, Sendable, Equatable, Hashable {
    /// Inbox id (for `inbox.ack`, which drops it).
    public var id: UInt64
    /// Full device ID of the peer it came from.
    public var peer: String
    /// Its feature.
    public var featureID: String
    /// The envelope's event id.
    public var eventID: UUID
    /// Seconds since it arrived.
    public var ageSeconds: Double
    /// How often it was handed to an app (0: no app of its feature attached since it arrived).
    public var deliveries: Int
    /// Payload size in bytes.
    public var size: Int

    /// Creates an entry.
    public init(id: UInt64, peer: String, featureID: String, eventID: UUID, ageSeconds: Double, deliveries: Int, size: Int) {
        self.id = id
        self.peer = peer
        self.featureID = featureID
        self.eventID = eventID
        self.ageSeconds = ageSeconds
        self.deliveries = deliveries
        self.size = size
    }
}

/// `inbox` reply: the oldest inbox items (at most ``maximumItems``), in arrival order.
public struct MeshInboxReply: Codable, Sendable, Equatable {
    /// At most this many items are listed.
    public static let maximumItems = 1000
    /// The items.
    public var items: [MeshInboxItem]
    /// Creates a reply.
    public init(items: [MeshInboxItem]) { self.items = items }
}
