/// How much paired peers can make the store hold: inbound snapshot slots (count and bytes),
/// session rows learnt from them and timer anchors they sent, per peer and over all peers
/// (`meshd.toml` keys `inbound_max_*`, docs/CONFIG.md). A new row over a limit is refused
/// (`StorePutResult.refused`), never stored; a row replacing one of the same key only counts
/// its change in bytes.
///
/// A session row is at most ≈ 800 bytes (feature, owner and status are each at most 256) and
/// an anchor record at most ≈ 330, so the counts bound their bytes too.
public struct PeerStateLimits: Sendable, Equatable {
    /// Inbound snapshot slots of one peer. Default 1024.
    public var slotsPerPeer: Int
    /// Snapshot bytes in the inbound slots of one peer. Default 16 MiB.
    public var slotBytesPerPeer: Int
    /// Inbound snapshot slots over all peers. Default 16 384.
    public var slots: Int
    /// Snapshot bytes in the inbound slots of all peers. Default 256 MiB.
    public var slotBytes: Int
    /// Session rows learnt from one peer. Default 4096.
    public var sessionsPerPeer: Int
    /// Session rows learnt from peers, over all peers. Default 65 536.
    public var sessions: Int
    /// Timer anchors of one peer. Default 4096.
    public var anchorsPerPeer: Int
    /// Timer anchors of peers, over all peers. Default 65 536.
    public var anchors: Int

    /// Creates limits; every value has the default documented on its property.
    public init(slotsPerPeer: Int = 1024, slotBytesPerPeer: Int = 16 << 20, slots: Int = 16_384,
                slotBytes: Int = 256 << 20, sessionsPerPeer: Int = 4096, sessions: Int = 65_536,
                anchorsPerPeer: Int = 4096, anchors: Int = 65_536) {
        self.slotsPerPeer = slotsPerPeer
        self.slotBytesPerPeer = slotBytesPerPeer
        self.slots = slots
        self.slotBytes = slotBytes
        self.sessionsPerPeer = sessionsPerPeer
        self.sessions = sessions
        self.anchorsPerPeer = anchorsPerPeer
        self.anchors = anchors
    }

    /// The limit `peer`'s tally (`current`) would pass with `delta` added (or the total would,
    /// with `total`), or nil. Only what `delta` raises is checked.
    func exceeded(adding delta: PeerStateTally, to current: PeerStateTally, total: PeerStateTally) -> StoreLimit? {
        let peer = current + delta, all = total + delta
        if delta.slots > 0 && peer.slots > slotsPerPeer { return .inboundSlotsPerPeer(slotsPerPeer) }
        if delta.slots > 0 && all.slots > slots { return .inboundSlotsTotal(slots) }
        if delta.slotBytes > 0 && peer.slotBytes > slotBytesPerPeer { return .inboundSlotBytesPerPeer(slotBytesPerPeer) }
        if delta.slotBytes > 0 && all.slotBytes > slotBytes { return .inboundSlotBytesTotal(slotBytes) }
        if delta.sessions > 0 && peer.sessions > sessionsPerPeer { return .inboundSessionsPerPeer(sessionsPerPeer) }
        if delta.sessions > 0 && all.sessions > sessions { return .inboundSessionsTotal(sessions) }
        if delta.anchors > 0 && peer.anchors > anchorsPerPeer { return .inboundAnchorsPerPeer(anchorsPerPeer) }
        if delta.anchors > 0 && all.anchors > anchors { return .inboundAnchorsTotal(anchors) }
        return nil
    }
}
