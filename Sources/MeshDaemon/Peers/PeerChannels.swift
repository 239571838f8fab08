import MeshCrypto
import MeshCore
import NIOCore

/// The channel state of every paired device and the decisions made on it: session indices,
/// the channel handshake on both sides (`PeerChannels+Responder.swift`,
/// `PeerChannels+Initiator.swift`), activation and closing, rekeys (`PeerChannels+Rekey.swift`)
/// and what an authenticated stream or datagram message asks for
/// (`PeerChannels+Dispatch.swift`).
///
/// A value type without I/O: each method takes its input and the current time and returns
/// what to do. `MeshNode` keeps one, performs what it returns (writes, closes, timers, counters,
/// logs, channel events) and owns the sockets and connections.
struct PeerChannels: Sendable {
    /// Every paired device, with its channel, by device ID.
    var peers: [DeviceID: PeerRuntime] = [:]
    /// Which device each of this side's session indices belongs to (datagrams carry the
    /// receiver's index).
    var indexTable: [UInt32: DeviceID] = [:]
    /// This device's static keys (handshakes, rekeys).
    let localKeys: X25519KeyPair
    let tuning: ChannelTuning
    /// The global budget of message 1s answered (one bucket shared by every source).
    var handshakeBudget: HandshakeRateLimiter
    /// Each paired device's budget of message 1s answered (by device ID), next to the global one.
    var peerHandshakeBudget: HandshakeRateLimiter
    /// Source addresses whose channel handshake authenticated lately (the reserved slots).
    var pairedSources: PairedSourceTable
    /// Warns about handshakes stamped too far ahead, at most once per 10 s.
    var futureHandshakeWarning = RateLimitedWarning()
    /// Session indices, ephemeral keys, backoff jitter (`NodeRandomSource`).
    var random: NodeRandom

    /// The paired devices `records`, every channel down; reachability leases of `leaseSeconds`;
    /// random choices from `random`.
    init(localKeys: X25519KeyPair, tuning: ChannelTuning, records: [PairedPeer], leaseSeconds: Double,
         random: any NodeRandomSource = SodiumRandomSource()) {
        self.random = NodeRandom(random)
        self.localKeys = localKeys
        self.tuning = tuning
        handshakeBudget = HandshakeRateLimiter(ratePerSecond: tuning.handshakesPerSecond, burst: tuning.handshakeBurst,
                                               maximumSources: 1)
        peerHandshakeBudget = HandshakeRateLimiter(ratePerSecond: tuning.handshakesPerSecondPerPeer,
                                                   burst: tuning.handshakeBurstPerPeer, maximumSources: 4096)
        pairedSources = PairedSourceTable(lifetimeNanoseconds: Nanoseconds.from(seconds: tuning.pairedSourceLifetime))
        for record in records {
            peers[record.deviceID] = PeerRuntime(record: record, tuning: tuning, leaseSeconds: leaseSeconds)
        }
    }

    /// Allocates a fresh, unused, random session index for `peer`.
    mutating func allocateIndex(for peer: DeviceID) -> UInt32 {
        var index = UInt32.random(in: 1...UInt32.max, using: &random)
        for _ in 0..<64 where indexTable[index] != nil {
            index = UInt32.random(in: 1...UInt32.max, using: &random)
        }
        indexTable[index] = peer
        return index
    }

    /// Removes table entries of `peer` its channel no longer uses.
    mutating func syncIndices(of peer: DeviceID) {
        let live = Set(peers[peer]?.channel?.localIndices ?? [])
        indexTable = indexTable.filter { $0.value != peer || live.contains($0.key) }
    }

    /// Frees `index` of a handshake that did not complete, unless `peer`'s channel uses it.
    mutating func releaseIndex(_ index: UInt32, of peer: DeviceID) {
        if indexTable[index] == peer, peers[peer]?.channel?.localIndices.contains(index) != true {
            indexTable.removeValue(forKey: index)
        }
    }

    /// A dial of `peer` is wanted: the delay of the job to schedule in nanoseconds (0: now),
    /// or nil when none is needed (see `DialState.schedule`).
    mutating func scheduleDial(_ peer: DeviceID, immediately: Bool) -> UInt64? {
        guard let slot = peers.index(forKey: peer) else { return nil }
        // A channel on the relay still wants a direct path.
        let active = peers.values[slot].channelOnDirectPath
        return peers.values[slot].dial.schedule(immediately: immediately, channelActive: active, using: &random)
    }

    /// A scheduled dial of `peer` is due: its runtime when it should look for addresses.
    mutating func dialDue(_ peer: DeviceID) -> PeerRuntime? {
        guard let slot = peers.index(forKey: peer) else { return nil }
        let active = peers.values[slot].channelOnDirectPath
        return peers.values[slot].dial.due(channelActive: active) ? peers.values[slot] : nil
    }

    /// What `install` did.
    enum Installation: Sendable {
        /// The device is no longer paired: close the new connection.
        case unknownPeer
        /// The channel is active; `replaced` is the older connection to close, if any.
        case installed(replaced: ChannelConnection?)
    }

