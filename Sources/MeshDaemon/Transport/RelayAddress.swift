import MeshCore

/// A relay path's remote end: the broker it goes through and what it is for on that broker.
///
/// Local knowledge only: the broker never sees a device ID (the relay derives blinded topics
/// from the pair's key, see docs/RELAY.md); this value tells the relay transport which pair's
/// topics to use, and `meshctl peers` which broker a peer is reached through.
public struct RelayAddress: Sendable, Hashable, CustomStringConvertible {
    /// What the route on the broker is for.
    public enum Route: Sendable, Hashable {
        /// The channel between this device and a paired device (topics from their pair key).
        case peer(DeviceID)
        /// A pairing rendezvous (topics from the public part of a pairing code).
        case rendezvous([UInt8])
    }

    /// The broker's host, as configured (`relay = "mqtts://USER@HOST:8883"`).
    public var broker: String
    /// What the route is for.
    public var route: Route

    /// A route through `broker`.
    public init(broker: String, route: Route) {
        self.broker = broker
        self.route = route
    }

    /// `relay BROKER`, as `meshctl peers` shows the path (never the route: it is derived from
    /// secrets).
    public var description: String { "relay \(broker)" }
}
