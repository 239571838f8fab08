import NIOCore

/// The `DeliveryEventSink` of one attachment: hands each event, with the attach request's id
/// its `event` frames carry, to the connection's handler on its loop (`LocalAPIEventLink`),
/// where the connection's one event path decides what becomes of it
/// (`LocalAPIConnectionState.eventArrived`): held until the attach reply is written, shed
/// while the client reads too slowly, or written.
final class LocalAPIEventSink: DeliveryEventSink {
    /// The attach request whose events these are.
    let requestID: UInt32
    private let link: LocalAPIEventLink

    init(requestID: UInt32, link: LocalAPIEventLink) {
        self.requestID = requestID
        self.link = link
    }

    func emit(_ event: DeliveryEvent) { link.deliver(.event(event), requestID: requestID) }

    /// Adds `count` to the connection's next `events.dropped` report.
    func reportShed(_ count: UInt64) {
        guard count > 0 else { return }
        link.deliver(.shed(count), requestID: requestID)
    }

    /// On the loop: writes what was emitted so far (the scheduled flush then finds nothing).
    func flushNow() { link.flushNow() }
}

/// The way from a connection's sinks to its handler: on the handler's loop, in call order. A
/// sink called off the loop hops onto it. Holds the handler weakly: events for a connection
/// that ended are dropped.
final class LocalAPIEventLink: Sendable {
    /// What a sink hands over.
    enum Delivery: Sendable {
        case event(DeliveryEvent)
        /// This many events were shed before they reached the connection.
        case shed(UInt64)
    }

    /// Boxes the weak reference (read and written on the loop only).
    private final class Target {
        weak var handler: LocalAPIConnectionHandler?
        init(_ handler: LocalAPIConnectionHandler) { self.handler = handler }
    }

    let loop: any EventLoop
    private let target: NIOLoopBound<Target>

    /// Links to `handler`; call on `loop`.
    init(handler: LocalAPIConnectionHandler, loop: any EventLoop) {
        self.loop = loop
        target = NIOLoopBound(Target(handler), eventLoop: loop)
    }

    func deliver(_ delivery: Delivery, requestID: UInt32) {
        guard loop.inEventLoop else {
            loop.execute { self.target.value.handler?.received(delivery, requestID: requestID) }
            return
        }
        target.value.handler?.received(delivery, requestID: requestID)
    }

    /// Flushes the connection's events now (on the loop only; off it the scheduled flush does).
    func flushNow() {
        guard loop.inEventLoop else { return }
        target.value.handler?.flushEventsNow()
    }
}
