import Logging
import MeshCrypto
import MeshDiscovery
import MeshCore
import NIOCore

/// Where the paired devices and the inviters are: feeds discovery's events to
/// `DiscoveryTracker` (which decides) and carries out what it returns, keeps the advertisement
/// current, and ranks the addresses a dial tries. Discovery never decides trust: every address
/// still has to pass the channel handshake with the paired key.
///
/// Owns the tracker and the running discovery's advertisement updates; runs on the node's
/// executor (every method that needs the node takes it `isolated`). `NodeDiscoveryService`
/// runs the backend and reaches this through the node (`NodeDiscoveryHost`).
final class PeerFinder {
    /// What discovery has found and decides.
    var tracker = DiscoveryTracker()
    /// Advertisement updates for the running discovery (nil while it does not run).
    var advertisementUpdates: AsyncStream<DiscoveryAdvertisement?>.Continuation?

    /// What discovery has found.
    var discovered: DiscoveredPeerTable { tracker.table }

    /// Discovery started with `advertisement` published; `updates` takes the next ones.
    func started(_ node: isolated MeshNode, advertising advertisement: DiscoveryAdvertisement?,
                 updates: AsyncStream<DiscoveryAdvertisement?>.Continuation) {
        tracker.started(advertising: advertisement)
        _ = tracker.interfacesRead(LocalInterfaces.current())
        advertisementUpdates = updates
        matchPairedDevices(node)
        refreshAdvertisement(node)
    }

    /// Discovery stopped: no more updates.
    func ended() {
        advertisementUpdates?.finish()
        advertisementUpdates = nil
    }

    /// One maintenance pass (the loop timer); false once the node stops.
    func maintain(_ node: isolated MeshNode) -> Bool {
        guard node.phase == .running else { return false }
        refreshAdvertisement(node)
        matchPairedDevices(node)
        if let difference = tracker.interfacesRead(LocalInterfaces.current()), let now = tracker.interfaces {
            node.logger.info("local addresses changed", metadata: [
                "appeared": "\(difference.appeared.sorted().map(\.description).joined(separator: " "))",
                "vanished": "\(difference.vanished.sorted().map(\.description).joined(separator: " "))",
            ])
            carryOut(node, tracker.localAddressesChanged(difference, now: now, peers: peers(node)))
        }
        return true
    }

    /// Sends the advertisement the node wants now to the backend, unless it is there already
    /// or an update is under way. Called when the live code changes and by the maintenance pass.
    func refreshAdvertisement(_ node: isolated MeshNode) {
        guard let updates = advertisementUpdates, case .some(let next) = tracker.advertise(wantedAdvertisement(node)) else { return }
        updates.yield(next)
    }

    /// An advertisement update ended; a successful one may be followed by the next at once.
    func advertisementUpdated(_ node: isolated MeshNode, _ advertisement: DiscoveryAdvertisement?, succeeded: Bool) {
        tracker.advertisementUpdated(advertisement, succeeded: succeeded)
        if succeeded { refreshAdvertisement(node) }
    }

    /// What this daemon should advertise now (the live code's public hint while it accepts
    /// attempts). Nil before the port is bound.
    func wantedAdvertisement(_ node: isolated MeshNode) -> DiscoveryAdvertisement? {
        NodeDiscoveryDefaults.advertisement(name: node.configuration.name, port: node.boundListenAddress?.port,
                                            deviceID: node.identity.deviceID,
                                            pairingHint: node.pairing.invitations.advertisedHint(at: node.wallDate()))
    }

    /// Applies one discovery event.
    func apply(_ node: isolated MeshNode, _ event: DiscoveryEvent) {
        switch event {
        case .published(let name):
            node.logger.debug("advertising on mDNS", metadata: ["service.name": "\(name)"])
        case .unavailable(let reason):
            node.logger.debug("mDNS unavailable; using known and static addresses", metadata: ["reason": "\(reason.code)"])
        default:
            break
        }
        carryOut(node, tracker.apply(event, peers: peers(node)))
        node.pairing.discoveryChanged(discovered)
    }

    /// Re-matches discovered services when devices were paired or unpaired.
    func matchPairedDevices(_ node: isolated MeshNode) {
        guard discovered.paired != Set(node.channels.peers.keys) else { return }
        carryOut(node, tracker.pairedDevicesChanged(peers(node)))
    }

    /// The paired devices as `DiscoveryTracker` sees them.
    func peers(_ node: isolated MeshNode) -> [DiscoveryTracker.Peer] {
        node.channels.peers.map { id, runtime in
            let path = runtime.connection?.path
            return DiscoveryTracker.Peer(id: id, hasChannel: runtime.channel != nil,
                                         remoteHost: path?.remote.directEndpoint.map { DiscoveredPeerTable.unscoped($0.host) },
                                         localHost: path?.local?.directEndpoint.map { DiscoveredPeerTable.unscoped($0.host) })
        }
    }

    /// Carries out what the tracker decided, in order.
    func carryOut(_ node: isolated MeshNode, _ actions: [DiscoveryTracker.Action]) {
        for action in actions {
            switch action {
            case .addressesSeen(let peer, let addresses):
                node.logger.debug("mDNS addresses of a paired device", metadata: [
                    "peer.id": "\(peer.short)", "addresses": "\(addresses.map(\.description).joined(separator: " "))",
                ])
            case .dialNow(let peer):
                node.dialer.kickDial(node, peer)
            case .probe(let peer, let addresses):
                node.logger.info("paired device advertises another address; trying it next to the live channel", metadata: [
                    "peer.id": "\(peer.short)", "addresses": "\(addresses.map(\.description).joined(separator: " "))",
                ])
                node.jobQueue.yield(.probeAddresses(peer: peer, addresses: addresses))
            case .dropChannel(let peer, let local):
                node.dropChannel(peer, reason: "this device's address \(local) went away", redial: false)
            }
        }
    }

    /// A probe ended: its addresses may be probed again on the next change.
    func probeEnded(_ node: isolated MeshNode, _ peer: DeviceID, addresses: [DaemonConfiguration.Endpoint], switched: Bool) {
        guard tracker.probeEnded(peer, addresses: addresses, switched: switched) else { return }
        node.logger.info("no authenticated answer at the advertised address; the channel stays as it is",
                         metadata: ["peer.id": "\(peer.short)", "addresses": "\(addresses.map(\.description).joined(separator: " "))"])
    }

    /// Addresses to dial `runtime`'s device at, best first (see `DiscoveryTracker`).
    func dialCandidates(_ node: isolated MeshNode, _ runtime: PeerRuntime) -> [DaemonConfiguration.Endpoint] {
        tracker.dialCandidates(runtime.record, staticPeers: node.configuration.staticPeers)
    }

    /// A dial at `endpoint` activated the channel: a configured static address that reached
    /// this device is remembered as its address, so `meshctl peers` shows where it came from.
    /// A probe that replaced a live channel counts as a move.
    func dialSucceeded(_ node: isolated MeshNode, _ peer: DeviceID, at endpoint: DaemonConfiguration.Endpoint,
                       replacedLiveChannel: Bool = false) {
        if replacedLiveChannel {
            tracker.moved()
            node.logger.info("paired device moved; the channel now runs over its new address",
                             metadata: ["peer.id": "\(peer.short)", "address": "\(endpoint)"])
        }
        guard tracker.isStatic(endpoint, staticPeers: node.configuration.staticPeers),
              node.channels.peers[peer]?.record.learn(address: endpoint.description, source: .static) == true else { return }
        node.persistPeers()
    }
}
