import Foundation
import NIOCore

/// Per-connection state the data operations need: the channel to write events to, the
/// attachments to end when the client goes away, and the sinks waiting for their attach reply.
final class LocalAPIConnectionContext: @unchecked Sendable {
    /// Attachments one connection may have: they end only with the connection (there is no
    /// detach), and each one gets its own copy of every event of its features.
    static let maximumAttachments = 256

    let channel: any Channel
    private var reservedAttachments = 0
    /// Request ids of this connection's attaches: their events carry that id.
    private var attachRequestIDs: Set<UInt32> = []
    private let lock = NSLock()
    private var attachmentIDs: [UInt64] = []
    private var waitingSinks: [UInt32: LocalAPIEventSink] = [:]
    private var sinks: [LocalAPIEventSink] = []
    private var closed = false

    /// The connection's handler, which takes events on the event loop without the trip
    /// through the pipeline (set and read on the loop only).
    weak var eventWriter: LocalAPIConnectionHandler?

    init(channel: any Channel) { self.channel = channel }

    /// What `reserveAttachment` found.
    enum AttachReservation { case reserved, full, requestIDInUse }

    /// Reserves room for one more attachment, made by the attach request `requestID`: `.full`
    /// when the connection has `maximumAttachments`, `.requestIDInUse` when an earlier attach on
    /// it used the same id (events carry the attach's id, so the app could not tell the two
    /// attachments' events apart, and the first one's events would wait for ever for its reply).
    func reserveAttachment(requestID: UInt32) -> AttachReservation {
        lock.withLock {
            guard !attachRequestIDs.contains(requestID) else { return .requestIDInUse }
            guard reservedAttachments < Self.maximumAttachments else { return .full }
            reservedAttachments += 1
            attachRequestIDs.insert(requestID)
            return .reserved
        }
    }

    /// A new sink for the attach request `requestID`; it holds events until `replyWritten`.
    func makeSink(requestID: UInt32) -> LocalAPIEventSink {
        let sink = LocalAPIEventSink(channel: channel, requestID: requestID, connection: self)
        lock.withLock {
            waitingSinks[requestID] = sink
            sinks.append(sink)
        }
        return sink
    }

    /// Records an attachment; false when the connection already closed (detach it at once).
    func attached(_ id: UInt64) -> Bool {
        lock.withLock {
            guard !closed else { return false }
            attachmentIDs.append(id)
            return true
        }
    }

    /// On the event loop, after the reply to `requestID` was written: opens its sink, if any.
    func replyWritten(requestID: UInt32) {
        let sink = lock.withLock { waitingSinks.removeValue(forKey: requestID) }
        sink?.open()
    }

    /// Every sink of this connection (events were shed: their inbox items must be offered again).
    func allSinks() -> [LocalAPIEventSink] { lock.withLock { closed ? [] : sinks } }

    /// The connection closed: returns the attachments to end.
    func close() -> [UInt64] {
        lock.withLock {
            closed = true
            waitingSinks.removeAll()
            sinks.removeAll()
            defer { attachmentIDs.removeAll() }
            return attachmentIDs
        }
    }
}
