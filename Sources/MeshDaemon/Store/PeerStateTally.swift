/// How much of what paired peers can grow the store holds for one peer (or for all): inbound
/// snapshot slots (count and bytes), session rows learnt from it, timer anchors it sent.
struct PeerStateTally: Sendable, Equatable {
    var slots = 0
    var slotBytes = 0
    var sessions = 0
    var anchors = 0
    var anchorBytes = 0

    static func + (lhs: Self, rhs: Self) -> Self {
        PeerStateTally(slots: lhs.slots + rhs.slots, slotBytes: lhs.slotBytes + rhs.slotBytes,
                       sessions: lhs.sessions + rhs.sessions, anchors: lhs.anchors + rhs.anchors,
                       anchorBytes: lhs.anchorBytes + rhs.anchorBytes)
    }

    static func - (lhs: Self, rhs: Self) -> Self {
        PeerStateTally(slots: lhs.slots - rhs.slots, slotBytes: lhs.slotBytes - rhs.slotBytes,
                       sessions: lhs.sessions - rhs.sessions, anchors: lhs.anchors - rhs.anchors,
                       anchorBytes: lhs.anchorBytes - rhs.anchorBytes)
    }

    /// Reads the tallies of every peer from the tables (once, when the store opens).
    static func load(from db: SQLiteConnection) throws -> [String: PeerStateTally] {
        let operation = "load per-peer state counters"
        var byPeer: [String: PeerStateTally] = [:]
        for (peer, count, bytes) in try db.query(
            "SELECT peer, COUNT(*), COALESCE(SUM(LENGTH(bytes)), 0) FROM inbound_slot GROUP BY peer", [], operation,
            row: { ($0.text(0), Int($0.int64(1)), Int($0.int64(2))) }) {
            byPeer[peer, default: PeerStateTally()].slots = count
            byPeer[peer, default: PeerStateTally()].slotBytes = bytes
        }
        for (peer, count) in try db.query(
            "SELECT source_peer, COUNT(*) FROM session_directory WHERE source_peer IS NOT NULL GROUP BY source_peer",
            [], operation, row: { ($0.text(0), Int($0.int64(1))) }) {
            byPeer[peer, default: PeerStateTally()].sessions = count
        }
        for (peer, count, bytes) in try db.query(
            "SELECT source_peer, COUNT(*), COALESCE(SUM(LENGTH(bytes)), 0) FROM timer_anchor WHERE source_peer != '' GROUP BY source_peer",
            [], operation, row: { ($0.text(0), Int($0.int64(1)), Int($0.int64(2))) }) {
            byPeer[peer, default: PeerStateTally()].anchors = count
            byPeer[peer, default: PeerStateTally()].anchorBytes = bytes
        }
        return byPeer
    }
}