    /// Installs a channel that completed its handshake (or confirmed one) at monotonic `now`,
    /// replacing the peer's older one.
    mutating func install(_ peer: DeviceID, channel: ActiveChannel, connection: ChannelConnection,
                          datagramEndpoint: PathAddress?, now: UInt64, wallSeconds: Double) -> Installation {
        guard var runtime = peers[peer] else { return .unknownPeer }
        let old = runtime.connection.flatMap { $0.id != connection.id ? $0 : nil }
        runtime.channel = channel
        runtime.connection = connection
        if let datagramEndpoint {
            runtime.datagramEndpoint = datagramEndpoint
        } else if runtime.datagramEndpoint?.isRelay != connection.path.remote.isRelay {
            // Datagrams never go the other way than the channel's path after a change of path.
            runtime.datagramEndpoint = nil
        }
        runtime.outgoingHandshakeInFlight = false
        runtime.dial.activated()
        runtime.lease.renew(now: now)
        runtime.lastHandshakeWall = wallSeconds
        runtime.nextKeepaliveAt = now
        runtime.path.activated(connection.kind, now: now)
        peers[peer] = runtime
        pairedSources.record(connection.path.remote.sourceKey, peer: peer, now: now)
        indexTable[channel.current.localIndex] = peer
        syncIndices(of: peer)
        return .installed(replaced: old)
    }

    /// Takes down `peer`'s channel: the connection to close and whether a channel was active;
    /// nil for a device that is not paired.
    mutating func drop(_ peer: DeviceID, now: UInt64) -> (connection: ChannelConnection?, hadChannel: Bool)? {
        guard var runtime = peers[peer] else { return nil }
        runtime.path.lost(now: now)
        let hadChannel = runtime.channel != nil
        let connection = runtime.connection
        runtime.connection = nil
        runtime.channel = nil
        runtime.lease.revoke()
        peers[peer] = runtime
        syncIndices(of: peer)
        return (connection, hadChannel)
    }

    /// Stores the device `outcome` paired (replacing an earlier pairing of it, whose channel
    /// the caller dropped first) with pairing time `pairedAt` (wall seconds): its known
    /// addresses stay, `address` (where pairing reached it, if known) is learned, and session
    /// indices of the replaced pairing are freed. Returns the stored record.
    @discardableResult
    mutating func storePairing(_ outcome: PairingOutcome, address: PeerAddress?, pairedAt: Double,
                               leaseSeconds: Double, via: PairingRoute? = nil, single: Bool = false) -> PairedPeer {
        let id = outcome.peerDeviceID
        var record = PairedPeer(publicKey: outcome.peerPublicKey, name: outcome.peerName, pairKey: outcome.pairKey,
                                addresses: peers[id]?.record.addresses ?? [], pairedAt: pairedAt, pairedVia: via, single: single)
        if let address { record.learn(address: address.address, source: address.source) }
        peers[id] = PeerRuntime(record: record, tuning: tuning, leaseSeconds: leaseSeconds)
        indexTable = indexTable.filter { $0.value != id }
        pairedSources.forget(id)
        return record
    }

    /// Forgets `peer` (unpaired) and its session indices; the caller dropped its channel first.
    mutating func remove(_ peer: DeviceID) {
        peers.removeValue(forKey: peer)
        indexTable = indexTable.filter { $0.value != peer }
        pairedSources.forget(peer)
    }

    /// The records to save in the paired-device store, oldest pairing first.
    var records: [PairedPeer] { peers.values.map(\.record).sorted { $0.pairedAt < $1.pairedAt } }

    /// Whether `peer` has an active channel carried by connection `connectionID` now.
    func isCurrent(_ peer: DeviceID, connectionID: UInt64) -> Bool {
        peers[peer]?.connection?.id == connectionID
    }

    /// Whether `host` (an IP address as sockets report it) counts as a paired device's address
    /// at monotonic `now` (the reserved unauthenticated slots): a channel handshake with that
    /// device authenticated on a connection from or to it (its ``SourceKey``) within
    /// `ChannelTuning.pairedSourceLifetime`, or a live channel runs on it. What mDNS
    /// advertises, or the store lists, does not count.
    func isPairedDeviceAddress(_ host: String, now: UInt64) -> Bool {
        isPairedDeviceSource(SourceKey.of(host), now: now)
    }

    /// Whether a path from the source `key` (`PathAddress.sourceKey`) counts as a paired
    /// device's at monotonic `now`; see `isPairedDeviceAddress(_:now:)`.
    func isPairedDeviceSource(_ key: String, now: UInt64) -> Bool {
        if pairedSources.contains(key, now: now) { return true }
        for runtime in peers.values where runtime.channel != nil {
            if runtime.connection?.path.remote.sourceKey == key { return true }
        }
        return false
    }

    /// Round trip (latest sample) and clock offset (peer minus local, lowest-RTT sample) of
    /// `peer` at monotonic `now`, in nanoseconds, when measured.
    func linkEstimate(of peer: DeviceID, now: UInt64) -> DeliveryLinkEstimate {
        guard let index = peers.index(forKey: peer) else { return DeliveryLinkEstimate(roundTripNanoseconds: nil, offsetNanoseconds: nil) }
        let estimate = peers.values[index].estimator.estimate(now: now)
        return DeliveryLinkEstimate(roundTripNanoseconds: peers.values[index].estimator.latestRoundTripNanoseconds,
                                    offsetNanoseconds: estimate?.offsetNanoseconds)
    }
}
