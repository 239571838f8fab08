import MeshCrypto
import MeshCore
import NIOCore

extension MeshNode {
    /// This daemon's identity, listen address, uptime and counters.
    public func status() async -> DaemonStatus {
        let uptime = Double(clock.monotonicNanoseconds() &- startedAt) / 1e9
        var counters = self.counters
        counters.outboundQueuedBytes = UInt64(outbound.totalCharge)
        counters.outboundPeakBytes = UInt64(outbound.peakCharge)
        var values = NodeReports.statusCounters(counters, paired: channels.peers.count, active: channels.peers.values.filter { $0.channel != nil }.count,
                                                unauthenticated: gate.table.unauthenticated.count,
                                                discovery: finder.tracker.counters(enabled: discovery != nil))
        if let mailbox = relay?.mailbox { values.merge(mailbox.counterValues()) { current, _ in current } }
        return DaemonStatus(deviceID: identity.deviceID.description, name: configuration.name,
                            listen: (boundListenAddress ?? configuration.listen).description,
                            socket: configuration.socketPath, uptimeSeconds: uptime, counters: values,
                            relay: relay?.status(clock: clock), deviceSet: deviceSet.status)
    }

    /// Every paired device with channel state, addresses, RTT, clock offset and lease.
    public func peers() async -> [PeerStatus] {
        let now = clock.monotonicNanoseconds()
        return channels.peers.values.sorted { $0.record.name < $1.record.name }.map { runtime in
            var status = NodeReports.peerStatus(runtime, addresses: finder.tracker.displayedAddresses(runtime.record), now: now, clock: clock,
                                                lastClosing: outbound.lastClosing[runtime.record.deviceID])
            (status.joined, status.addedBy) = deviceSet.joined(runtime.record)
            return status
        }
    }

    /// Measures `count` round trips (1…10 000) over each path to a peer with an active channel.
    public func ping(deviceID: String, count: Int) async throws -> PingReport {
        try await prober.ping(self, deviceID: deviceID, count: count)
    }

    /// Finds a paired device by full ID, short ID or unique prefix (case and dashes ignored).
    func resolvePeer(_ text: String) throws -> DeviceID { try NodeReports.resolvePeer(text, among: channels.peers.keys) }

    /// Removes a paired device: tells it over a live channel, closes the channel, forgets it.
    public func unpair(deviceID: String) async throws {
        let peer = try resolvePeer(deviceID)
        // A member of the device set is removed from the whole set.
        if await deviceSet.remove(self, peer) { return }
        if let sent = sendStream(.unpaired, to: peer) {
            _ = try? await sent.get()
        }
        guard channels.peers[peer] != nil else { return }    // may have been removed while waiting
        removePeer(peer, reason: "unpaired on this device")
    }

    /// Forgets `peer` everywhere: store, channel, indices.
    func removePeer(_ peer: DeviceID, reason: String, bySet: Bool = false) {
        dropChannel(peer, reason: reason, redial: false)
        channels.remove(peer)
        outbound.forget(peer)
        persistPeers()
        logger.info("device unpaired", metadata: ["peer.id": "\(peer.short)"])
        handOff.channelEvent(bySet ? .memberRemoved(peer) : .unpaired(peer))
    }

    /// Saves the paired devices; a failure is logged (the in-memory state stays authoritative
    /// for this run).
    func persistPeers() {
        do {
            try store.save(channels.records)
        } catch {
            logger.error("could not save the paired-device store", metadata: ["error": "\(error)"])
        }
    }
}
