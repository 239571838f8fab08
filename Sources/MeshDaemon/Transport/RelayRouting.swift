import MeshCore

/// A `NodeTransport` that reaches paired devices through a relay of its own, without the
/// node's MQTT broker link: the simulator's, which models the broker as a route of its
/// network. The node asks it for the route when path choice dials the relay and no `relay`
/// is configured.
public protocol RelayRouting: AnyObject, Sendable {
    /// The address that dials `peer` through the relay now (`PathAddress.relay`); nil while
    /// there is none.
    func relayRoute(to peer: DeviceID) -> PathAddress?
}
