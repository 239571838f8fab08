import Foundation
import MeshCore
import MeshCrypto
import MeshDaemon

/// How each simulated daemon's node is set up: its configuration (short timers, so a run of a
/// few virtual seconds meets keepalives, lease expiry, rekeys and backoff), its pairings and
/// its random stream.
extension Simulation {
    /// Seconds between keepalives of a simulated channel.
    static let keepaliveInterval = 0.5
    /// The reachability lease of a simulated channel, seconds.
    static let reachabilityLease = 1.5

    /// The channel timers of a simulated node: rekey after 1.5 s, keys refused after 3 s, a
    /// handshake given 2 s, reconnects backing off from 0.1 s to 2 s.
    static var channelTuning: ChannelTuning {
        var tuning = ChannelTuning()
        tuning.rekeyAfter = 1.5
        tuning.rejectAfter = 3
        tuning.handshakeTimeout = 2
        tuning.reconnectInitial = 0.1
        tuning.reconnectMaximum = 2
        return tuning
    }

    /// How long after the network healed every channel must be back: a lease running out on a
    /// side that still believes in a dead connection, the longest backoff (with its +25 %
    /// jitter), a handshake's whole deadline, and a second of slack.
    static var channelRecoveryBound: UInt64 {
        let tuning = channelTuning
        return UInt64((reachabilityLease + tuning.reconnectMaximum * 1.25 + tuning.handshakeTimeout + 1) * 1e9)
    }

    /// Daemon `index`'s node configuration, state in `stateDirectory`.
    func nodeConfiguration(_ index: Int, stateDirectory: String) -> DaemonConfiguration {
        let address = network.addresses[index]
        var configuration = DaemonConfiguration(name: "d\(index)", stateDirectory: stateDirectory,
                                                socketPath: "\(stateDirectory)/meshd.sock",
                                                listen: DaemonConfiguration.Endpoint(host: address.ipAddress ?? "0.0.0.0",
                                                                                     port: SimulatedNetwork.port),
                                                keepaliveInterval: Self.keepaliveInterval, reachabilityLease: Self.reachabilityLease)
        configuration.mdns = false
        configuration.deviceSet = self.configuration.deviceSet
        configuration.channelTuning = Self.channelTuning
        if self.configuration.longKeyLifetimes {
            let daemon = ChannelTuning()
            configuration.channelTuning.rekeyAfter = daemon.rekeyAfter
            configuration.channelTuning.rejectAfter = daemon.rejectAfter
        }
        configuration.channelTuning.testBugDialNotRetried = self.configuration.bug == .dialNotRetried
        configuration.channelTuning.testBugTimestampRecordedAtAnswer = self.configuration.bug == .timestampRecordedAtAnswer
        return configuration
    }

    /// What daemon `index` is paired with: every other daemon, by name (`dN`, which the
    /// simulated network resolves to that daemon's current address, as discovery would).
    func pairings(of index: Int) -> [PairingProvision] {
        daemons.indices.filter { $0 != index }.map { peer in
            PairingProvision(publicKey: daemons[peer].identity.publicKey, name: "d\(peer)",
                             pairKey: pairKeys[min(index, peer) * daemons.count + max(index, peer)],
                             addresses: ["d\(peer):\(SimulatedNetwork.port)"],
                             pairedAt: Double(SimulatedMeshClock.epochNanoseconds / 1_000_000_000) - 3_600 + Double(peer))
        }
    }

    /// The random stream of daemon `index`'s incarnation `incarnation` (a restarted process
    /// draws new ephemerals and indices, the same ones for the same seed).
    func nodeRandom(_ index: Int, incarnation: Int) -> SimulationRandom {
        nodeRandomRoot.fork("d\(index)-\(incarnation)")
    }

    /// `count` identity key pairs drawn from `random`.
    static func identities(_ count: Int, _ random: inout SimulationRandom) throws -> [X25519KeyPair] {
        try (0..<count).map { _ in try X25519KeyPair(privateKey: secret(&random)) }
    }

    /// The pair keys of every two of `count` daemons, at `low * count + high`.
    static func pairKeys(_ count: Int, _ random: inout SimulationRandom) -> [SecretBytes] {
        (0..<(count * count)).map { slot in slot / count < slot % count ? secret(&random) : SecretBytes([]) }
    }

    /// 32 bytes from `random`.
    static func secret(_ random: inout SimulationRandom) -> SecretBytes {
        SecretBytes((0..<4).flatMap { _ in withUnsafeBytes(of: random.next()) { Array($0) } })
    }

    /// The pairs of live daemons that do not hold the same active channel to each other now:
    /// both ends must have one, and it must be one channel (each end's session index of its
    /// first handshake is the other's peer index). Two channels, one per side, carry nothing.
    func missingChannels() -> [(Int, Int)] {
        let active: [[DeviceID: (local: UInt32, remote: UInt32)]] = daemons.map { daemon in
            guard daemon.alive, let node = daemon.node else { return [:] }
            var table: [DeviceID: (local: UInt32, remote: UInt32)] = [:]
            for channel in node.activeChannelsOnLoop() { table[channel.peer] = (channel.local, channel.remote) }
            return table
        }
        var missing: [(Int, Int)] = []
        // A daemon removed from the set has no channel to anyone, by design.
        let removed = context.removedDaemon
        for a in daemons.indices where daemons[a].alive && a != removed {
            for b in (a + 1)..<daemons.count where daemons[b].alive && b != removed {
                guard let ab = active[a][daemons[b].deviceID], let ba = active[b][daemons[a].deviceID],
                      ab.local == ba.remote, ab.remote == ba.local else {
                    missing.append((a, b))
                    continue
                }
            }
        }
        return missing
    }
}
