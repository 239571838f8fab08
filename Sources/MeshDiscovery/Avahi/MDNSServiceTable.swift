/// Folds per-interface, per-protocol mDNS resolutions into one ``DiscoveredService`` per
/// instance name. Pure value type: the Avahi glue feeds it and publishes what it returns.
///
/// Avahi reports a service once per (interface, IP protocol) it was seen on, and each
/// resolver yields one address. A peer with IPv4 and IPv6 on two interfaces is four
/// instances here but one service to the caller, with four addresses.
struct MDNSServiceTable: Sendable {
    /// One browse result: where Avahi saw the instance.
    struct InstanceKey: Hashable, Sendable {
        var interfaceIndex: Int32
        var ipv6: Bool
        var name: String
        var domain: String
    }

    /// What one resolver reported.
    struct Resolution: Equatable, Sendable {
        var address: DiscoveredAddress
        var hostName: String
        var txt: DiscoveryTXTRecord
        /// Increases with each resolution, so the newest TXT wins across instances.
        var sequence: UInt64
    }

    /// What changed for the caller.
    enum Change: Equatable, Sendable {
        case updated(DiscoveredService)
        case removed(instanceName: String)
    }

    private var resolutions: [InstanceKey: Resolution] = [:]
    private var sequence: UInt64 = 0

    /// Number of instances with a resolution.
    var count: Int { resolutions.count }

    /// Records a resolution; returns the service's new aggregate view.
    mutating func resolved(_ key: InstanceKey, address: DiscoveredAddress, hostName: String,
                           txt: DiscoveryTXTRecord) -> Change {
        sequence += 1
        resolutions[key] = Resolution(address: address, hostName: hostName, txt: txt, sequence: sequence)
        return aggregate(name: key.name) ?? .removed(instanceName: key.name)
    }

    /// Forgets an instance; returns the service's new view, `.removed` when it was the last
    /// instance with that name, or nil when the instance had never resolved.
    mutating func removed(_ key: InstanceKey) -> Change? {
        guard resolutions.removeValue(forKey: key) != nil else { return nil }
        return aggregate(name: key.name) ?? .removed(instanceName: key.name)
    }

    /// Forgets everything (Avahi went away).
    mutating func removeAll() {
        resolutions.removeAll()
    }

    /// Names with at least one resolved instance.
    var names: Set<String> { Set(resolutions.keys.map(\.name)) }

    /// The current aggregate view of `name`, if any instance of it resolved.
    func service(named name: String) -> DiscoveredService? {
        guard case .updated(let service)? = aggregate(name: name) else { return nil }
        return service
    }

    private func aggregate(name: String) -> Change? {
        let mine = resolutions.filter { $0.key.name == name }.map(\.value)
        guard let newest = mine.max(by: { $0.sequence < $1.sequence }) else { return nil }
        let addresses = Array(Set(mine.map(\.address))).sorted()
        return .updated(DiscoveredService(
            instanceName: name, source: .mdns,
            protocolVersion: newest.txt.protocolVersion,
            deviceIDHint: newest.txt.deviceIDHint,
            pairingHint: newest.txt.pairingHint,
            hostName: newest.hostName,
            addresses: addresses))
    }
}
