import MeshCore
import MeshCrypto
import MeshDiscovery

/// What discovery changes for the node's paired devices, decided without I/O: the node feeds
/// it discovery events, this machine's interfaces and the state of each paired device's
/// channel, and carries out the ``Action``s it returns (log, dial, probe, drop a channel).
///
/// The rules it keeps (see docs/ARCHITECTURE.md, "Discovery"):
/// - a paired device without a channel is dialled at once when discovery shows an address;
/// - a device whose channel runs over an address it no longer advertises is *probed*: the node
///   handshakes with it at the new addresses next to the live channel, which switches only to a
///   connection that authenticates (mDNS is unauthenticated and never closes a channel);
/// - an address of this machine that went away kills the channels bound to it: they are
///   dropped and dialled again;
/// - the advertisement sent to the backend follows what the node wants advertised, one update
///   at a time, and a failed update is tried again on the next check.
struct DiscoveryTracker {
    typealias Endpoint = DaemonConfiguration.Endpoint

    /// What the node does after an input, in order.
    enum Action: Equatable {
        /// Discovery shows these addresses for the paired device (the node logs them).
        case addressesSeen(DeviceID, [Endpoint])
        /// Try the device now instead of after its backoff (`Dialer.kickDial`).
        case dialNow(DeviceID)
        /// Handshake with the device at these addresses next to its live channel.
        case probe(DeviceID, [Endpoint])
        /// This machine's address `local`, which the device's channel is bound to, went away:
        /// drop the channel (a `dialNow` follows).
        case dropChannel(DeviceID, local: String)
    }

    /// A paired device as the decisions need it.
    struct Peer: Equatable {
        var id: DeviceID
        /// Whether it has a channel now.
        var hasChannel: Bool
        /// Remote and local host (IP literal, unscoped) of the TCP connection carrying the
        /// channel, when it has one.
        var remoteHost: String?
        var localHost: String?
    }

    /// Services, endpoints and figures learned from discovery.
    private(set) var table = DiscoveredPeerTable()
    /// This machine's interfaces as last read (nil: not read yet, or unreadable).
    private(set) var interfaces: LocalInterfaces?
    /// What the backend advertises now (nil: nothing yet).
    private(set) var advertised: DiscoveryAdvertisement?
    /// An advertisement update is under way.
    private(set) var updatingAdvertisement = false

    /// Applies one discovery event; `peers` are the paired devices in the node's order.
    mutating func apply(_ event: DiscoveryEvent, peers: [Peer]) -> [Action] {
        var actions: [Action] = []
        for change in table.apply(event) { actions += changed(change, peers: peers) }
        if case .resolved(let service) = event, service.source == .staticConfiguration {
            // A static peer (re)appeared: every device without a channel may be behind it.
            for peer in peers where !peer.hasChannel { actions.append(.dialNow(peer.id)) }
        }
        return actions
    }

    /// The set of paired devices may have changed: re-matches discovered services.
    mutating func pairedDevicesChanged(_ peers: [Peer]) -> [Action] {
        var actions: [Action] = []
        for change in table.setPaired(Set(peers.map(\.id))) { actions += changed(change, peers: peers) }
        return actions
    }

    /// A paired device's mDNS addresses changed.
    private mutating func changed(_ change: DiscoveredPeerTable.Change, peers: [Peer]) -> [Action] {
        guard let peer = peers.first(where: { $0.id == change.peer }), !change.current.isEmpty else { return [] }
        var actions = [Action.addressesSeen(peer.id, change.current)]
        guard peer.hasChannel else {
            actions.append(.dialNow(peer.id))
            return actions
        }
        guard let remote = peer.remoteHost, change.previousHosts.contains(remote),
              !change.currentHosts.contains(remote) else { return actions }
        let probing = table.probedAddresses[peer.id, default: []]
        let fresh = change.current.filter { !probing.contains($0.description) }
        guard !fresh.isEmpty else { return actions }
        table.probedAddresses[peer.id, default: []].formUnion(fresh.map(\.description))
        table.probes += 1
        actions.append(.probe(peer.id, fresh))
        return actions
    }

    /// A probe of `peer` at `addresses` ended (`switched`: the channel moved to one of them):
    /// they may be probed again. True when the probe failed (the channel stayed).
    mutating func probeEnded(_ peer: DeviceID, addresses: [Endpoint], switched: Bool) -> Bool {
        table.probedAddresses[peer]?.subtract(addresses.map(\.description))
        if table.probedAddresses[peer]?.isEmpty == true { table.probedAddresses.removeValue(forKey: peer) }
        guard !switched else { return false }
        table.probesFailed += 1
        return true
    }

    /// This machine's interfaces were read (nil: unreadable, ignored): the difference to act
    /// on (see ``localAddressesChanged(_:now:peers:)``), or nil when nothing changed.
    mutating func interfacesRead(_ now: LocalInterfaces?) -> LocalInterfaces.Difference? {
        guard let now else { return nil }
        defer { interfaces = now }
        guard let before = interfaces else { return nil }
        let difference = now.difference(from: before)
        return difference.isEmpty ? nil : difference
    }

