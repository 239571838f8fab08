import Foundation

/// One write handed to ``StoreGroupCommitter``.
enum GroupWrite: Sendable {
    case outbox(peer: String, item: OutboxItem)
    case inbox(peer: String, item: InboxItem, at: Date)
}

/// The outcome of one ``GroupWrite``.
enum GroupWriteResult: Sendable {
    case outbox(OutboxReceipt)
    case inbox(InboxReceipt)
}

extension DeliveryStore {
    /// Commits writes of many callers in one transaction (one fsync), in order.
    ///
    /// A write refused by a configured limit fails alone (it wrote nothing); any other error
    /// (disk full, I/O) rolls the whole transaction back and fails every write.
    func commitGroup(_ writes: [GroupWrite]) -> [Result<GroupWriteResult, StoreError>] {
        let operation = "group commit of \(writes.count) writes"
        do {
            return try withConnection { db in
                var batch = StoreWriteBatch()
                let results = try db.transaction(operation) {
                    var results: [Result<GroupWriteResult, StoreError>] = []
                    results.reserveCapacity(writes.count)
                    for write in writes {
                        do {
                            switch write {
                            case .outbox(let peer, let item):
                                let receipt = try insertOutbox(item, peer: peer, db: db, batch: &batch,
                                                               operation: "enqueue outbox item for peer \(peer)")
                                results.append(.success(.outbox(receipt)))
                            case .inbox(let peer, let item, let time):
                                let receipt = try insertInbox(item, peer: peer, at: time, db: db, batch: &batch,
                                                              operation: "store received item from peer \(peer)")
                                results.append(.success(.inbox(receipt)))
                            }
                        } catch let error as StoreError where error.code == .full && error.isConfiguredLimit {
                            results.append(.failure(error))
                        }
                    }
                    try finishOutbox(db: db, batch: batch, operation: operation)
                    return results
                }
                tallies.apply(batch)
                return results
            }
        } catch let error as StoreError {
            return writes.map { _ in .failure(error) }
        } catch {
            let wrapped = StoreError(code: .internalError, operation: operation, path: path, detail: "\(error)")
            return writes.map { _ in .failure(wrapped) }
        }
    }
}

extension StoreError {
    /// A `.full` raised by a configured item/byte limit, checked before anything was written.
    var isConfiguredLimit: Bool {
        switch limit {
        case .none, .disk?, .databaseSize?: false
        default: true
        }
    }

    /// SQLite found no room to write (a full disk, or the configured file-size ceiling), as
    /// opposed to a queue limit of the store's own.
    var isFileFull: Bool {
        switch limit {
        case .disk?, .databaseSize?: code == .full
        default: false
        }
    }
}
