import Foundation

/// The sending side of one peer's reliable stream: which outbox items go next, within the
/// window, on which connection, when to start over from the last ack (a new channel, a stall,
/// the receiver's room notice), and which acknowledged items to delete.
///
/// A value inside the router's per-peer state: its mutating methods take what happened and the
/// monotonic time (ns) and return what the router does (read the outbox, send, delete, start a
/// pump). The router's sender does the store and stream I/O (`DeliverySender+Reliable`).
///
///     outbox ──read (after lastSent, ≤ window)──▶ batches on the stream ──▶ peer stores
///        ▲                                                                      │
///        └──────── delete ≤ upTo ◀── cumulative ack upTo (≤ highestSent) ◀──────┘
struct ReliableOutbox: Sendable {
    /// Highest outbox sequence sent in this channel epoch.
    var lastSent: UInt64 = 0
    /// Highest outbox sequence the peer acknowledged (cumulative).
    var lastAcked: UInt64 = 0
    /// Highest outbox sequence sent to the peer in this daemon run: an ack above it is refused.
    var highestSent: UInt64 = 0
    /// Bumped on every restart, so a pump whose read spans one does not advance `lastSent`.
    private(set) var epoch: UInt64 = 0
    /// The stream connection that carried the items sent after `lastAcked` (nil: none sent yet
    /// in this epoch).
    private(set) var sentOnConnection: UInt64?
    private(set) var pumping = false
    private(set) var pumpAgain = false
    private(set) var pumpScheduled = false
    /// Monotonic ns of the last send into an idle window or the last ack progress.
    private(set) var lastProgressAt: UInt64 = 0
    /// Current retry delay, seconds.
    private(set) var retryDelay: Double
    /// Send attempts of unacknowledged sequences in this daemon run.
    private(set) var attempts: [UInt64: Int] = [:]
    /// The next batch is preceded by `reliableResend` (the stream starts over from the last ack).
    private(set) var announceResend = false
    /// Monotonic ns of the last restart the receiver asked for (`reliableRoom`).
    private(set) var lastRoomResendAt: UInt64?
    /// A `reliableRoom` came within 100 ms of the last such restart; the next tick restarts then.
    private(set) var roomResendPending = false
    /// A delete of acknowledged items runs, and the highest ack that came in meanwhile.
    private(set) var deleting = false
    private(set) var deleteNext: UInt64?

    init(retryInitial: Double) {
        retryDelay = retryInitial
    }

    /// Items were sent and not acknowledged yet.
    var hasUnacknowledged: Bool { lastSent > lastAcked }

    /// Starts the stream over from the last ack (a stalled peer, or items in flight on a
    /// connection the channel has left): the next pump resends from there, announcing it.
    mutating func resendFromLastAck() {
        epoch &+= 1
        lastSent = lastAcked
        sentOnConnection = nil
        announceResend = true
    }

    /// A new channel: start over from the last ack, with the initial retry delay.
    mutating func restart(now: UInt64, retryInitial: Double) {
        resendFromLastAck()
        retryDelay = retryInitial
        lastProgressAt = now
    }

    // MARK: - Pumps

    /// A pump wants to run now: true when it may (none runs); false makes the running one loop once more.
    mutating func beginPump() -> Bool {
        if pumping {
            pumpAgain = true
            return false
        }
        pumping = true
        return true
    }

    mutating func endPump() { pumping = false }

    /// A pump should run soon: true when the caller starts one; false when one runs (it loops
    /// once more) or is about to start.
    mutating func wantPump() -> Bool {
        if pumping {
            pumpAgain = true
            return false
        }
        guard !pumpScheduled else { return false }
        pumpScheduled = true
        return true
    }

    /// The pump `wantPump` asked for starts.
    mutating func scheduledPumpStarts() { pumpScheduled = false }

    /// One read of the outbox: the items after `after`, at most `limit`.
    struct Read: Sendable, Equatable {
        var after: UInt64
        var limit: Int
        var epoch: UInt64
    }

    /// A pump's next outbox read: as many items after `lastSent` as the window has room for
    /// (at most 1024); nil when the window is full.
    mutating func nextRead(window: Int) -> Read? {
        pumpAgain = false
        let inFlight = lastSent > lastAcked ? Int(lastSent - lastAcked) : 0
        let room = window - inFlight
        guard room > 0 else { return nil }
        return Read(after: lastSent, limit: min(room, 1024), epoch: epoch)
    }

    /// What a pump does with the entries it read.
    enum PumpStep: Sendable, Equatable {
        /// The stream moved while the read ran, or more was queued meanwhile: read again.
        case readAgain
        /// Nothing to send now (or no connection): the pump ends.
        case done
        /// Send the entries on `connection`, after a `reliableResend(after:)` when `resendAfter` is set.
        case send(connection: UInt64, resendAfter: UInt64?)
    }

