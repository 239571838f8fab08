/// What one channel connection may hold of this daemon's writes towards its peer, and what it
/// holds now: the bytes handed to NIO whose write has not completed (NIO completes a write once
/// the kernel's send buffer took it), and how many writes they are.
///
/// Each write is charged its bytes plus ``perWriteCharge``: NIO keeps every pending write with
/// a buffer, a promise and a callback, so a flood of small replies costs far more memory than
/// its bytes. Two limits apply to the charge (`ChannelTuning.outboundReplyBytes` and
/// `outboundBytes`):
///
/// - Above the reply limit, what the peer asked for (ping and keepalive replies, acks, snapshot
///   replies: `Traffic.reply`) is dropped: a peer that does not read gets no more answers.
///   While the charge stays above it, the connection counts as stalled from the instant it
///   went over (`overSince`); the node closes a connection stalled for longer than
///   `stallNanoseconds`.
/// - At the hard limit, this daemon's own traffic (`Traffic.own`) is refused too and the node
///   closes the channel at once: the peer gets what it missed at its next activation (reliable
///   items stay in the outbox).
///
/// The decision is taken before a message is sealed (a sealed frame must be written, or the
/// stream's nonces would skip one), so the charge can exceed a limit by one message at most.
/// A value type without I/O: the node feeds it writes and their completions.
struct OutboundBudget: Sendable, Equatable {
    /// Whose write it is.
    enum Traffic: Sendable, Equatable {
        /// A reply the peer asked for (ping, keepalive, ack, snapshot reply): dropped while the
        /// peer does not drain.
        case reply
        /// This daemon's own traffic (reliable batches, session state, keepalive and rekey
        /// messages): refused only at the hard limit.
        case own
    }

    /// What to do with a write.
    enum Admission: Sendable, Equatable {
        case write
        /// A reply over the reply limit: not written, counted.
        case drop
        /// Own traffic at the hard limit: not written; close the channel.
        case refuse
    }

    /// The charge each write costs on top of its bytes (NIO's pending-write entry, promise,
    /// callback and buffer header, rounded up).
    static let perWriteCharge = 256

    /// Above this charge, replies are dropped and the stall clock runs.
    let replyLimit: Int
    /// At this charge, own traffic is refused and the channel closes.
    let limit: Int
    /// How long the charge may stay above `replyLimit` before the channel closes.
    let stallNanoseconds: UInt64

    /// Bytes written and not completed.
    private(set) var queuedBytes = 0
    /// Writes not completed.
    private(set) var queuedWrites = 0
    /// The highest charge this connection reached.
    private(set) var peakCharge = 0
    /// Monotonic instant the charge went above `replyLimit`; nil while it is at or below.
    private(set) var overSince: UInt64?
    /// The charge went above `replyLimit` since the connection last held nothing (the memory
    /// it held is worth giving back once it drains or closes).
    private(set) var wentOver = false

    init(replyLimit: Int, limit: Int, stallNanoseconds: UInt64) {
        self.replyLimit = replyLimit
        self.limit = max(limit, replyLimit)
        self.stallNanoseconds = stallNanoseconds
    }

    /// What the connection holds, as charged: bytes plus `perWriteCharge` per write.
    var charge: Int { queuedBytes + queuedWrites * Self.perWriteCharge }

    /// Whether a write of `traffic` may go now.
    func admit(_ traffic: Traffic) -> Admission {
        switch traffic {
        case .reply: charge > replyLimit ? .drop : .write
        case .own: charge >= limit ? .refuse : .write
        }
    }

    /// A write of `bytes` was handed to NIO at monotonic `now`.
    mutating func queued(bytes: Int, now: UInt64) {
        queuedBytes += bytes
        queuedWrites += 1
        peakCharge = max(peakCharge, charge)
        if charge > replyLimit, overSince == nil {
            overSince = now
            wentOver = true
        }
    }

    /// A write of `bytes` completed (written to the kernel, or failed); true when that emptied
    /// a connection that had gone over `replyLimit` (once per such spell).
    @discardableResult
    mutating func written(bytes: Int) -> Bool {
        queuedBytes = max(0, queuedBytes - bytes)
        queuedWrites = max(0, queuedWrites - 1)
        if charge <= replyLimit { overSince = nil }
        guard wentOver, queuedWrites == 0 else { return false }
        wentOver = false
        return true
    }

    /// Whether the charge has stayed above `replyLimit` for longer than `stallNanoseconds` at
    /// monotonic `now`.
    func stalled(now: UInt64) -> Bool {
        guard let overSince else { return false }
        return now &- overSince > stallNanoseconds
    }

    /// Seconds the charge has been above `replyLimit` at `now` (0 when it is not).
    func secondsOver(now: UInt64) -> Double {
        overSince.map { Double(now &- $0) / 1e9 } ?? 0
    }
}
