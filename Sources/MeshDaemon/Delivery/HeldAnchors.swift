/// A peer's timer anchors that arrived before this device knew the peer's clock offset (its
/// first keepalive round trip after a channel came up; activation resends anchors at once): an
/// anchor rewritten then would be off by the two clocks' difference, so it waits here until the
/// offset is measured (`DeliveryTicker.tick`) and is then rewritten and stored as if it had just
/// arrived.
///
/// One anchor per (feature, session), the highest revision (the store keeps only a newer one
/// anyway), in arrival order; at most `capacity` per peer, so a peer that floods anchors before
/// its offset is known holds a fixed amount of memory. Kept by the peer's `DeliveryPeerState`;
/// emptied when its channel goes down (the peer resends its anchors on the next activation).
struct HeldAnchors: Sendable {
    /// Anchors held per peer at most.
    static let capacity = 64

    private(set) var records: [DeliveryAnchorRecord] = []

    var isEmpty: Bool { records.isEmpty }

    /// Holds `record`; false when it is of a new (feature, session) and `capacity` are held
    /// already (the caller drops and counts it). A lower revision than the one held is dropped
    /// as the store would drop it, and counts as held.
    mutating func hold(_ record: DeliveryAnchorRecord) -> Bool {
        if let index = records.firstIndex(where: { $0.featureID == record.featureID && $0.sessionID == record.sessionID }) {
            if record.revision > records[index].revision { records[index] = record }
            return true
        }
        guard records.count < Self.capacity else { return false }
        records.append(record)
        return true
    }

    /// Every held anchor, in arrival order; none held afterwards.
    mutating func takeAll() -> [DeliveryAnchorRecord] {
        defer { records.removeAll() }
        return records
    }
}
