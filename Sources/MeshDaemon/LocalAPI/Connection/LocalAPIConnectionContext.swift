import Foundation

/// What a connection's requests share with the tasks that perform them: the sinks of its
/// attachments, and the attachments to end when the client goes away. Locked, since an attach
/// may be performed off the connection's loop.
final class LocalAPIConnectionContext: @unchecked Sendable {
    /// Where the connection's sinks hand their events (the connection's handler, on its loop).
    let events: LocalAPIEventLink
    private let lock = NSLock()
    private var attachmentIDs: [UInt64] = []
    private var sinks: [UInt32: LocalAPIEventSink] = [:]
    private var closed = false

    init(events: LocalAPIEventLink) { self.events = events }

    /// A new sink for the attach request `requestID` (whose room the connection reserved).
    func makeSink(requestID: UInt32) -> LocalAPIEventSink {
        let sink = LocalAPIEventSink(requestID: requestID, link: events)
        lock.withLock { if !closed { sinks[requestID] = sink } }
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

    /// The sink of the attach request `requestID`, while the connection is open.
    func sink(requestID: UInt32) -> LocalAPIEventSink? { lock.withLock { sinks[requestID] } }

    /// The connection closed: returns the attachments to end.
    func close() -> [UInt64] {
        lock.withLock {
            closed = true
            sinks.removeAll()
            defer { attachmentIDs.removeAll() }
            return attachmentIDs
        }
    }
}
