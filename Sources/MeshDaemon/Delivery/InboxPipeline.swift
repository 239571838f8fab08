import Foundation
import MeshCore
import SessionMesh

/// The receive side's decisions before an item reaches an app: dedup of received items against
/// what was handed out or stored lately and what is on its way to the inbox, the byte-bounded
/// backlog of items waiting for their inbox transaction (with its peak), the per-(peer,
/// feature) order of realtime items that had to take the inbox, which received items one
/// transaction stores, and what is acked once it committed. The router performs what it
/// decides (the store transaction, the emits, the acks); nothing here does I/O or reads a clock.
struct InboxPipeline: Sendable {
    /// Payload bytes the backlog may hold (`DeliveryRouterOptions.inboxBacklogBytes`).
    let byteLimit: Int
    /// Received items waiting for their inbox transaction, in arrival order.
    private(set) var backlog: [(peer: DeviceID, work: DeliveryInboxWork)] = []
    /// Bytes counted for the backlog and the transaction running (until `finished`).
    private(set) var bytes = 0
    /// Highest `bytes` seen (for tests and `meshctl status`).
    private(set) var peakBytes = 0
    /// Event IDs queued for or inside an inbox transaction (a realtime copy arriving meanwhile
    /// is a duplicate: the stored copy will be handed out).
    private(set) var inFlight: [UUID: Int] = [:]
    /// Realtime items per (peer, feature) in the pipeline: later realtime items of that feature
    /// follow them there, so an app sees a peer's items in order.
    private(set) var realtimeQueued: [DeviceID: [String: Int]] = [:]
    /// Realtime event IDs handed out lately (and inbox items stored lately), for dedup.
    private(set) var seen: RecentEventIDs
    /// Event IDs handed out live and not yet recorded in the store's seen-set, per peer.
    private(set) var seenToRecord: [DeviceID: [UUID]] = [:]

    init(byteLimit: Int, dedupMemory: Int) {
        self.byteLimit = byteLimit
        self.seen = RecentEventIDs(generation: dedupMemory)
    }

    /// Whether the backlog takes more (below its byte bound).
    var hasRoom: Bool { bytes < byteLimit }

    /// What becomes of a received realtime item (its envelope already checked).
    enum RealtimeVerdict: Equatable {
        /// To the attached apps now (remembered for dedup and the seen-set), then acked.
        case live
        /// Seen or on its way to the inbox already: acked, nothing else.
        case duplicate
        /// Queued for the inbox (acked once stored): no app attached, or an earlier item of its
        /// feature from this peer is in the pipeline.
        case queued
        /// Not taken, not acked (the sender falls back to its outbox): the backlog is full.
        case full
    }

    /// A realtime item from `peer` arrived; `appAttached`: some app is attached for its feature.
    /// No allocation unless items wait for the inbox (both tables are empty then: no hashing).
    mutating func realtimeReceived(_ item: DeliveryItem, from peer: DeviceID, path: PingPath,
                                   appAttached: Bool) -> RealtimeVerdict {
        // A live item is looked up and remembered in one pass over the set.
        let live = appAttached && (realtimeQueued.isEmpty || (realtimeQueued[peer]?[item.featureID] ?? 0) == 0)
        let duplicate = (!inFlight.isEmpty && inFlight[item.eventID] != nil)
            || (live ? !seen.insert(item.eventID) : seen.contains(item.eventID))
        if duplicate { return .duplicate }
        guard live else {
            guard hasRoom else { return .full }
            queue(.realtime(item, path: path), from: peer)
            return .queued
        }
        seenToRecord[peer, default: []].append(item.eventID)
        return .live
    }

    /// Remembers an event ID stored in the inbox (in memory only: the inbox row is its record).
    mutating func rememberStored(_ eventID: UUID) {
        seen.insert(eventID)
    }

    /// Queues received work for the inbox (counted against the bound until `finished`).
    mutating func queue(_ work: DeliveryInboxWork, from peer: DeviceID) {
        bytes += work.byteCount
        peakBytes = max(peakBytes, bytes)
        for eventID in work.eventIDs { inFlight[eventID, default: 0] += 1 }
        if case .realtime(let item, _) = work { realtimeQueued[peer, default: [:]][item.featureID, default: 0] += 1 }
        backlog.append((peer, work))
    }

    /// Takes the whole backlog, grouped per peer (peers in the order of their first item, each
    /// peer's work in arrival order): one inbox transaction each.
    mutating func takeBacklog() -> [(peer: DeviceID, works: [DeliveryInboxWork])] {
        let taken = backlog
        backlog = []
        var order: [DeviceID] = []
        var byPeer: [DeviceID: [DeliveryInboxWork]] = [:]
        for (peer, work) in taken {
            if byPeer[peer] == nil { order.append(peer) }
            byPeer[peer, default: []].append(work)
        }
        return order.map { ($0, byPeer[$0] ?? []) }
    }

    /// The transaction of `works` ended (stored or refused): they leave the pipeline.
    mutating func finished(_ works: [DeliveryInboxWork], from peer: DeviceID) {
        for case .realtime(let item, _) in works {
            let left = (realtimeQueued[peer]?[item.featureID] ?? 1) - 1
            realtimeQueued[peer]?[item.featureID] = left > 0 ? left : nil
        }
        // Emptied tables go, so the realtime path's `isEmpty` check skips hashing again.
        if realtimeQueued[peer]?.isEmpty == true { realtimeQueued[peer] = nil }
        for eventID in works.flatMap(\.eventIDs) {
            if let count = inFlight[eventID], count > 1 { inFlight[eventID] = count - 1 } else { inFlight[eventID] = nil }
        }
        // Counted until stored: the items are in memory until then.
        bytes = max(0, bytes - works.reduce(0) { $0 + $1.byteCount })
    }

