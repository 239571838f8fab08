import MeshCore
import MeshDaemon
import NIOCore

/// The relay route between two nodes: what a broker both reach stands for. Each node holds,
/// besides its address, a relay address (`10.254.0.N+1`, port 1883) that never moves; a dial
/// or a datagram to it crosses the pair's relay route instead of their link, so the relay
/// stays up while the link is cut (and goes down on its own, `setRelay`). The route is the
/// link's quality and delay. Off between every pair until a test turns it on.
extension SimulatedNetwork {
    /// The broker's name, as `meshctl peers` would show it (`relay sim-broker`).
    public static let relayBroker = "sim-broker"

    /// Node `node`'s relay address.
    static func relayAddress(node: Int) -> SocketAddress {
        do {
            return try SocketAddress(ipAddress: "10.254.0.\(node + 1)", port: 1883)
        } catch {
            preconditionFailure("SimulatedNetwork: a literal IPv4 address did not parse: \(error)")
        }
    }

    /// Whether `address` is a relay address (a dial or datagram to it uses the relay route).
    static func isRelayAddress(_ address: SocketAddress) -> Bool {
        address.port == 1883 && relayNode(of: address) != nil
    }

    /// The node whose relay host `address` is on (any port: a dialler's end has its own), if any.
    static func relayNode(of address: SocketAddress) -> Int? {
        guard let ip = address.ipAddress, ip.hasPrefix("10.254.0."), let last = Int(ip.dropFirst(9)), last > 0 else { return nil }
        return last - 1
    }

    /// How a node sees `address`: the relay route to the node whose relay host it is on, or
    /// the socket address itself.
    func pathAddress(_ address: SocketAddress) -> PathAddress {
        guard let node = Self.relayNode(of: address), deviceIDs.indices.contains(node) else { return .socket(address) }
        return .relay(RelayAddress(broker: Self.relayBroker, route: .peer(deviceIDs[node])))
    }

    /// Turns the relay route between `a` and `b` on or off: off, its datagrams are lost, its
    /// dials time out and its stream frames wait, as on a cut link.
    public func setRelay(_ a: Int, _ b: Int, up: Bool) { links[link(a, b)].relayUp = up }

    /// Whether the relay route between `a` and `b` is on.
    public func isRelayUp(_ a: Int, _ b: Int) -> Bool { links[link(a, b)].relayUp }
}
