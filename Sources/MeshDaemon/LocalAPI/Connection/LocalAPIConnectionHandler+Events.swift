import MeshLocalAPI
import NIOCore

/// The event path and the frames the handler writes: every event for one of the connection's
/// attachments arrives here from its `LocalAPIEventSink`, is judged by the state
/// (`eventArrived`) and, when it is to be written, goes straight into the frame writer's
/// buffer.
extension LocalAPIConnectionHandler {
    /// Shed inbox items offered again per round. Offering all of a long backlog at once overran
    /// the socket again and shed most of it anew (≈ 5 rounds per item in the 8 KiB test); in
    /// rounds, the next starts when the last was handed and the client still keeps up.
    static let reofferRound = 64

    /// What a sink of the attach request `requestID` handed over, on the loop.
    func received(_ delivery: LocalAPIEventLink.Delivery, requestID: UInt32) {
        switch delivery {
        case .event(let event):
            offer(event, requestID: requestID)
        case .shed(let count):
            // Live realtime envelopes (gone), or events the router held back during a replay.
            eventsShed(count, requestID: requestID, inboxItems: [])
        }
    }

    /// Writes `event` for the attachment `requestID` if the state lets it through.
    private func offer(_ event: DeliveryEvent, requestID: UInt32) {
        switch state.eventArrived(event, requestID: requestID) {
        case .write:
            guard let output else { return }
            writeEvent(event, requestID: requestID, output: output)
            if state.framesWritten(inRead: false) == .endOfTurn { scheduleFlush() }
        case .shed:
            counters.add(.eventsShed)
        case .waitsInOrder:
            counters.add(.eventsHeldForOrder)
        case .held, .dropped:
            break
        }
    }

    /// `count` events of the attachment `requestID` were shed before they reached the
    /// connection: counted, reported now or when the client catches up.
    private func eventsShed(_ count: UInt64, requestID: UInt32, inboxItems: [ShedInboxItem]) {
        counters.add(.eventsShed, count)
        if let report = state.eventsShedElsewhere(count, requestID: requestID, inboxItems: inboxItems) {
            writeShedReport(report)
        }
        offerShedInbox()
    }

    /// The reply to an attach was written (or it failed): its held events follow it.
    func attachAnswered(_ start: LocalAPIStart, succeeded: Bool) {
        let requestID = start.pending.requestID
        guard let held = state.attachAnswered(requestID: requestID, reservation: start.attach, succeeded: succeeded) else { return }
        for event in held.events { offer(event, requestID: requestID) }
        if held.shed > 0 { eventsShed(held.shed, requestID: requestID, inboxItems: held.shedInbox) }
    }

    /// The router's end of a datagram burst: write out the events emitted so far.
    func flushEventsNow() {
        guard state.takeFlush(), let output else { return }
        output.writer.flush(context: output.context)
    }

    /// Flushes once the current loop turn is done, so frames written together share a write.
    func scheduleFlush() {
        guard let context else { return }
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let this = handler.value
            guard this.state.scheduledFlushRuns(), let output = this.output else { return }
            output.writer.flush(context: output.context)
        }
    }

    // MARK: - Frames

    /// An event frame, built in place in the writer's buffer (an envelope without a body
    /// buffer of its own: the common case, once per delivered message).
    private func writeEvent(_ event: DeliveryEvent, requestID: UInt32,
                            output: (writer: LocalAPIFrameWriter, context: ChannelHandlerContext)) {
        if case .envelope(let from, let inboxID, let redelivery, let mode, let encoded) = event {
            output.writer.appendFrame(kind: .event, operation: LocalAPIOperation.envelopeEvent, flags: .binaryBody,
                                      requestID: requestID,
                                      bodyLength: LocalAPIEventFrames.envelopeBodyLength(from: from, encoded: encoded),
                                      context: output.context) { body in
                LocalAPIEventFrames.writeEnvelopeBody(from: from, inboxID: inboxID, redelivery: redelivery, mode: mode,
                                                      encoded: encoded, to: &body)
            }
            return
        }
        guard let frame = LocalAPIEventFrames.frame(for: event, requestID: requestID) else { return }
        output.writer.append(frame, context: output.context)
    }

    /// Writes an `events.dropped` event with `count`, flushed at once.
    func writeShedReport(_ count: UInt64) {
        writeFrame(.event, .eventsDropped, requestID: 0, json: EventsDroppedEvent(dropped: count))
    }

    /// Writes a frame with a JSON body, flushed at once (errors and reports: rare, and the
    /// client waits for them).
    func writeFrame(_ kind: LocalAPIFrame.Kind, _ operation: LocalAPIOperation, requestID: UInt32, json: some Encodable) {
        guard let output else { return }
        let body = (try? LocalAPIJSON.encode(json)) ?? ByteBuffer()
        output.writer.append(LocalAPIFrame(kind: kind, operation: operation, requestID: requestID, body: body),
                             context: output.context)
        output.writer.flush(context: output.context)
    }

    /// Writes an error frame for the request `requestID`.
    func writeError(_ error: LocalAPIErrorBody, operation: LocalAPIOperation, requestID: UInt32) {
        writeFrame(.error, operation, requestID: requestID, json: error)
    }

    // MARK: - Shed inbox items

    /// Offers the next round of shed inbox items to their attachments, while the client keeps
    /// up and no round runs; items of attachments that ended are forgotten (the next attach
    /// replays the inbox). Called whenever the flow state may have changed, and when a round
    /// was handed.
    func offerShedInbox() {
        guard !state.shedInbox.isEmpty else { return }
        guard let router = dispatcher.router, let connection, let context else {
            state.shedInbox.forgetAll()
            return
        }
        guard let round = state.takeShedInboxRound(room: Self.reofferRound, sink: { connection.sink(requestID: $0) }) else { return }
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let loop = context.eventLoop
        router.spawnTracked { router in
            for (sink, items) in round { await router.reoffer(items, to: sink) }
            // After the flush the round's events scheduled, so writability is up to date.
            loop.execute {
                handler.value.state.shedInboxRoundHanded()
                handler.value.offerShedInbox()
            }
        }
    }
}
