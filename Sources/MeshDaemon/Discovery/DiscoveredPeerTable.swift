import MeshCrypto
import MeshDiscovery

/// What the node has learned from discovery, folded into per-device addresses. A pure value:
/// the node feeds it ``DiscoveryEvent``s and the set of paired devices, and acts on the
/// ``Change``s it returns (dial, re-handshake). No I/O, no clock.
///
/// Trust: an mDNS record is unauthenticated. The table only uses its device-ID hint to decide
/// *which paired device to try* at an address; the channel handshake decides who answers.
/// Services of unpaired devices are kept (pairing by code looks at them, and a device paired
/// later is matched at once) but never produce a dial.
struct DiscoveredPeerTable: Sendable {
    /// A paired device's mDNS addresses changed.
    struct Change: Sendable, Equatable {
        /// The paired device.
        var peer: DeviceID
        /// Its mDNS endpoints before the change.
        var previous: [DaemonConfiguration.Endpoint]
        /// Its mDNS endpoints now (empty: no longer advertised).
        var current: [DaemonConfiguration.Endpoint]

        /// Hosts (IP literals) in ``previous``.
        var previousHosts: Set<String> { Set(previous.map(\.host).map(DiscoveredPeerTable.unscoped)) }
        /// Hosts (IP literals) in ``current``.
        var currentHosts: Set<String> { Set(current.map(\.host).map(DiscoveredPeerTable.unscoped)) }
    }

    /// Every mDNS service currently resolved, by instance name.
    private(set) var mdnsServices: [String: DiscoveredService] = [:]
    /// Every static service, by name.
    private(set) var staticServices: [String: DiscoveredService] = [:]
    /// mDNS endpoints per paired device, best first.
    private(set) var mdnsEndpoints: [DeviceID: [DaemonConfiguration.Endpoint]] = [:]
    /// Whether the mDNS backend is reachable (nil: not known yet).
    private(set) var mdnsAvailable: Bool?
    /// Why mDNS is not available, when it is not.
    private(set) var unavailableReason: DiscoveryUnavailableReason?
    /// Outages reported since start.
    private(set) var outages: UInt64 = 0
    /// The name our advertisement is live under, if it is.
    private(set) var publishedName: String?
    /// Channels re-handshaken because a device (or this one) moved; counted by the node.
    var moves: UInt64 = 0
    /// Handshakes tried next to a live channel because its address was no longer advertised,
    /// and how many of them did not authenticate (the channel stayed); counted by the node.
    var probes: UInt64 = 0
    var probesFailed: UInt64 = 0
    /// Per device, the addresses (`HOST:PORT`) a probe is trying now; kept by the node.
    var probedAddresses: [DeviceID: Set<String>] = [:]
    /// Per device, the addresses (`HOST:PORT`) of the dial under way, so a new mDNS address
    /// can be tried next to it; kept by the node.
    var dialedAddresses: [DeviceID: Set<String>] = [:]
    /// The paired devices the table matched against last.
    private(set) var paired: Set<DeviceID> = []

    /// Applies one event; returns the paired devices whose mDNS endpoints changed.
    mutating func apply(_ event: DiscoveryEvent) -> [Change] {
        switch event {
        case .resolved(let service):
            switch service.source {
            case .mdns: mdnsServices[service.instanceName] = service
            case .staticConfiguration: staticServices[service.instanceName] = service
            }
        case .removed(let name, let source):
            switch source {
            case .mdns: mdnsServices.removeValue(forKey: name)
            case .staticConfiguration: staticServices.removeValue(forKey: name)
            }
        case .available:
            mdnsAvailable = true
            unavailableReason = nil
            return []
        case .unavailable(let reason):
            if mdnsAvailable != false { outages += 1 }
            mdnsAvailable = false
            unavailableReason = reason
            publishedName = nil
            // The backend forgot its services; they come back as `resolved` once it is back.
            // Keep the endpoints already matched: they are the best guess meanwhile.
            mdnsServices.removeAll()
            return []
        case .published(let name):
            publishedName = name
            return []
        }
        return rematch()
    }

