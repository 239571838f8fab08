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
