import Logging
import MeshCrypto
import MeshDiscovery
import MeshCore
import NIOCore

/// Discovery wired into the node: publish this daemon, feed discovered addresses of paired
/// devices to the dialer, notice moves (theirs over mDNS, ours from the interfaces) and
/// re-handshake at once. Discovery never decides trust: every address still has to pass the
/// channel handshake with the paired key.
extension MeshNode {
    /// Discovery as `meshd` runs it: Avahi merged with the static peers.
    ///
    /// Avahi is left out when `mdns` is off, and when the daemon listens on a loopback address
    /// (`127.0.0.0/8`, `::1`, `localhost`): no other device could reach it there, so announcing
    /// it on the network would only mislead (and test daemons stay off the LAN).
    public static func defaultDiscovery(for configuration: DaemonConfiguration, logger: Logger) -> any PeerDiscovery {
        let staticPeers = StaticPeerDiscovery(
            peers: configuration.staticPeers.map { StaticPeer(host: $0.host, port: UInt16(clamping: $0.port)) },
            logger: logger)
        guard configuration.mdns else { return staticPeers }
        guard !isLoopback(configuration.listen.host) else {
            logger.info("mDNS off: the daemon listens on a loopback address", metadata: ["listen": "\(configuration.listen)"])
            return staticPeers
        }
        return MergedPeerDiscovery([AvahiPeerDiscovery(logger: logger), staticPeers])
    }

    /// True for `127.0.0.0/8`, `::1` and `localhost`.
    static func isLoopback(_ host: String) -> Bool {
        let lowered = host.lowercased()
        return lowered == "localhost" || lowered == "::1" || lowered == "0:0:0:0:0:0:0:1" || lowered.hasPrefix("127.")
    }

    /// How often the node re-checks its advertisement, paired set and local interfaces.
    static let discoveryMaintenanceInterval: UInt64 = 250_000_000