    /// Matches services against a new set of paired devices; returns the changes.
    mutating func setPaired(_ devices: Set<DeviceID>) -> [Change] {
        guard devices != paired else { return [] }
        paired = devices
        for gone in mdnsEndpoints.keys where !devices.contains(gone) { mdnsEndpoints.removeValue(forKey: gone) }
        return rematch()
    }

    /// Static endpoints, in name order.
    var staticEndpoints: [DaemonConfiguration.Endpoint] {
        staticServices.keys.sorted().flatMap { staticServices[$0]?.addresses.map(Self.endpoint) ?? [] }
    }

    /// mDNS services whose pairing hint equals `hint` (case-insensitive), by instance name.
    func inviters(hint: String) -> [DiscoveredService] {
        let wanted = hint.uppercased()
        return mdnsServices.keys.sorted().compactMap { name in
            guard let service = mdnsServices[name], service.pairingHint?.uppercased() == wanted,
                  Self.speaksOurProtocol(service) else { return nil }
            return service
        }
    }

    /// Recomputes every paired device's endpoints from the current services.
    private mutating func rematch() -> [Change] {
        var found: [DeviceID: [DaemonConfiguration.Endpoint]] = [:]
        for name in mdnsServices.keys.sorted() {
            guard let service = mdnsServices[name], Self.speaksOurProtocol(service) else { continue }
            for peer in paired where service.hintMatches(deviceID: peer.description) {
                found[peer, default: []] += Self.endpoints(of: service)
            }
        }
        var changes: [Change] = []
        for peer in paired.sorted() {
            let current = Self.unique(found[peer] ?? [])
            let previous = mdnsEndpoints[peer] ?? []
            // An outage forgets services but not endpoints: only a real answer replaces them.
            guard current != previous, !(current.isEmpty && mdnsAvailable == false) else { continue }
            if current.isEmpty { mdnsEndpoints.removeValue(forKey: peer) } else { mdnsEndpoints[peer] = current }
            changes.append(Change(peer: peer, previous: previous, current: current))
        }
        return changes
    }

    /// True when the service's `v=` is absent or one this build speaks.
    static func speaksOurProtocol(_ service: DiscoveredService) -> Bool {
        service.protocolVersion.map { $0 == DiscoveryTXTRecord.currentProtocolVersion } ?? true
    }

    /// A service's endpoints, routable addresses before link-local ones.
    static func endpoints(of service: DiscoveredService) -> [DaemonConfiguration.Endpoint] {
        let routable = service.addresses.filter { !$0.isLinkLocalIPv6 }
        let linkLocal = service.addresses.filter { $0.isLinkLocalIPv6 && ($0.interfaceName ?? $0.interfaceIndex.map { "\($0)" }) != nil }
        return (routable + linkLocal).map(endpoint)
    }

    /// An address as a dialable endpoint; link-local IPv6 carries its scope (`fe80::1%eth0`).
    static func endpoint(_ address: DiscoveredAddress) -> DaemonConfiguration.Endpoint {
        var host = address.host
        if address.isLinkLocalIPv6, let scope = address.interfaceName ?? address.interfaceIndex.map({ "\($0)" }) {
            host += "%" + scope
        }
        return DaemonConfiguration.Endpoint(host: host, port: Int(address.port))
    }

    /// The host without an IPv6 scope (`fe80::1%eth0` → `fe80::1`), as sockets report it.
    static func unscoped(_ host: String) -> String {
        host.split(separator: "%", maxSplits: 1).first.map(String.init) ?? host
    }

    private static func unique(_ endpoints: [DaemonConfiguration.Endpoint]) -> [DaemonConfiguration.Endpoint] {
        var seen = Set<DaemonConfiguration.Endpoint>()
        return endpoints.filter { seen.insert($0).inserted }
    }
}
