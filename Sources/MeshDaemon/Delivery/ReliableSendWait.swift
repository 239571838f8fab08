import MeshCore
import MeshCrypto

/// A reliable send waiting for the commit of its item for each target, and what it then does:
/// the pump of every committed target starts (also when another target failed), and the
/// caller hears `queued` for every target, or the first target's failure (`failure(for:)`).
/// Started without a task (`DeliverySender.enqueueReliableNow`, `enqueueReliable`); touched
/// only on the router's loop.
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

    /// Notes the commit result for target `index` (a second one for it is ignored); true once
    /// the last target's is in.
    func record(_ result: Result<OutboxReceipt, StoreError>, at index: Int) -> Bool {
        guard results[index] == nil else { return false }
        results[index] = result
        left -= 1
        return left == 0
    }

    /// Calls `body` for each target whose item was committed, in target order.
    func forEachCommitted(_ body: (DeviceID, OutboxReceipt) -> Void) {
        for (peer, result) in zip(peers, results) {
            if case .success(let receipt)? = result { body(peer, receipt) }
        }
    }

    /// The first failed target's error, in target order; nil when every target committed.
    var failure: StoreError? {
        for case .failure(let error)? in results { return error }
        return nil
    }

    /// How a reliable send whose item could not be queued fails: a full queue or disk is
    /// refused (`queue-full`, `refused`), anything else a store failure.
    static func failure(for error: any Error) -> (error: MeshError, refused: Bool) {
        if let full = error as? StoreError, full.code == .full { return (MeshError.queueFull(full.description), true) }
        return (MeshError.store(error), false)
    }
}