    /// This machine's addresses changed: channels bound to an address that is gone are dead
    /// (their TCP connection cannot be used any more), so they are dropped and dialled again;
    /// devices without a channel are dialled at once instead of after their backoff.
    mutating func localAddressesChanged(_ difference: LocalInterfaces.Difference, now: LocalInterfaces,
                                        peers: [Peer]) -> [Action] {
        let gone = difference.vanishedHosts(stillPresent: now)
        var actions: [Action] = []
        for peer in peers {
            guard peer.hasChannel else {
                actions.append(.dialNow(peer.id))
                continue
            }
            guard let local = peer.localHost, gone.contains(local) else { continue }
            table.moves += 1
            actions += [.dropChannel(peer.id, local: local), .dialNow(peer.id)]
        }
        return actions
    }

    /// The node wants `wanted` advertised: the advertisement to send to the backend now, or
    /// nil when it already advertises it or an update is under way (the node asks again when
    /// that update ends).
    mutating func advertise(_ wanted: DiscoveryAdvertisement?) -> DiscoveryAdvertisement?? {
        guard !updatingAdvertisement, wanted != advertised else { return nil }
        updatingAdvertisement = true
        return .some(wanted)
    }

    /// The update to `advertisement` ended; a failed one is sent again on the next check.
    mutating func advertisementUpdated(_ advertisement: DiscoveryAdvertisement?, succeeded: Bool) {
        updatingAdvertisement = false
        if succeeded { advertised = advertisement }
    }

    /// Discovery started with `advertisement` already published.
    mutating func started(advertising advertisement: DiscoveryAdvertisement?) {
        advertised = advertisement
    }

    /// A dial of `peer` is under way and its backoff was reset: the mDNS addresses it is not
    /// trying, to dial next to it (they are then counted as tried).
    mutating func addressesBesideDial(of peer: DeviceID) -> [Endpoint] {
        let tried = table.dialedAddresses[peer, default: []]
        let fresh = (table.mdnsEndpoints[peer] ?? []).filter { !tried.contains($0.description) }
        if !fresh.isEmpty { table.dialedAddresses[peer, default: []].formUnion(fresh.map(\.description)) }
        return fresh
    }

    /// Addresses to dial `record`'s device at, best first: what mDNS says now, then what
    /// pairing and the configuration gave, then static peers, then addresses it was seen at
    /// (newest first). They become the dial's tried addresses.
    mutating func dialCandidates(_ record: PairedPeer, staticPeers: [Endpoint]) -> [Endpoint] {
        var seen = Set<String>()
        var out: [Endpoint] = []
        func add(_ endpoint: Endpoint) {
            if seen.insert(endpoint.description).inserted { out.append(endpoint) }
        }
        for endpoint in table.mdnsEndpoints[record.deviceID] ?? [] { add(endpoint) }
        for address in record.addresses where address.source != .observed {
            if let endpoint = EndpointParser.parse(address.address) { add(endpoint) }
        }
        for endpoint in table.staticEndpoints + staticPeers { add(endpoint) }
        for address in record.addresses.reversed() where address.source == .observed {
            if let endpoint = EndpointParser.parse(address.address) { add(endpoint) }
        }
        table.dialedAddresses[record.deviceID] = seen
        return out
    }

    /// A probe replaced a live channel: the device moved.
    mutating func moved() { table.moves += 1 }

    /// Whether `endpoint` is a static address (discovered or configured).
    func isStatic(_ endpoint: Endpoint, staticPeers: [Endpoint]) -> Bool {
        (table.staticEndpoints + staticPeers).contains { $0.description == endpoint.description }
    }

    /// The addresses `meshctl peers` shows: mDNS ones (live, not stored) first, then stored.
    func displayedAddresses(_ record: PairedPeer) -> [PeerAddress] {
        var out = (table.mdnsEndpoints[record.deviceID] ?? []).map { PeerAddress(address: $0.description, source: .mdns) }
        let shown = Set(out.map(\.address))
        out += record.addresses.filter { !shown.contains($0.address) }
        return out
    }

    /// Discovery figures for `meshctl status` (`enabled` false: the node runs without one).
    func counters(enabled: Bool) -> [String: UInt64] {
        guard enabled else { return ["discovery.enabled": 0] }
        return [
            "discovery.enabled": 1,
            "discovery.mdns_available": table.mdnsAvailable == true ? 1 : 0,
            "discovery.mdns_outages_total": table.outages,
            "discovery.mdns_published": table.publishedName == nil ? 0 : 1,
            "discovery.mdns_services": UInt64(table.mdnsServices.count),
            "discovery.paired_found": UInt64(table.mdnsEndpoints.count),
            "discovery.moves_total": table.moves,
            "discovery.move_probes_total": table.probes,
            "discovery.move_probes_failed_total": table.probesFailed,
        ]
    }
}
