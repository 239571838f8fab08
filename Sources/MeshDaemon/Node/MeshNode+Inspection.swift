import MeshCrypto
import MeshCore

/// What the deterministic simulator reads of a node it runs (on the node's loop, where every
/// job of a simulated daemon runs).
extension MeshNode {
    /// The paired devices with an active channel now, in device ID order.
    package nonisolated func activePeersOnLoop() -> [DeviceID] {
        onLoop { node in node.channels.peers.filter { $0.value.channel != nil }.map(\.key).sorted() }
    }

    /// The paired devices with an active channel now, each with that channel's identity (the
    /// session indices of its first handshake, this side's and the peer's), in device ID order.
    /// Two ends hold the same channel when each one's `local` is the other's `remote`.
    package nonisolated func activeChannelsOnLoop() -> [(peer: DeviceID, local: UInt32, remote: UInt32)] {
        onLoop { node in
            node.channels.peers.compactMap { peer, runtime in
                runtime.channel.map { (peer: peer, local: $0.identity.local, remote: $0.identity.remote) }
            }.sorted { $0.peer < $1.peer }
        }
    }

    /// Whether the node knows `peer`'s clock offset (a keepalive round trip measured it).
    package nonisolated func hasOffsetEstimateOnLoop(of peer: DeviceID) -> Bool {
        onLoop { $0.linkEstimate(of: peer).offsetNanoseconds != nil }
    }

    /// Whether `peer` is among the node's paired devices.
    package nonisolated func isPairedOnLoop(_ peer: DeviceID) -> Bool {
        onLoop { $0.channels.peers[peer] != nil }
    }

    /// The node's device set as `meshctl status` shows it (nil when the set is off).
    package nonisolated func deviceSetStatusOnLoop() -> DeviceSetStatus? {
        onLoop { $0.deviceSet.status }
    }

    /// The error bound of the node's estimate of `peer`'s clock offset (half the winning
    /// sample's round trip: the true offset lies within it), seconds; nil before a sample.
    package nonisolated func offsetErrorBoundOnLoop(of peer: DeviceID) -> Double? {
        onLoop { node in
            node.channels.peers[peer]?.estimator.estimate(now: node.clock.monotonicNanoseconds())
                .map { Double($0.errorBoundNanoseconds) / 1e9 }
        }
    }

    /// The kind of path `peer`'s active channel runs on, `relay` or `direct`; nil without one.
    package nonisolated func channelPathOnLoop(of peer: DeviceID) -> String? {
        onLoop { node in
            guard let runtime = node.channels.peers[peer], runtime.channel != nil else { return nil }
            return runtime.channelOnRelay ? "relay" : "direct"
        }
    }

    /// Where `peer`'s active channel runs, as `meshctl peers` shows it.
    package nonisolated func channelPathDescriptionOnLoop(of peer: DeviceID) -> String? {
        onLoop { $0.channels.peers[peer]?.pathDescription }
    }

    /// How often a channel moved between the relay and a direct path (`channels.path_changes`).
    package nonisolated func pathChangesOnLoop() -> UInt64 { onLoop { $0.counters.pathChanges } }

    /// The most bytes of inbound messages the handler (the router) had queued at once.
    package nonisolated func inboundQueuedBytesPeakOnLoop() -> Int { onLoop { $0.handOff.gate.queuedBytesPeak } }

    /// What the channel layer went through: handshakes completed, rekeys completed, leases
    /// that expired, handshakes refused as replays.
    package nonisolated func channelFiguresOnLoop() -> (handshakes: UInt64, rekeys: UInt64, leasesExpired: UInt64, replaysRefused: UInt64) {
        onLoop { node in
            (node.counters.handshakesCompleted, node.counters.rekeysCompleted, node.counters.leasesExpired,
             node.counters.handshakesRefusedReplay)
        }
    }
}