    /// Takes the event IDs to record in the store's seen-set (one transaction per peer).
    mutating func takeSeenToRecord() -> [DeviceID: [UUID]] {
        defer { seenToRecord = [:] }
        return seenToRecord
    }

    /// Sorts one peer's works into the items one inbox transaction stores. `awaitingResend`:
    /// the peer's batches are refused until its resend marker (set by a refusal, cleared here).
    func transaction(_ works: [DeliveryInboxWork], awaitingResend: inout Bool) -> InboxTransaction {
        var transaction = InboxTransaction()
        var freshIDs = Set<UUID>()   // one event ID is stored once, even when it comes twice here
        /// Notes one received item in order: fresh, or a duplicate when the router saw its ID.
        func receive(_ eventID: UUID, sequence: UInt64?, ack: (UUID, PingPath)?, as item: () -> InboxItem) -> Bool {
            guard !seen.contains(eventID), freshIDs.insert(eventID).inserted else {
                transaction.received.append((sequence, ack, nil))
                return false
            }
            transaction.received.append((sequence, ack, transaction.fresh.count))
            transaction.fresh.append(item())
            return true
        }
        for work in works {
            switch work {
            case .resend:
                awaitingResend = false
            case .batch(let items):
                guard !awaitingResend else {
                    transaction.afterRefusal &+= UInt64(items.count)
                    continue
                }
                transaction.refusable = true
                for (sequence, item) in items {
                    guard item.matchesEnvelope else {
                        // Refused, and acked with the rest: resending it would not make it valid.
                        transaction.refused += 1
                        transaction.received.append((sequence, nil, nil))
                        continue
                    }
                    if !receive(item.eventID, sequence: sequence, ack: nil, as: { item.inboxItem(senderSequence: sequence) }) {
                        transaction.inboxDuplicates &+= 1
                    }
                }
            case .realtime(let item, let path):
                if !receive(item.eventID, sequence: nil, ack: (item.eventID, path), as: { item.inboxItem(senderSequence: 0) }) {
                    transaction.realtimeDuplicates &+= 1
                }
            }
        }
        return transaction
    }
}

/// One peer's received items sorted for an inbox transaction (`InboxPipeline.transaction`).
struct InboxTransaction {
    /// Items to store, in arrival order.
    var fresh: [InboxItem] = []
    /// Every received item in arrival order: its batch sequence or realtime ack, and its index
    /// in `fresh` (nil: a duplicate or refused item, not stored).
    var received: [(sequence: UInt64?, ack: (UUID, PingPath)?, fresh: Int?)] = []
    /// A batch is among the items (a refusal of the transaction then stops later batches).
    var refusable = false
    /// Items whose header disagrees with their envelope (refused, acked with the rest).
    var refused = 0
    /// Batch items dropped because the peer's stream waits for its resend after a refusal.
    var afterRefusal: UInt64 = 0
    var inboxDuplicates: UInt64 = 0
    var realtimeDuplicates: UInt64 = 0

    /// What the peer gets once the transaction stored the first `storedCount` fresh items.
    struct Acks {
        /// The cumulative ack of the batches (nil: none of their items is covered).
        var upTo: UInt64?
        /// The realtime items acked, each on the path it came by.
        var realtime: [(UUID, PingPath)]
        /// Fresh items left unstored (the inbox was full): the sender resends them.
        var unstored: Int
        /// A batch item is among those left: the peer's later batches wait for its resend.
        var refusedBatch: Bool
    }

    /// Acks everything before the first item that was not stored (the ack is cumulative).
    func acks(storedCount: Int) -> Acks {
        let cut = received.firstIndex { ($0.fresh ?? -1) >= storedCount } ?? received.count
        return Acks(upTo: received[..<cut].compactMap(\.sequence).max(), realtime: received[..<cut].compactMap(\.ack),
                    unstored: cut < received.count ? fresh.count - storedCount : 0,
                    refusedBatch: received[cut...].contains { $0.sequence != nil })
    }
}

/// Received items waiting for an inbox transaction.
enum DeliveryInboxWork: Sendable {
    /// A reliable batch: cumulative ack after the commit.
    case batch([(sequence: UInt64, item: DeliveryItem)])
    /// A realtime item no app was attached for: acked on `path` after the commit.
    case realtime(DeliveryItem, path: PingPath)
    /// The sender starts its stream over from its last ack (in order with the batches: those
    /// sent before it were dropped or stored already).
    case resend

    /// Bytes it holds in memory (payloads and a fixed share per item), for the pipeline's bound.
    var byteCount: Int {
        switch self {
        case .batch(let items): items.reduce(0) { $0 + $1.item.payload.count + $1.item.featureID.utf8.count + 96 }
        case .realtime(let item, _): item.payload.count + item.featureID.utf8.count + 96
        case .resend: 0
        }
    }

    var eventIDs: [UUID] {
        switch self {
        case .batch(let items): items.map(\.item.eventID)
        case .realtime(let item, _): [item.eventID]
        case .resend: []
        }
    }
}

extension DeliveryItem {
    /// Whether a received item is what its item header says: a known kind, an envelope that
    /// decodes, with the item's event ID, feature and session. A peer's item that is not is
    /// refused (counted): an app never gets an envelope of a feature it did not attach, nor one
    /// envelope under two event IDs.
    var matchesEnvelope: Bool {
        guard kind == Kind.realtimeEnvelope.rawValue || kind == Kind.reliableEnvelope.rawValue
                || kind == Kind.acknowledgementEnvelope.rawValue,
              let metadata = try? SessionWireCodec.decodeEnvelopeMetadata(payload) else { return false }
        return metadata.eventID == eventID && metadata.featureID == featureID && sessionID == metadata.sessionID
    }
}
