import NIOCore

/// Where a path leads: the remote end of a stream path, the source of a received datagram, or
/// where the node sends a peer's datagrams and dials it.
///
/// A direct path has an IP socket address; a configured or discovered address may still be a
/// name (resolved when dialled); a relay path has no socket address at all, only the broker it
/// goes through and the route on it (`RelayAddress`). The node keeps, compares and shows these
/// values and hands them back to the transport that made them; it does not look inside beyond
/// the helpers below (`sourceKey`, `datagramEndpoint(announcedPort:)`, `directEndpoint`).
public enum PathAddress: Sendable, Hashable, CustomStringConvertible {
    /// An IP address and port (what a socket reports).
    case socket(SocketAddress)
    /// A host (a name or IP text) and port, resolved when dialled (configured and discovered
    /// addresses).
    case host(DaemonConfiguration.Endpoint)
    /// A route through the MQTT relay.
    case relay(RelayAddress)

    /// `HOST:PORT` (IPv6 bracketed) for direct addresses; `relay BROKER` for relay ones.
    public var description: String {
        switch self {
        case .socket(let address):
            guard let ip = address.ipAddress, let port = address.port else { return "\(address)" }
            return DaemonConfiguration.Endpoint(host: ip, port: port).description
        case .host(let endpoint):
            return endpoint.description
        case .relay(let relay):
            return relay.description
        }
    }

    /// Whether this is a route through the relay.
    public var isRelay: Bool {
        if case .relay = self { return true }
        return false
    }

    /// Whether this is a pairing rendezvous on the relay broker.
    public var isRendezvous: Bool {
        if case .relay(let relay) = self, case .rendezvous = relay.route { return true }
        return false
    }

    /// The host part a person recognises: the IP text, the configured name, or the broker host.
    public var host: String {
        switch self {
        case .socket(let address): address.ipAddress ?? "?"
        case .host(let endpoint): endpoint.host
        case .relay(let relay): relay.broker
        }
    }

    /// The key per-source limits count this address under (`SourceKey`): its IP (IPv6 by its
    /// /64) for direct paths; one key per broker for relay paths (everything from a broker
    /// counts as one source, as it is one to the network too).
    public var sourceKey: String {
        switch self {
        case .socket, .host: SourceKey.of(host)
        case .relay(let relay): "relay:" + relay.broker
        }
    }

    /// Where the peer's datagrams go once a stream path to it authenticated, given the UDP port
    /// it announced in the handshake: this address's IP with that port for direct paths (nil
    /// when the peer announced none); the relay address itself for relay paths.
    public func datagramEndpoint(announcedPort: UInt16) -> PathAddress? {
        switch self {
        case .socket(let address):
            guard announcedPort != 0, let ip = address.ipAddress else { return nil }
            return (try? SocketAddress(ipAddress: ip, port: Int(announcedPort))).map(PathAddress.socket)
        case .host(let endpoint):
            guard announcedPort != 0 else { return nil }
            return .host(DaemonConfiguration.Endpoint(host: endpoint.host, port: Int(announcedPort)))
        case .relay:
            return self
        }
    }

    /// The direct `HOST:PORT` of this address, worth storing as a peer's observed address; nil
    /// for relay addresses (the broker is configured, never learnt from a peer).
    public var directEndpoint: DaemonConfiguration.Endpoint? {
        switch self {
        case .socket(let address):
            guard let ip = address.ipAddress, let port = address.port else { return nil }
            return DaemonConfiguration.Endpoint(host: ip, port: port)
        case .host(let endpoint):
            return endpoint
        case .relay:
            return nil
        }
    }
}
