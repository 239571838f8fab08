import MeshCrypto
import MeshCore
import NIOCore

/// The stream path that carries a channel.
struct ChannelConnection: Sendable {
    /// Node-unique connection number (to ignore events of replaced connections).
    let id: UInt64
    let path: any ChannelPath
    /// Whether this side opened it.
    let locallyInitiated: Bool

    /// The kind of path it runs on, as path choice sees it.
    var kind: PathChoice.Kind { path.remote.isRelay ? .relay : .direct }
}


/// Everything a node knows about one paired peer at run time: the stored record plus channel,
/// reachability, clock and reconnect state. Kept inside the node actor.
struct PeerRuntime: Sendable {
    var record: PairedPeer
    /// Keys of the active channel, if any.
    var channel: ActiveChannel?
    /// The stream path carrying `channel`.
    var connection: ChannelConnection?
    /// Where datagrams to the peer go (its stream path's address with its announced datagram
    /// port, or the relay address; updated from authenticated datagrams).
    var datagramEndpoint: PathAddress?
    /// Whether and when to dial the device.
    var dial: DialState
    /// Which path the channel runs on, and when to dial the relay (`PathChoice`).
    var path = PathChoice()
    /// Our message 1 went out on an outgoing connection and its answer is pending.
    var outgoingHandshakeInFlight = false
    /// Monotonic instant the last replacing handshake started (`PeerChannels.replacingHandshakeDue`).
    var lastReplacingHandshakeAt: UInt64?
    var lease: ReachabilityLease
    var estimator = ClockOffsetEstimator()
    /// Wall seconds of the last completed handshake.
    var lastHandshakeWall: Double?
    /// Greatest initiator timestamp confirmed from this peer (replayed message 1s are refused);
    /// kept in the record, so in the paired-device store across restarts and rekeys.
    var lastInitiationTimestamp: Int64 {
        get { record.handshakeTimestamp ?? .min }
        set { record.handshakeTimestamp = newValue }
    }
    /// The MACs of the peer's latest message 1s: a copy of one is refused before any X25519.
    var recentHandshakeMacs = HandshakeReplayCache()
    /// Monotonic instant the next keepalive is due.
    var nextKeepaliveAt: UInt64 = 0
    /// Key of the `HandshakeMac` on message 1s this device receives from the peer, with the
    /// pair key it was derived from (on first use).
    var handshakeMacKey: (pairKey: SecretBytes, key: SecretBytes)?

    init(record: PairedPeer, tuning: ChannelTuning, leaseSeconds: Double) {
        self.record = record
        dial = DialState(backoff: ReconnectBackoff(initialSeconds: tuning.reconnectInitial, maximumSeconds: tuning.reconnectMaximum))
        lease = ReachabilityLease(seconds: leaseSeconds)
    }

    /// Seals `message` for the datagram path into `buffer`, in place (the channel's counter
    /// advances inside the node's table, no copy of this value); nil when there is no active
    /// channel or no datagram endpoint.
    mutating func sealDatagram(_ message: ChannelMessage, into buffer: inout ByteBuffer) throws -> PathAddress? {
        guard channel != nil, let endpoint = datagramEndpoint else { return nil }
        try channel?.sealDatagram(message, into: &buffer)
        return endpoint
    }

    /// Opens a received datagram in place; nil when there is no active channel.
    mutating func openDatagram(_ datagram: UnsafeRawBufferPointer, index: UInt32) throws -> ChannelMessage? {
        guard channel != nil else { return nil }
        return try channel?.openDatagram(datagram, index: index)
    }

    /// An authenticated datagram arrived from `source` at `now`.
    mutating func datagramReceived(now: UInt64, from source: PathAddress) {
        lease.renew(now: now)
        if datagramEndpoint != source { datagramEndpoint = source }
    }

    /// Whether the active channel runs on the relay.
    var channelOnRelay: Bool { channel != nil && connection?.kind == .relay }

    /// Whether the active channel runs on a direct path (no direct dial is needed then).
    var channelOnDirectPath: Bool { channel != nil && !channelOnRelay }

    /// Where the active channel runs, as `meshctl peers` shows it: `relay BROKER`, or the
    /// peer's direct datagram endpoint (nil before one is known: `TCP only`).
    var pathDescription: String? {
        guard channel != nil, let connection else { return nil }
        if connection.kind == .relay { return connection.path.remote.description }
        return datagramEndpoint?.description
    }

    /// The state `meshctl peers` shows.
    var channelState: ChannelState {
        if channel != nil { return .active }
        if dial.attempting || outgoingHandshakeInFlight { return .connecting }
        return .down
    }
}
