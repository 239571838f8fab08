import Foundation

/// Which of one peer's outbox items go to its mailbox at the broker, and when: the sending side
/// of store and forward, while the peer has no live channel.
///
/// A value in the router's `MailboxCourier`; its methods take what happened and the monotonic
/// time (ns) and say what to read and post. The policy (docs/RELAY.md, "Store and forward"):
///
/// - A **round** posts each unacknowledged outbox item once, in sequence order, several items
///   per box. Items queued later join the round. A new round (everything still in the outbox
///   posted again) starts after ``resendSeconds``, when the broker may have lost the boxes (a
///   connection on which it no longer held this device's session: a new `epoch`), and when a
///   live channel with the peer came and went (the channel carried what it could).
/// - At most ``maximumItems`` items and ``maximumBytes`` bytes are posted and unacknowledged per
///   round; the rest waits until acks make room or the next round. So a device offline for
///   long costs its broker a bounded queue per peer, however much is queued here.
/// - An item whose batch does not fit one box waits for a live channel (``Step/tooLarge``).
struct MailboxPostState: Sendable, Equatable {
    /// Items posted and not yet acknowledged, per round.
    static let maximumItems = 1_024
    /// Their bytes (encoded items), per round.
    static let maximumBytes = 16 << 20
    /// A round's age after which unacknowledged items are posted again.
    static let resendSeconds: Double = 600
    /// Pause between passes once the outbox has nothing new (or the round is full).
    static let idleSeconds: Double = 2
    /// Items read from the outbox per pass.
    static let readLimit = 512
    /// Bytes of a batch around its items: the type byte and the count.
    static let batchHeaderBytes = 5

    /// The broker session the round posted to (nil: no round yet).
    private(set) var epoch: UInt64?
    /// Highest outbox sequence this round has dealt with.
    private(set) var cursor: UInt64 = 0
    /// Items posted in this round and not acknowledged since: event ID → encoded bytes.
    private(set) var posted: [UUID: Int] = [:]
    private(set) var postedBytes = 0
    private(set) var roundStartedAt: UInt64 = 0
    private(set) var nextPassAt: UInt64 = 0
    private(set) var passing = false

    /// One outbox read.
    struct Read: Sendable, Equatable {
        var after: UInt64
        var limit: Int
    }

    /// What to do with what a read returned, in order.
    enum Step: Sendable, Equatable {
        /// Post these items as one box; the round has then dealt with `through`.
        case box([(sequence: UInt64, item: DeliveryItem)], through: UInt64)
        /// This item does not fit one box: it waits for a live channel.
        case tooLarge(sequence: UInt64)

        static func == (lhs: Step, rhs: Step) -> Bool {
            switch (lhs, rhs) {
            case (.box(let a, let x), .box(let b, let y)):
                x == y && a.map(\.sequence) == b.map(\.sequence) && a.map(\.item) == b.map(\.item)
            case (.tooLarge(let x), .tooLarge(let y)): x == y
            default: false
            }
        }
    }

    /// A pass may start at `now` for the broker session `epoch`: the read to do, or nil (a pass
    /// runs, it is not time yet, or the round is full).
    mutating func beginPass(now: UInt64, epoch: UInt64) -> Read? {
        guard !passing, now >= nextPassAt else { return nil }
        let stale = now >= roundStartedAt && Double(now - roundStartedAt) / 1e9 >= Self.resendSeconds
        if self.epoch != epoch || (stale && !posted.isEmpty) { startRound(now: now, epoch: epoch) }
        guard hasRoom else {
            nextPassAt = now + UInt64(Self.idleSeconds * 1e9)
            return nil
        }
        passing = true
        return Read(after: cursor, limit: Self.readLimit)
    }

    /// The pass's steps for `entries` (the read's result, in sequence order), within the
    /// round's room and `maximumPlaintext` bytes per box. Changes nothing: ``posted(_:)`` and
    /// ``skipped(_:)`` record what was done.
    func plan(_ entries: [OutboxEntry], maximumPlaintext: Int) -> [Step] {
        var steps: [Step] = []
        var items = posted.count, bytes = postedBytes
        var box: [(sequence: UInt64, item: DeliveryItem)] = []
        var boxBytes = Self.batchHeaderBytes
        for entry in entries where entry.sequence > cursor {
            let item = DeliveryItem(entry)
            let size = 8 + item.encodedSize
            if Self.batchHeaderBytes + size > maximumPlaintext {
                if let last = box.last { steps.append(.box(box, through: last.sequence)) }
                box = []
                boxBytes = Self.batchHeaderBytes
                steps.append(.tooLarge(sequence: entry.sequence))
                continue
            }
            guard items < Self.maximumItems, bytes + size <= Self.maximumBytes else { break }
            if boxBytes + size > maximumPlaintext, let last = box.last {
                steps.append(.box(box, through: last.sequence))
                box = []
                boxBytes = Self.batchHeaderBytes
            }
            box.append((entry.sequence, item))
            boxBytes += size
            items += 1
            bytes += size
        }
        if let last = box.last { steps.append(.box(box, through: last.sequence)) }
        return steps
    }

    /// A box of the plan was posted.
    mutating func posted(_ step: Step) {
        guard case .box(let items, let through) = step else { return }
        for (_, item) in items where posted[item.eventID] == nil {
            let size = 8 + item.encodedSize
            posted[item.eventID] = size
            postedBytes += size
        }
        cursor = max(cursor, through)
    }

    /// An item of the plan was passed over (too large for a box).
    mutating func skipped(_ sequence: UInt64) { cursor = max(cursor, sequence) }

    /// The pass ended at `now`; `readWasFull` when the read returned as many items as asked
    /// (more may follow at once), `postFailed` when a post did not go out (try again later).
    mutating func endPass(now: UInt64, readWasFull: Bool, postFailed: Bool) {
        passing = false
        if postFailed || !readWasFull || !hasRoom { nextPassAt = now + UInt64(Self.idleSeconds * 1e9) }
    }

    /// The peer acknowledged these items (they are deleted from the outbox): room for more.
    mutating func acked(_ eventIDs: [UUID]) {
        for eventID in eventIDs {
            if let size = posted.removeValue(forKey: eventID) { postedBytes -= size }
        }
    }

    /// A live channel with the peer carries the outbox now: the next time the peer is away,
    /// a new round posts what is still unacknowledged.
    mutating func channelActive() {
        guard epoch != nil else { return }
        epoch = nil
        posted = [:]
        postedBytes = 0
        cursor = 0
    }

    private var hasRoom: Bool { posted.count < Self.maximumItems && postedBytes < Self.maximumBytes }

    private mutating func startRound(now: UInt64, epoch: UInt64) {
        self.epoch = epoch
        cursor = 0
        posted = [:]
        postedBytes = 0
        roundStartedAt = now
    }
}
