/// Buffers what is sent before a channel (or a client's attach) is ready, and hands it over in
/// arrival order once it is.
///
/// - Envelopes are FIFO with a cap (``envelopeCapacity``, 200 by default); when full, the oldest
///   is dropped and counted in ``droppedEnvelopeCount``.
/// - Snapshots collapse per key (the `featureID`): only the newest survives, at the arrival
///   position of that newest one. Distinct keys are capped too (``snapshotCapacity``); past it
///   the oldest key's snapshot is dropped and counted in ``droppedSnapshotCount``.
/// - ``drain()`` returns what survives in arrival order and empties the queue.
///
/// Generic over what it holds, so the daemon (encoded frames) and the client library (erased
/// envelopes and snapshots) share it. A value type: wrap it in an actor or a lock to share it.
public struct PendingDeliveryQueue<Envelope, Snapshot> {
    /// One item handed back by ``drain()``.
    public enum Item {
        /// A buffered envelope.
        case envelope(Envelope)
        /// The newest buffered snapshot of one key.
        case snapshot(Snapshot)
    }

    /// The most envelopes held at once.
    public let envelopeCapacity: Int
    /// The most distinct snapshot keys held at once.
    public let snapshotCapacity: Int
    /// Envelopes dropped because the queue was full, since creation.
    public private(set) var droppedEnvelopeCount: Int = 0
    /// Snapshots dropped because too many keys were buffered, since creation
    /// (not counting snapshots replaced by a newer one of the same key).
    public private(set) var droppedSnapshotCount: Int = 0
    /// Snapshots replaced by a newer one of the same key, since creation.
    public private(set) var collapsedSnapshotCount: Int = 0

    private var envelopes: BoundedRing<(arrival: UInt64, envelope: Envelope)>
    private var snapshots: [String: (arrival: UInt64, snapshot: Snapshot)] = [:]
    private var nextArrival: UInt64 = 0

    /// Creates an empty queue; capacities below 1 are raised to 1.
    public init(envelopeCapacity: Int = 200, snapshotCapacity: Int = 64) {
        self.envelopeCapacity = max(1, envelopeCapacity)
        self.snapshotCapacity = max(1, snapshotCapacity)
        envelopes = BoundedRing(capacity: self.envelopeCapacity)
    }

    /// Number of envelopes held.
    public var envelopeCount: Int { envelopes.count }
    /// Number of snapshots held (one per key).
    public var snapshotCount: Int { snapshots.count }
    /// Number of items ``drain()`` would return.
    public var count: Int { envelopes.count + snapshots.count }
    /// Whether nothing is held.
    public var isEmpty: Bool { count == 0 }

    /// Buffers an envelope; returns `true` when the oldest envelope was dropped to make room.
    @discardableResult
    public mutating func enqueue(envelope: Envelope) -> Bool {
        nextArrival += 1
        if envelopes.append((nextArrival, envelope)) != nil {
            droppedEnvelopeCount += 1
            return true
        }
        return false
    }

    /// Buffers a snapshot for `key` (the `featureID`), replacing an older one of the same key.
    public mutating func enqueue(snapshot: Snapshot, forKey key: String) {
        nextArrival += 1
        if snapshots.updateValue((nextArrival, snapshot), forKey: key) != nil {
            collapsedSnapshotCount += 1
        } else if snapshots.count > snapshotCapacity,
            let oldest = snapshots.min(by: { $0.value.arrival < $1.value.arrival })?.key
        {
            snapshots.removeValue(forKey: oldest)
            droppedSnapshotCount += 1
        }
    }

    /// Returns everything held in arrival order and empties the queue (drop counters remain).
    public mutating func drain() -> [Item] {
        var merged: [(UInt64, Item)] = []
        merged.reserveCapacity(count)
        envelopes.forEach { merged.append(($0.arrival, .envelope($0.envelope))) }
        for (_, entry) in snapshots { merged.append((entry.arrival, .snapshot(entry.snapshot))) }
        merged.sort { $0.0 < $1.0 }
        envelopes = BoundedRing(capacity: envelopeCapacity)
        snapshots = [:]
        return merged.map(\.1)
    }
}

extension PendingDeliveryQueue: Sendable where Envelope: Sendable, Snapshot: Sendable {}
extension PendingDeliveryQueue.Item: Sendable where Envelope: Sendable, Snapshot: Sendable {}
extension PendingDeliveryQueue.Item: Equatable where Envelope: Equatable, Snapshot: Equatable {}

extension PendingDeliveryQueue where Snapshot == AnySessionSyncSnapshot {
    /// Buffers an erased snapshot keyed by its `metadata.featureID`.
    public mutating func enqueue(snapshot: AnySessionSyncSnapshot) {
        enqueue(snapshot: snapshot, forKey: snapshot.metadata.featureID)
    }
}
