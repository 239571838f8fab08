/// What one open transaction added, applied to ``StoreTallies`` only after it commits.
struct StoreWriteBatch {
    /// New last sequence of each peer whose outbox grew.
    var lastSequence: [String: UInt64] = [:]
    /// Outbox items and bytes added per peer.
    var outboxAdded: [String: QueueTally] = [:]
    /// Outbox items and bytes added over all peers.
    var outboxTotalAdded = QueueTally()
    /// Outbox items and bytes added per owning local uid.
    var outboxAddedByUID: [UInt32: QueueTally] = [:]
    /// Outbox items and bytes deleted per owning local uid.
    var outboxRemovedByUID: [UInt32: QueueTally] = [:]
    /// Inbox items and bytes added.
    var inboxAdded = QueueTally()
    /// Inbox items and bytes added per sending peer.
    var inboxAddedByPeer: [String: QueueTally] = [:]
    /// Outbox items and bytes deleted per peer (acknowledged by the peer daemon).
    var outboxRemoved: [String: QueueTally] = [:]
}

extension StoreTallies {
    mutating func apply(_ batch: StoreWriteBatch) {
        for (peer, last) in batch.lastSequence { lastSequence[peer] = last }
        for (peer, added) in batch.outboxAdded { addOutbox(peer: peer, added) }
        inbox = inbox + batch.inboxAdded
        for (peer, added) in batch.inboxAddedByPeer { addInbox(peer: peer, added) }
        for (peer, removed) in batch.outboxRemoved { removeOutbox(peer: peer, removed) }
        for (uid, added) in batch.outboxAddedByUID { addOutbox(uid: uid, added) }
        removeOutbox(byUID: batch.outboxRemovedByUID)
    }
}
