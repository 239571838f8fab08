/// One local uid's share of the outbox (`uid_max_outbox_items`, `uid_max_outbox_bytes`): a
/// uid whose apps queue for a device that stays offline fills its share and gets `queue-full`,
/// while other uids' sends still find room in the outbox.
extension StoreOutbox {
    /// Throws `.full` naming the uid's share when `uid`'s queued items plus the uncommitted
    /// `adding` (this transaction's items of the uid, the new one included) pass it.
    func checkShare(of uid: UInt32, adding: QueueTally, operation: String) throws {
        let options = store.options    // plain integers: a copy costs nothing
        let queued = store.tallies.outboxByUID[uid] ?? QueueTally()
        let share = queued + adding
        let limit: StoreLimit? =
            if share.items > options.maxOutboxItemsPerUID { .outboxItemsPerUID(options.maxOutboxItemsPerUID) }
            else if share.bytes > options.maxOutboxBytesPerUID { .outboxBytesPerUID(options.maxOutboxBytesPerUID) }
            else { nil }
        guard let limit else { return }
        throw StoreError(code: .full, operation: operation, path: store.path, limit: limit,
                         detail: "uid \(uid) has its share of the outbox queued (\(queued.items) items, \(queued.bytes) bytes, "
                             + "for all devices); other uids can still send")
    }

    /// Deleted rows' sizes summed per owning uid (rows of no uid left out).
    static func byUID(_ rows: [(size: Int, uid: UInt32?)]) -> [UInt32: QueueTally] {
        var byUID: [UInt32: QueueTally] = [:]
        for row in rows {
            guard let uid = row.uid else { continue }
            byUID[uid] = (byUID[uid] ?? QueueTally()) + QueueTally(items: 1, bytes: row.size)
        }
        return byUID
    }
}