    /// The pump read `entries` for `read`. The items after the last ack all go on one
    /// connection: when the peer moved to another (a reconnect the router has not consumed
    /// yet), items sent on the old one may be lost and the next ones would overtake them (the
    /// receiver stores in arrival order), so the stream starts over from the last ack.
    mutating func read(_ entries: [OutboxEntry], for read: Read, connection: @autoclosure () -> UInt64?,
                       now: UInt64) -> PumpStep {
        guard epoch == read.epoch, lastSent == read.after else { return .readAgain }
        guard let last = entries.last else { return pumpAgain ? .readAgain : .done }
        guard let connection = connection() else { return .done }
        if lastSent > lastAcked, let previous = sentOnConnection, previous != connection {
            resendFromLastAck()
            return .readAgain
        }
        sentOnConnection = connection
        if lastSent <= lastAcked { lastProgressAt = now }
        lastSent = last.sequence
        if last.sequence > highestSent { highestSent = last.sequence }
        for entry in entries { attempts[entry.sequence, default: 0] += 1 }
        guard announceResend else { return .send(connection: connection, resendAfter: nil) }
        // Before the first batch of a new start: a receiver that refused a batch stores again
        // from here (what it refused comes again, or was cancelled).
        announceResend = false
        return .send(connection: connection, resendAfter: lastAcked)
    }

    /// Splits entries into batch messages of at most `maximumBytes` payload each (64 bytes of
    /// framing counted per item).
    static func batches(_ entries: [OutboxEntry], maximumBytes: Int) -> [[(sequence: UInt64, item: DeliveryItem)]] {
        var result: [[(sequence: UInt64, item: DeliveryItem)]] = []
        var current: [(sequence: UInt64, item: DeliveryItem)] = []
        var bytes = 0
        for entry in entries {
            let size = entry.item.payload.count + 64
            if !current.isEmpty && bytes + size > maximumBytes {
                result.append(current)
                current = []
                bytes = 0
            }
            current.append((entry.sequence, DeliveryItem(entry)))
            bytes += size
        }
        if !current.isEmpty { result.append(current) }
        return result
    }

    // MARK: - Acks, retries, room

    /// What an ack from the peer does.
    enum Ack: Sendable, Equatable {
        /// At or below the last ack (a duplicate or reordered one): nothing.
        case stale
        /// Above anything sent to the peer in this run: refused (it would delete items the peer
        /// never got and stop the stream).
        case refused
        /// `newlyAcked` more items are acknowledged: delete the outbox up to the ack.
        case delete(newlyAcked: UInt64)
    }

    /// The peer stored everything up to `upTo` durably.
    mutating func acked(upTo: UInt64, now: UInt64, retryInitial: Double) -> Ack {
        guard upTo > lastAcked else { return .stale }
        guard upTo <= highestSent else { return .refused }
        let newly = upTo - lastAcked
        lastAcked = upTo
        if lastSent < upTo { lastSent = upTo }
        lastProgressAt = now
        retryDelay = retryInitial
        attempts = attempts.filter { $0.key > upTo }
        return .delete(newlyAcked: newly)
    }

    /// A delete up to `upTo` is wanted: true when the caller starts it now; false when one runs
    /// (its next round deletes up to the highest ack that came meanwhile).
    mutating func deleteWanted(upTo: UInt64) -> Bool {
        if deleting {
            deleteNext = max(deleteNext ?? 0, upTo)
            return false
        }
        deleting = true
        return true
    }

    /// The running delete finished: where the next one deletes up to, or nil (none runs now).
    mutating func deleteFinished() -> UInt64? {
        guard let next = deleteNext else {
            deleting = false
            return nil
        }
        deleteNext = nil
        return next
    }

    /// A tick: true when the peer has not acknowledged within the retry delay and the stream
    /// starts over from the last ack. The delay then doubles, jittered ×0.75…1.25 by `random`
    /// (drawn only then), up to `retryMaximum` seconds.
    mutating func retryIfStalled(now: UInt64, retryMaximum: Double, using random: inout some RandomNumberGenerator) -> Bool {
        guard lastSent > lastAcked, now > lastProgressAt, Double(now - lastProgressAt) / 1e9 >= retryDelay else { return false }
        resendFromLastAck()
        lastProgressAt = now
        let jitter = Double.random(in: 0.75...1.25, using: &random)
        retryDelay = min(retryMaximum, retryDelay * 2 * jitter)
        return true
    }

    /// What the receiver's room notice (`reliableRoom`) does.
    enum RoomNotice: Sendable, Equatable {
        /// Nothing is unacknowledged: nothing to resend.
        case ignored
        /// Within 100 ms of the last such restart: the next tick restarts (`roomResendPending`).
        case deferred
        /// The stream starts over from the last ack now, with the initial retry delay.
        case restarted
    }

    /// The receiver had refused a batch and has room again: start over from the last ack now,
    /// not at the retry delay (which may have grown to 30 s meanwhile), at most once per 100 ms.
    mutating func roomNotice(now: UInt64, retryInitial: Double) -> RoomNotice {
        guard lastSent > lastAcked else { return .ignored }
        if let last = lastRoomResendAt, now >= last, now - last < 100_000_000 {
            roomResendPending = true
            return .deferred
        }
        roomResendPending = false
        resendFromLastAck()
        lastRoomResendAt = now
        lastProgressAt = now
        retryDelay = retryInitial
        return .restarted
    }
}
