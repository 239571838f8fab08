import MeshCore
import MeshCrypto
@testable import MeshDaemon

/// The receiving side's internal steps, called on the router as a test drives them: each runs
/// on the router and goes to the component that owns the step.
extension DeliveryRouter {
    /// Queues received inbox work, as the message consumer does for a batch or a resend.
    func queueForInbox(_ work: DeliveryInboxWork, from peer: DeviceID) {
        consumer.queueForInbox(work, from: peer)
    }

    /// A realtime item received from `peer` on `path`.
    func realtimeReceived(_ item: DeliveryItem, from peer: DeviceID, path: PingPath) {
        consumer.realtimeReceived(self, item, from: peer, path: path)
    }

    /// Stores the inbox pipeline's backlog, as the inbox consumer does.
    func storeInboxBacklog() async {
        await consumer.storeInboxBacklog(self)
    }
}

/// The hand-out's internal steps, called on the router as a test drives them.
extension DeliveryRouter {
    /// Hands stored entries to `sinks`, as the inbox consumer does after a commit.
    @discardableResult
    func hand(_ entries: [InboxEntry], to sinks: [any DeliveryEventSink]) async -> Bool {
        await handOut.hand(self, entries, to: sinks)
    }

    /// Replays the inbox of `features` to `sink`, as an attach does.
    func replayInbox(features: [String], to sink: any DeliveryEventSink) async {
        await handOut.replayInbox(self, features: features, to: sink)
    }

    /// Ends `sink`'s replay.
    func endReplay(_ sink: any DeliveryEventSink) async {
        await handOut.endReplay(self, sink)
    }

    /// Emits a live event to `sink` (held while its replay runs).
    func emitLive(_ event: DeliveryEvent, to sink: any DeliveryEventSink) {
        handOut.emitLive(self, event, to: sink)
    }

    /// Whether no inbox replay runs.
    func noReplayRuns() -> Bool { handOut.state.replaying.isEmpty }
}
