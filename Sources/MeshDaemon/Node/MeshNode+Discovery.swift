import Logging
import MeshCrypto
import MeshDiscovery
import MeshCore
import NIOCore

/// Discovery wired into the node: runs the backend, feeds its events to `DiscoveryTracker`
/// (which decides) and carries out what it returns. Discovery never decides trust: every
/// address still has to pass the channel handshake with the paired key.
extension MeshNode: NodeDiscoveryHost {
    /// Discovery as `meshd` runs it: Avahi merged with the static peers (none over mDNS when
    /// `mdns` is off or the daemon listens on a loopback address).
    public static func defaultDiscovery(for configuration: DaemonConfiguration, logger: Logger) -> any PeerDiscovery {
        NodeDiscoveryDefaults.discovery(for: configuration, logger: logger)
    }

    /// What discovery has found.
    var discovered: DiscoveredPeerTable { discoveryTracker.table }

    /// Runs discovery until the node stops (see `NodeDiscoveryService`).
    nonisolated func runDiscovery() async {
        guard let discovery else { return }
        await NodeDiscoveryService(discovery: discovery, node: self, loop: loop, logger: logger).run()
    }

    /// `maintainDiscovery` from the node's loop (the maintenance timer).
    nonisolated func maintainDiscoveryOnLoop() -> Bool { onLoop { $0.maintainDiscovery() } }

    /// Discovery started with `advertisement` published; `updates` takes the next ones.
    func discoveryStarted(advertising advertisement: DiscoveryAdvertisement?,
                          updates: AsyncStream<DiscoveryAdvertisement?>.Continuation) {
        discoveryTracker.started(advertising: advertisement)
        _ = discoveryTracker.interfacesRead(LocalInterfaces.current())
        advertisementUpdates = updates
        matchPairedDevices()
        refreshAdvertisement()
    }

    /// Discovery stopped: no more updates.
    func discoveryEnded() {
        advertisementUpdates?.finish()
        advertisementUpdates = nil
    }

    /// One maintenance pass (the loop timer); false once the node stops.
    func maintainDiscovery() -> Bool {
        guard phase == .running else { return false }
        refreshAdvertisement()
        matchPairedDevices()
        if let difference = discoveryTracker.interfacesRead(LocalInterfaces.current()), let now = discoveryTracker.interfaces {
            logger.info("local addresses changed", metadata: [
                "appeared": "\(difference.appeared.sorted().map(\.description).joined(separator: " "))",
                "vanished": "\(difference.vanished.sorted().map(\.description).joined(separator: " "))",
            ])
            carryOut(discoveryTracker.localAddressesChanged(difference, now: now, peers: discoveryPeers()))
        }
        return true
    }

    /// Sends the advertisement the node wants now to the backend, unless it is there already
    /// or an update is under way. Called when the live code changes and by the maintenance pass.
    func refreshAdvertisement() {
        guard let updates = advertisementUpdates, case .some(let next) = discoveryTracker.advertise(wantedAdvertisement()) else { return }
        updates.yield(next)
    }

    /// An advertisement update ended; a successful one may be followed by the next at once.
    func advertisementUpdated(_ advertisement: DiscoveryAdvertisement?, succeeded: Bool) {
        discoveryTracker.advertisementUpdated(advertisement, succeeded: succeeded)
        if succeeded { refreshAdvertisement() }
    }

    /// What this daemon should advertise now (the live code's public hint while it accepts
    /// attempts). Nil before the port is bound.
    func wantedAdvertisement() -> DiscoveryAdvertisement? {
        NodeDiscoveryDefaults.advertisement(name: configuration.name, port: boundListenAddress?.port,
                                            deviceID: identity.deviceID, pairingHint: invitations.advertisedHint(at: wallDate()))
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
        carryOut(discoveryTracker.apply(event, peers: discoveryPeers()))
        for search in inviterSearches.satisfied(by: discovered) { finish(search) }
    }

