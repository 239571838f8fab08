import Foundation
import MeshLocalAPI
import NIOCore

/// The event sink of one `attach`: turns `DeliveryEvent`s into `event` frames carrying the
/// attach request's id and writes them to the client's connection.
///
/// Writes pass through `LocalAPIConnectionHandler`, which sheds them (counted, reported in
/// `events.dropped`) while the client reads too slowly. Until the attach reply is written the
/// sink holds events (at most `heldLimit`, then sheds), so the reply always comes first.
final class LocalAPIEventSink: DeliveryEventSink, @unchecked Sendable {
    private let channel: any Channel
    let requestID: UInt32
    private let lock = NSLock()
    private var isOpen = false
    private var held: [LocalAPIFrame] = []
    private(set) var heldShed: UInt64 = 0
    /// The inbox items among the events shed before the reply (offered to this sink again).
    private var heldShedInbox: [ShedInboxItem] = []
    /// A flush is queued on the loop (touched on the loop only): events emitted in one burst
    /// share one flush, so one write system call.
    private var flushScheduled = false
    static let heldLimit = 8192

    /// Its connection (events on the loop go straight to the connection's handler).
    private weak var connection: LocalAPIConnectionContext?

    init(channel: any Channel, requestID: UInt32, connection: LocalAPIConnectionContext? = nil) {
        self.channel = channel
        self.requestID = requestID
        self.connection = connection
    }

    func emit(_ event: DeliveryEvent) {
        // The common case, an envelope for an open attachment on the loop: built in place in
        // the connection's frame writer.
        if case .envelope(let from, let inboxID, let redelivery, let mode, let encoded) = event,
           channel.eventLoop.inEventLoop, lock.withLock({ isOpen }), let writer = connection?.eventWriter,
           writer.writeEnvelopeEvent(requestID: requestID, from: from, inboxID: inboxID, redelivery: redelivery,
                                     mode: mode, encoded: encoded) {
            scheduleFlush(on: channel.eventLoop)
            return
        }
        guard let frame = LocalAPIEventFrames.frame(for: event, requestID: requestID) else { return }
        lock.lock()
        if !isOpen {
            if held.count < Self.heldLimit {
                held.append(frame)
            } else {
                heldShed &+= 1
                if case .envelope(_, let inboxID, let redelivery, _, _) = event, inboxID != 0 {
                    heldShedInbox.append(ShedInboxItem(inboxID: inboxID, redelivery: redelivery))
                }
            }
            lock.unlock()
            return
        }
        lock.unlock()
        let loop = channel.eventLoop
        guard loop.inEventLoop else {
            channel.writeAndFlush(frame, promise: nil)
            return
        }
        if connection?.eventWriter?.writeEvent(frame) != true { channel.write(frame, promise: nil) }
        scheduleFlush(on: loop)
    }

    /// On the loop: writes what was emitted so far (the scheduled flush then finds nothing).
    func flushNow() {
        guard channel.eventLoop.inEventLoop else { return }
        _ = connection?.eventWriter?.flushEvents()
    }

    /// Flushes once the loop turn is done (on the loop), so events of one burst share a write.
    private func scheduleFlush(on loop: any EventLoop) {
        guard !flushScheduled else { return }
        flushScheduled = true
        loop.execute {
            self.flushScheduled = false
            if self.connection?.eventWriter?.flushEvents() != true { self.channel.flush() }
        }
    }

    /// Called on the event loop right after the attach reply was written: releases held events
    /// (and reports those shed beyond `heldLimit`).
    func open() {
        lock.lock()
        isOpen = true
        let frames = held
        held = []
        let shed = heldShed, shedInbox = heldShedInbox
        heldShed = 0
        heldShedInbox = []
        lock.unlock()
        for frame in frames { channel.write(frame, promise: nil) }
        channel.flush()
        if shed > 0 { reportShed(shed, inboxItems: shedInbox) }
    }

    /// Adds `count` to the connection's next `events.dropped` report (see `LocalAPIEventsShed`).
    func reportShed(_ count: UInt64) {
        reportShed(count, inboxItems: [])
    }

    private func reportShed(_ count: UInt64, inboxItems: [ShedInboxItem]) {
        guard count > 0 else { return }
        channel.pipeline.triggerUserOutboundEvent(LocalAPIEventsShed(count: count, requestID: requestID, inboxItems: inboxItems),
                                                  promise: nil)
    }
}
