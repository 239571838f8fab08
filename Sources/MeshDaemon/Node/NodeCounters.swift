/// Counters a node reports in `meshctl status`. Every name is stable (documented output).
struct NodeCounters: Sendable {
    var handshakesCompleted: UInt64 = 0
    var handshakesFailed: UInt64 = 0
    var handshakesRefusedUnknownKey: UInt64 = 0
    var handshakesRefusedReplay: UInt64 = 0
    var simultaneousConnectsResolved: UInt64 = 0
    /// Handshakes started next to a live channel the peer seemed no longer to hold
    /// (`Dialer.replaceChannel`).
    var replacingHandshakes: UInt64 = 0
    var connectionsRateLimited: UInt64 = 0
    var connectionsOverCap: UInt64 = 0
    var connectionsOverSourceCap: UInt64 = 0
    var connectionsEvicted: UInt64 = 0
    var handshakesRefusedBusy: UInt64 = 0
    /// Message 1s refused because their MAC was seen before (before any X25519 or budget).
    var handshakesRefusedSeen: UInt64 = 0
    /// Message 1s refused because their device's own handshake budget was spent.
    var handshakesRefusedPeerBusy: UInt64 = 0
    var connectionsBadPreamble: UInt64 = 0
    var connectionsTimedOut: UInt64 = 0
    var datagramsReceived: UInt64 = 0
    var datagramsSent: UInt64 = 0
    var datagramsRejected: UInt64 = 0
    var streamMessagesReceived: UInt64 = 0
    var streamMessagesSent: UInt64 = 0
    var streamFramesRejected: UInt64 = 0
    var rekeysCompleted: UInt64 = 0
    var channelsExpired: UInt64 = 0
    var leasesExpired: UInt64 = 0
    var keepalivesSent: UInt64 = 0
    /// Keepalive replies not used for the clock estimate (unsolicited, impossible, out of bounds).
    var keepaliveRepliesRefused: UInt64 = 0
    /// Handshakes whose initiator timestamp lies too far ahead of this device's clock.
    var handshakesRefusedFuture: UInt64 = 0
    var pairingsCompleted: UInt64 = 0
    var pairingAttemptsFailed: UInt64 = 0
    var pairingAttemptsRefused: UInt64 = 0
    /// Pairing connections closed because the first message was not a well-formed hello
    /// (they do not count against the code).
    var pairingHellosMalformed: UInt64 = 0
    /// Pairings refused because the device was already paired and `replace` was not asked for.
    var pairingsRefusedAlreadyPaired: UInt64 = 0
    var inboundMessagesDropped: UInt64 = 0
    /// Stream replies a peer asked for (pings, keepalives, acks, snapshot replies) not written
    /// because its connection held more than the outbound reply limit.
    var streamRepliesDropped: UInt64 = 0
    /// Own stream writes refused at the hard outbound limit (each closed its channel).
    var streamWritesRefused: UInt64 = 0
    /// Channels closed because the peer did not read (hard limit met, or over the reply limit
    /// for too long).
    var channelsClosedNotReading: UInt64 = 0
    /// Datagrams not sent because the UDP socket's queue in NIO was over its high-water mark.
    var datagramsDroppedUnwritable: UInt64 = 0
    /// Times the node gave free heap back to the system after a connection's queue drained or closed.
    var outboundMemoryReleases: UInt64 = 0
    /// Gauges set when reported: bytes (charged) the channel connections hold now, and the
    /// highest one connection held since start.
    var outboundQueuedBytes: UInt64 = 0
    var outboundPeakBytes: UInt64 = 0
    /// Duration of the last handshake this side initiated (message 1 built → keys), µs.
    var lastHandshakeMicroseconds: UInt64 = 0
    /// Channels that moved between the relay and a direct path (either way).
    var pathChanges: UInt64 = 0
    /// Roster records from peers that did not verify or fit the roster.
    var rosterRecordsRefused: UInt64 = 0
    /// Devices forgotten because the device set removed them.
    var devicesRemovedBySet: UInt64 = 0
    /// Removal notices sent to removed devices that dialled (`RemovalNotice`).
    var removalNoticesSent: UInt64 = 0

