import MeshCore
import MeshCrypto
import NIOCore

/// How the node's state reads in `meshctl status` and `meshctl peers`; pure functions of what
/// the node hands in (its clock readings included).
enum NodeReports {
    /// The counters `meshctl status` shows: the node's, the peer and connection gauges, and
    /// discovery's figures.
    static func statusCounters(_ counters: NodeCounters, paired: Int, active: Int, unauthenticated: Int,
                               discovery: [String: UInt64]) -> [String: UInt64] {
        var values = counters.dictionary
        values["peers.paired"] = UInt64(paired)
        values["peers.active"] = UInt64(active)
        values["connections.unauthenticated"] = UInt64(unauthenticated)
        values.merge(discovery) { current, _ in current }
        return values
    }

    /// One paired device with channel state, addresses, RTT, clock offset and lease, at
    /// monotonic instant `now`.
    static func peerStatus(_ runtime: PeerRuntime, addresses: [PeerAddress], now: UInt64, clock: any MeshClock,
                           lastClosing: OutboundQueues.Closing? = nil) -> PeerStatus {
        let estimate = runtime.estimator.estimate(now: now)
        let reachable = runtime.channel != nil && runtime.lease.isValid(now: now)
        return PeerStatus(
            deviceID: runtime.record.deviceID.description, name: runtime.record.name,
            addresses: addresses, channel: runtime.channelState,
            lastHandshake: runtime.lastHandshakeWall,
            rttMilliseconds: runtime.estimator.smoothedRoundTripNanoseconds.map { Double($0) / 1e6 },
            clockOffsetMilliseconds: estimate.map { Double($0.offsetNanoseconds) / 1e6 },
            clockOffsetErrorMilliseconds: estimate.map { Double($0.errorBoundNanoseconds) / 1e6 },
            leaseExpires: reachable ? runtime.lease.expiresAt.map { clock.wallSeconds(ofMonotonic: $0) } : nil,
            reachable: reachable,
            lastSeen: runtime.lease.lastRenewedAt.map { clock.wallSeconds(ofMonotonic: $0) },
            path: runtime.pathDescription,
            lastCloseReason: lastClosing?.reason, lastClosed: lastClosing?.at)
    }

    /// `HOST:PORT` of an IP socket address (IPv6 bracketed), as addresses are shown elsewhere.
    static func hostPort(_ address: SocketAddress) -> String? {
        guard let ip = address.ipAddress, let port = address.port else { return nil }
        return DaemonConfiguration.Endpoint(host: ip, port: port).description
    }

    /// The paired device `text` names: its full ID, short ID or a unique prefix (case and
    /// dashes ignored). Throws `MeshError` (unknown, or ambiguous).
    static func resolvePeer(_ text: String, among paired: some Collection<DeviceID>) throws -> DeviceID {
        let wanted = normalise(text)
        guard !wanted.isEmpty else { throw MeshError.unknownPeer(text) }
        let matches = paired.filter { normalise($0.description).hasPrefix(wanted) }
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
}
