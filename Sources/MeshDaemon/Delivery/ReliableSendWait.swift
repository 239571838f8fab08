import MeshCore
import MeshCrypto

/// A reliable send started without a task (`DeliveryRouter.enqueueReliableNow`), waiting for the
/// commit of its item for each target. Touched only on the router's loop.
final class ReliableSendWait {
    let peers: [DeviceID]
    let reply: (Result<DeliverySendOutcome, MeshError>) -> Void
    private var results: [Result<OutboxReceipt, StoreError>?]
    private var left: Int

    init(peers: [DeviceID], reply: @escaping (Result<DeliverySendOutcome, MeshError>) -> Void) {
        self.peers = peers
        self.reply = reply
        self.results = Array(repeating: nil, count: peers.count)
        self.left = peers.count
    }

    /// Notes the commit result for target `index`; returns all results once the last is in.
    func record(_ result: Result<OutboxReceipt, StoreError>, at index: Int) -> [Result<OutboxReceipt, StoreError>]? {
        guard results[index] == nil else { return nil }
        results[index] = result
        left -= 1
        return left == 0 ? results.map { $0! } : nil
    }
}