    /// Re-matches discovered services when devices were paired or unpaired.
    func matchPairedDevices() {
        guard discovered.paired != Set(channels.peers.keys) else { return }
        carryOut(discoveryTracker.pairedDevicesChanged(discoveryPeers()))
    }

    /// The paired devices as `DiscoveryTracker` sees them.
    func discoveryPeers() -> [DiscoveryTracker.Peer] {
        channels.peers.map { id, runtime in
            let connection = runtime.connection?.channel
            return DiscoveryTracker.Peer(id: id, hasChannel: runtime.channel != nil,
                                         remoteHost: connection?.remoteAddress?.ipAddress.map(DiscoveredPeerTable.unscoped),
                                         localHost: connection?.localAddress?.ipAddress.map(DiscoveredPeerTable.unscoped))
        }
    }

    /// Carries out what the tracker decided, in order.
    func carryOut(_ actions: [DiscoveryTracker.Action]) {
        for action in actions {
            switch action {
            case .addressesSeen(let peer, let addresses):
                logger.debug("mDNS addresses of a paired device", metadata: [
                    "peer.id": "\(peer.short)", "addresses": "\(addresses.map(\.description).joined(separator: " "))",
                ])
            case .dialNow(let peer):
                kickDial(peer)
            case .probe(let peer, let addresses):
                logger.info("paired device advertises another address; trying it next to the live channel", metadata: [
                    "peer.id": "\(peer.short)", "addresses": "\(addresses.map(\.description).joined(separator: " "))",
                ])
                jobQueue.yield(.probeAddresses(peer: peer, addresses: addresses))
            case .dropChannel(let peer, let local):
                dropChannel(peer, reason: "this device's address \(local) went away", redial: false)
            }
        }
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
        guard discoveryTracker.probeEnded(peer, addresses: addresses, switched: switched) else { return }
        logger.info("no authenticated answer at the advertised address; the channel stays as it is",
                    metadata: ["peer.id": "\(peer.short)", "addresses": "\(addresses.map(\.description).joined(separator: " "))"])
    }

    /// Tries `peer` now instead of after its backoff (a new address, a link that came back).
    /// While an attempt runs, its backoff is reset so a retry follows quickly, and mDNS
    /// addresses that attempt is not trying are dialled next to it (it may be stuck for
    /// seconds on a stale address that does not answer).
    func kickDial(_ peer: DeviceID) {
        guard phase == .running, let slot = channels.peers.index(forKey: peer) else { return }
        switch channels.peers.values[slot].dial.kick(channelActive: channels.peers.values[slot].channel != nil) {
        case .none:
            return
        case .dialBesideAttempt:
            let fresh = discoveryTracker.addressesBesideDial(of: peer)
            if !fresh.isEmpty { jobQueue.yield(.dialAddresses(peer: peer, addresses: fresh)) }
        case .dialNow:
            dialTimers.removeValue(forKey: peer)?.cancel()
            jobQueue.yield(.dial(peer: peer))
        }
    }

    /// Addresses to dial `runtime`'s device at, best first (see `DiscoveryTracker`).
    func dialCandidates(_ runtime: PeerRuntime) -> [DaemonConfiguration.Endpoint] {
        discoveryTracker.dialCandidates(runtime.record, staticPeers: configuration.staticPeers)
    }

    /// A dial at `endpoint` activated the channel: a configured static address that reached
    /// this device is remembered as its address, so `meshctl peers` shows where it came from.
    /// A probe that replaced a live channel counts as a move.
    func dialSucceeded(_ peer: DeviceID, at endpoint: DaemonConfiguration.Endpoint, replacedLiveChannel: Bool = false) {
        if replacedLiveChannel {
            discoveryTracker.moved()
            logger.info("paired device moved; the channel now runs over its new address",
                        metadata: ["peer.id": "\(peer.short)", "address": "\(endpoint)"])
        }
        guard discoveryTracker.isStatic(endpoint, staticPeers: configuration.staticPeers),
              channels.peers[peer]?.record.learn(address: endpoint.description, source: .static) == true else { return }
        persistPeers()
    }
}