    /// Runs discovery until the node stops (cancellation). Never throws: a discovery that
    /// cannot start is logged and the node runs on with the addresses it has.
    nonisolated func runDiscovery() async {
        guard let discovery else { return }
        let events = discovery.events()
        let advertisement = await wantedAdvertisement()
        do {
            try await discovery.start(advertising: advertisement)
        } catch {
            logger.error("discovery could not start; only known and static addresses are used", metadata: ["error": "\(error)"])
            return
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in events { await self.applyDiscovery(event) }
            }
            group.addTask { await self.maintainDiscovery(discovery, advertised: advertisement) }
            await group.next()
            group.cancelAll()
        }
    }

    /// Every quarter second: keep the advertisement (pairing hint) current, match newly
    /// paired devices, and react to changes of this machine's addresses.
    nonisolated func maintainDiscovery(_ discovery: any PeerDiscovery, advertised: DiscoveryAdvertisement?) async {
        var advertised = advertised
        var interfaces = LocalInterfaces.current()
        while !Task.isCancelled {
            do { try await Task.sleep(nanoseconds: Self.discoveryMaintenanceInterval) } catch { return }
            let wanted = await wantedAdvertisement()
            if wanted != advertised {
                do {
                    try await discovery.updateAdvertisement(wanted)
                    advertised = wanted
                } catch {
                    logger.warning("could not update the mDNS advertisement", metadata: ["error": "\(error)"])
                }
            }
            await matchPairedDevices()
            if let now = LocalInterfaces.current() {
                if let before = interfaces {
                    let difference = now.difference(from: before)
                    if !difference.isEmpty { await localAddressesChanged(difference, now: now) }
                }
                interfaces = now
            }
        }
    }

    /// What this daemon should advertise now: name, bound port, device-ID hint, and the live
    /// code's public hint while a code accepts attempts. Nil before the port is bound.
    func wantedAdvertisement() -> DiscoveryAdvertisement? {
        guard let port = boundListenAddress?.port, let udpPort = UInt16(exactly: port), udpPort != 0 else { return nil }
        var pairingHint: String?
        if let live = invitations.live, live.isUsable(at: wallDate()) { pairingHint = live.code.publicHint }
        return try? DiscoveryAdvertisement(instanceName: Self.instanceName(configuration.name), port: udpPort,
                                           deviceIDHint: DiscoveryAdvertisement.deviceIDHint(for: identity.deviceID.description),
                                           pairingHint: pairingHint)
    }

    /// The configured name cut to DNS-SD's 63 bytes.
    static func instanceName(_ name: String) -> String {
        var out = ""
        for character in name where out.utf8.count + character.utf8.count <= 63 { out.append(character) }
        return out.isEmpty ? "sessionmesh" : out
    }

    /// Applies one discovery event.
    func applyDiscovery(_ event: DiscoveryEvent) {
        switch event {
        case .published(let name):
            logger.debug("advertising on mDNS", metadata: ["service.name": "\(name)"])
        case .unavailable(let reason):
            logger.debug("mDNS unavailable; using known and static addresses", metadata: ["reason": "\(reason.code)"])
        default:
            break
        }
        let changes = discovered.apply(event)
        for change in changes { discoveredAddressesChanged(change) }
        for search in inviterSearches.satisfied(by: discovered) { finish(search) }
        if case .resolved(let service) = event, service.source == .staticConfiguration {
            for (peer, runtime) in peers where runtime.channel == nil { kickDial(peer) }
        }
    }

    /// Re-matches discovered services when devices were paired or unpaired.
    func matchPairedDevices() {
        for change in discovered.setPaired(Set(peers.keys)) { discoveredAddressesChanged(change) }
    }

    /// A paired device's mDNS addresses changed: dial it if it has no channel. If its channel
    /// runs over an address the device no longer advertises, it may have moved: handshake with
    /// it at the advertised addresses next to the live channel, which is replaced only by a
    /// connection that authenticates. mDNS is unauthenticated: it never closes a channel.
    func discoveredAddressesChanged(_ change: DiscoveredPeerTable.Change) {
        guard let runtime = peers[change.peer], !change.current.isEmpty else { return }
        logger.debug("mDNS addresses of a paired device", metadata: [
            "peer.id": "\(change.peer.short)", "addresses": "\(change.current.map(\.description).joined(separator: " "))",
        ])
        guard runtime.channel != nil else {
            kickDial(change.peer)
            return
        }
        guard let remote = runtime.connection?.channel.remoteAddress?.ipAddress.map(DiscoveredPeerTable.unscoped),
              change.previousHosts.contains(remote), !change.currentHosts.contains(remote) else { return }
        let probing = discovered.probedAddresses[change.peer, default: []]
        let fresh = change.current.filter { !probing.contains($0.description) }
        guard !fresh.isEmpty else { return }
        logger.info("paired device advertises another address; trying it next to the live channel", metadata: [
            "peer.id": "\(change.peer.short)", "addresses": "\(fresh.map(\.description).joined(separator: " "))",
        ])
        discovered.probedAddresses[change.peer, default: []].formUnion(fresh.map(\.description))
        discovered.probes += 1
        jobQueue.yield(.probeAddresses(peer: change.peer, addresses: fresh))
    }

    /// Handshakes with `peer` at `addresses` in turn, next to its live channel, until one
    /// authenticates (the channel switches to it and is then served here) or all failed.
    nonisolated func probe(_ peer: DeviceID, at addresses: [DaemonConfiguration.Endpoint]) async {
        var switched = false
        for address in addresses where !switched {
            switch await dial(peer, at: address, replacingLiveChannel: true) {
            case .ranAndClosed: switched = true
            case .notNeeded, .failed: continue
            }
        }
        await probeEnded(peer, addresses: addresses, switched: switched)
    }

    /// A probe ended: its addresses may be probed again on the next change.
    func probeEnded(_ peer: DeviceID, addresses: [DaemonConfiguration.Endpoint], switched: Bool) {
        discovered.probedAddresses[peer]?.subtract(addresses.map(\.description))
        if discovered.probedAddresses[peer]?.isEmpty == true { discovered.probedAddresses.removeValue(forKey: peer) }
        guard !switched else { return }
        discovered.probesFailed += 1
        logger.info("no authenticated answer at the advertised address; the channel stays as it is",
                    metadata: ["peer.id": "\(peer.short)", "addresses": "\(addresses.map(\.description).joined(separator: " "))"])
    }

    /// This machine's addresses changed: channels bound to an address that is gone are dead
    /// (their TCP connection cannot be used any more), so re-handshake them now; peers without
    /// a channel are tried again at once instead of waiting out their backoff.
    func localAddressesChanged(_ difference: LocalInterfaces.Difference, now: LocalInterfaces) {
        let gone = difference.vanishedHosts(stillPresent: now)
        logger.info("local addresses changed", metadata: [
            "appeared": "\(difference.appeared.sorted().map(\.description).joined(separator: " "))",
            "vanished": "\(difference.vanished.sorted().map(\.description).joined(separator: " "))",
        ])
        for (peer, runtime) in peers {
            if runtime.channel == nil {
                kickDial(peer)
                continue
            }
            guard let local = runtime.connection?.channel.localAddress?.ipAddress.map(DiscoveredPeerTable.unscoped),
                  gone.contains(local) else { continue }
            discovered.moves += 1
            dropChannel(peer, reason: "this device's address \(local) went away", redial: false)
            kickDial(peer)
        }
    }

    /// Tries `peer` now instead of after its backoff (a new address, a link that came back).
    /// While an attempt runs, its backoff is reset so a retry follows quickly, and mDNS
    /// addresses that attempt is not trying are dialled next to it (it may be stuck for
    /// seconds on a stale address that does not answer).
    func kickDial(_ peer: DeviceID) {
        guard phase == .running, let slot = peers.index(forKey: peer) else { return }
        let active = peers.values[slot].channel != nil
        switch peers.values[slot].dial.kick(channelActive: active) {
        case .none:
            return
        case .dialBesideAttempt:
            let tried = discovered.dialedAddresses[peer, default: []]
            let fresh = (discovered.mdnsEndpoints[peer] ?? []).filter { !tried.contains($0.description) }
            guard !fresh.isEmpty else { return }
            discovered.dialedAddresses[peer, default: []].formUnion(fresh.map(\.description))
            jobQueue.yield(.dialAddresses(peer: peer, addresses: fresh))
        case .dialNow:
            dialTimers.removeValue(forKey: peer)?.cancel()
            jobQueue.yield(.dial(peer: peer))
        }
    }

    /// Addresses to dial `runtime`'s device at, best first: what mDNS says now, then what
    /// pairing and the configuration gave, then addresses it was seen at (newest first).
    func dialCandidates(_ runtime: PeerRuntime) -> [DaemonConfiguration.Endpoint] {
        var seen = Set<String>()
        var out: [DaemonConfiguration.Endpoint] = []
        func add(_ endpoint: DaemonConfiguration.Endpoint) {
            if seen.insert(endpoint.description).inserted { out.append(endpoint) }
        }
        for endpoint in discovered.mdnsEndpoints[runtime.record.deviceID] ?? [] { add(endpoint) }
        for address in runtime.record.addresses where address.source != .observed {
            if let endpoint = EndpointParser.parse(address.address) { add(endpoint) }
        }
        for endpoint in discovered.staticEndpoints + configuration.staticPeers { add(endpoint) }
        for address in runtime.record.addresses.reversed() where address.source == .observed {
            if let endpoint = EndpointParser.parse(address.address) { add(endpoint) }
        }
        discovered.dialedAddresses[runtime.record.deviceID] = seen
        return out
    }

    /// A dial at `endpoint` activated the channel: a configured static address that reached
    /// this device is remembered as its address, so `meshctl peers` shows where it came from.
    /// A probe that replaced a live channel counts as a move.
    func dialSucceeded(_ peer: DeviceID, at endpoint: DaemonConfiguration.Endpoint, replacedLiveChannel: Bool = false) {
        if replacedLiveChannel {
            discovered.moves += 1
            logger.info("paired device moved; the channel now runs over its new address",
                        metadata: ["peer.id": "\(peer.short)", "address": "\(endpoint)"])
        }
        let statics = Set((discovered.staticEndpoints + configuration.staticPeers).map(\.description))
        guard statics.contains(endpoint.description),
              peers[peer]?.record.learn(address: endpoint.description, source: .static) == true else { return }
        persistPeers()
    }

    /// The addresses `meshctl peers` shows: mDNS ones (live, not stored) first, then stored.
    func displayedAddresses(_ runtime: PeerRuntime) -> [PeerAddress] {
        var out = (discovered.mdnsEndpoints[runtime.record.deviceID] ?? []).map { PeerAddress(address: $0.description, source: .mdns) }
        let shown = Set(out.map(\.address))
        out += runtime.record.addresses.filter { !shown.contains($0.address) }
        return out
    }

    /// Discovery figures for `meshctl status`.
    func discoveryCounters() -> [String: UInt64] {
        guard discovery != nil else { return ["discovery.enabled": 0] }
        return [
            "discovery.enabled": 1,
            "discovery.mdns_available": discovered.mdnsAvailable == true ? 1 : 0,
            "discovery.mdns_outages_total": discovered.outages,
            "discovery.mdns_published": discovered.publishedName == nil ? 0 : 1,
            "discovery.mdns_services": UInt64(discovered.mdnsServices.count),
            "discovery.paired_found": UInt64(discovered.mdnsEndpoints.count),
            "discovery.moves_total": discovered.moves,
            "discovery.move_probes_total": discovered.probes,
            "discovery.move_probes_failed_total": discovered.probesFailed,
        ]
    }
}
