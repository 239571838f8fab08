import MeshCrypto
import MeshCore
import NIOCore

extension MeshNode {
    /// This daemon's identity, listen address, uptime and counters.
    public func status() async -> DaemonStatus {
        let uptime = Double(clock.monotonicNanoseconds() &- startedAt) / 1e9
        var values = counters.dictionary
        values["peers.paired"] = UInt64(peers.count)
        values["peers.active"] = UInt64(peers.values.filter { $0.channel != nil }.count)
        values["connections.unauthenticated"] = UInt64(connections.unauthenticated.count)
        values.merge(discoveryCounters()) { current, _ in current }
        return DaemonStatus(deviceID: identity.deviceID.description, name: configuration.name,
                            listen: (boundListenAddress ?? configuration.listen).description,
                            socket: configuration.socketPath, uptimeSeconds: uptime, counters: values)
    }

    /// Every paired device with channel state, addresses, RTT, clock offset and lease.
    public func peers() async -> [PeerStatus] {
        let now = clock.monotonicNanoseconds()
        return peers.values.sorted { $0.record.name < $1.record.name }.map { runtime in
            let estimate = runtime.estimator.estimate(now: now)
            let reachable = runtime.channel != nil && runtime.lease.isValid(now: now)
            return PeerStatus(
                deviceID: runtime.record.deviceID.description, name: runtime.record.name,
                addresses: displayedAddresses(runtime), channel: runtime.channelState,
                lastHandshake: runtime.lastHandshakeWall,
                rttMilliseconds: runtime.estimator.smoothedRoundTripNanoseconds.map { Double($0) / 1e6 },
                clockOffsetMilliseconds: estimate.map { Double($0.offsetNanoseconds) / 1e6 },
                clockOffsetErrorMilliseconds: estimate.map { Double($0.errorBoundNanoseconds) / 1e6 },
                leaseExpires: reachable ? runtime.lease.expiresAt.map { clock.wallSeconds(ofMonotonic: $0) } : nil,
                reachable: reachable,
                lastSeen: runtime.lease.lastRenewedAt.map { clock.wallSeconds(ofMonotonic: $0) },
                path: runtime.channel == nil ? nil : runtime.datagramEndpoint.flatMap(Self.hostPort))
        }
    }

    /// `HOST:PORT` of an IP socket address (IPv6 bracketed), as addresses are shown elsewhere.
    static func hostPort(_ address: SocketAddress) -> String? {
        guard let ip = address.ipAddress, let port = address.port else { return nil }
        return DaemonConfiguration.Endpoint(host: ip, port: port).description
    }

    /// Finds a paired device by full ID, short ID or unique prefix (case and dashes ignored).
    func resolvePeer(_ text: String) throws -> DeviceID {
        let wanted = Self.normalise(text)
        guard !wanted.isEmpty else { throw MeshError.unknownPeer(text) }
        let matches = peers.keys.filter { Self.normalise($0.description).hasPrefix(wanted) }
        guard matches.count == 1, let match = matches.first else {
            if matches.count > 1 {
                throw MeshError.invalidArgument("'\(text)' matches \(matches.count) paired devices; give more of the ID")
            }
            throw MeshError.unknownPeer(text)
        }
        return match
    }

    private static func normalise(_ text: String) -> String {
        String(text.uppercased().filter { $0.isLetter || $0.isNumber })
    }

    /// Removes a paired device: tells it over a live channel, closes the channel, forgets it.
    public func unpair(deviceID: String) async throws {
        let peer = try resolvePeer(deviceID)
        if let sent = sendStream(.unpaired, to: peer) {
            _ = try? await sent.get()
        }
        guard peers[peer] != nil else { return }    // may have been removed while waiting
        removePeer(peer, reason: "unpaired on this device")
    }

    /// Forgets `peer` everywhere: store, channel, indices.
    func removePeer(_ peer: DeviceID, reason: String) {
        dropChannel(peer, reason: reason, redial: false)
        peers.removeValue(forKey: peer)
        indexTable = indexTable.filter { $0.value != peer }
        persistPeers()
        logger.info("device unpaired", metadata: ["peer.id": "\(peer.short)"])
        channelEvent(.unpaired(peer))
    }

    /// Saves the paired devices; a failure is logged (the in-memory state stays authoritative
    /// for this run).
    func persistPeers() {
        do {
            try store.save(peers.values.map(\.record).sorted { $0.pairedAt < $1.pairedAt })
        } catch {
            logger.error("could not save the paired-device store", metadata: ["error": "\(error)"])
        }
    }
}
