import SessionMeshClient

/// Acknowledges inbox items in batches with at most one `inbox.ack` in flight, so a burst of
/// thousands of envelopes costs a handful of round trips.
actor AckBatcher {
    private let client: MeshClient
    private var queue: [UInt64] = []
    private var task: Task<Void, Never>?
    /// Items the daemon confirmed deleted.
    private(set) var acknowledged = 0

    init(client: MeshClient) { self.client = client }

    /// Queues `id` for the next batch.
    func add(_ id: UInt64) {
        queue.append(id)
        if task == nil { task = Task { await self.drain() } }
    }

    /// Waits until every queued id was sent (a failure leaves the item in the daemon's inbox,
    /// to be redelivered on the next attach, marked as a redelivery).
    func flush() async {
        while let task { await task.value }
    }

    private func drain() async {
        while !queue.isEmpty {
            let batch = queue
            queue.removeAll()
            if let count = try? await client.ackInbox(batch) { acknowledged += count }
        }
        task = nil
    }
}