    /// Counts a refused or abandoned channel handshake under its counter (`.gone`: none).
    mutating func count(_ refusal: HandshakeRefusal) {
        switch refusal {
        case .failed: handshakesFailed += 1
        case .unknownKey: handshakesRefusedUnknownKey += 1
        case .busy: handshakesRefusedBusy += 1
        case .seen: handshakesRefusedSeen += 1
        case .peerBusy: handshakesRefusedPeerBusy += 1
        case .replay: handshakesRefusedReplay += 1
        case .future: handshakesRefusedFuture += 1
        case .lostSimultaneousConnect: simultaneousConnectsResolved += 1
        case .gone: break
        }
    }

    /// Counts an inbound connection `ConnectionTable` refused.
    mutating func count(_ refusal: ConnectionTable.Refusal) {
        switch refusal {
        case .rateLimited: connectionsRateLimited += 1
        case .sourceFull: connectionsOverSourceCap += 1
        case .full: connectionsOverCap += 1
        }
    }

    /// Name → value, as `DaemonStatus.counters`.
    var dictionary: [String: UInt64] {
        [
            "handshakes.completed": handshakesCompleted,
            "handshakes.failed": handshakesFailed,
            "handshakes.refused.unknown_key": handshakesRefusedUnknownKey,
            "handshakes.refused.replay": handshakesRefusedReplay,
            "handshakes.simultaneous_resolved": simultaneousConnectsResolved,
            "handshakes.replacing": replacingHandshakes,
            "connections.rate_limited": connectionsRateLimited,
            "connections.over_cap": connectionsOverCap,
            "connections.over_source_cap": connectionsOverSourceCap,
            "connections.evicted": connectionsEvicted,
            "handshakes.refused.busy": handshakesRefusedBusy,
            "handshakes.refused.seen": handshakesRefusedSeen,
            "handshakes.refused.peer_busy": handshakesRefusedPeerBusy,
            "connections.bad_preamble": connectionsBadPreamble,
            "connections.timed_out": connectionsTimedOut,
            "datagrams.received": datagramsReceived,
            "datagrams.sent": datagramsSent,
            "datagrams.rejected": datagramsRejected,
            "stream.messages_received": streamMessagesReceived,
            "stream.messages_sent": streamMessagesSent,
            "stream.frames_rejected": streamFramesRejected,
            "rekeys.completed": rekeysCompleted,
            "channels.expired": channelsExpired,
            "leases.expired": leasesExpired,
            "keepalives.sent": keepalivesSent,
            "keepalives.replies_refused": keepaliveRepliesRefused,
            "handshakes.refused.future": handshakesRefusedFuture,
            "pairings.completed": pairingsCompleted,
            "pairing.attempts_failed": pairingAttemptsFailed,
            "pairing.attempts_refused": pairingAttemptsRefused,
            "pairing.hellos_malformed": pairingHellosMalformed,
            "pairing.refused_already_paired": pairingsRefusedAlreadyPaired,
            "messages.inbound_dropped": inboundMessagesDropped,
            "stream.replies_dropped": streamRepliesDropped,
            "stream.writes_refused": streamWritesRefused,
            "channels.closed_not_reading": channelsClosedNotReading,
            "datagrams.dropped_unwritable": datagramsDroppedUnwritable,
            "memory.outbound_releases": outboundMemoryReleases,
            "stream.outbound_queued_bytes": outboundQueuedBytes,
            "stream.outbound_peak_bytes": outboundPeakBytes,
            "handshake.last_initiated_us": lastHandshakeMicroseconds,
            "channels.path_changes": pathChanges,
            "set.records_refused": rosterRecordsRefused,
            "set.devices_removed": devicesRemovedBySet,
            "set.removal_notices_sent": removalNoticesSent,
        ]
    }
}
