import Foundation

/// One write handed to ``StoreGroupCommitter``.
enum GroupWrite: Sendable {
    case outbox(peer: String, item: OutboxItem)
    case inbox(peer: String, item: InboxItem, at: Date)
    /// The peer daemon stored everything up to `upTo`: delete those outbox items.
    case acknowledgeOutbox(peer: String, upTo: UInt64)
}

/// The outcome of one ``GroupWrite``.
enum GroupWriteResult: Sendable {
    case outbox(OutboxReceipt)
    case inbox(InboxReceipt)
    /// How many outbox items an `acknowledgeOutbox` deleted.
    case acknowledged(Int)
}

extension DeliveryStore {
    /// Commits writes of many callers in one transaction (one fsync), in order.
    ///
    /// A write refused by a configured limit fails alone (it wrote nothing); any other error
    /// (disk full, I/O) rolls the whole transaction back and fails every write but the outbox
    /// deletes, which are then tried once more on their own.
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
                                let receipt = try outbox.insert(item, peer: peer, db: db, batch: &batch,
                                                               operation: "enqueue outbox item for peer \(peer)")
                                results.append(.success(.outbox(receipt)))
                            case .inbox(let peer, let item, let time):
                                let receipt = try inbox.insert(item, peer: peer, at: time, db: db, batch: &batch,
                                                               operation: "store received item from peer \(peer)")
                                results.append(.success(.inbox(receipt)))
                            case .acknowledgeOutbox(let peer, let upTo):
                                let removed = try outbox.deleteAcknowledged(peer: peer, upTo: upTo, db: db,
                                                                            byUID: &batch.outboxRemovedByUID,
                                                                            operation: "acknowledge outbox for peer \(peer)")
                                batch.outboxRemoved[peer] = (batch.outboxRemoved[peer] ?? QueueTally()) + removed
                                results.append(.success(.acknowledged(removed.items)))
                            }
                        } catch let error as StoreError where error.code == .full && error.isConfiguredLimit {
                            results.append(.failure(error))
                        }
                    }
                    try outbox.saveSequences(db: db, batch: batch, operation: operation)
                    return results
                }
                tallies.apply(batch)
                return results
            }
        } catch let error as StoreError {
            return failed(writes, with: error)
        } catch {
            return failed(writes, with: StoreError(code: .internalError, operation: operation, path: path, detail: "\(error)"))
        }
    }

    /// The group rolled back: its writes fail with `error`, except the outbox deletes, which run
    /// again on their own. They free space, so on a full disk they must not wait for room that
    /// only they can make (``StoreOutbox/acknowledge(peer:upTo:)`` gives up the space reserve).
    private func failed(_ writes: [GroupWrite], with error: StoreError) -> [Result<GroupWriteResult, StoreError>] {
        writes.map { write in
            guard case .acknowledgeOutbox(let peer, let upTo) = write else { return .failure(error) }
            do {
                return .success(.acknowledged(try outbox.acknowledge(peer: peer, upTo: upTo)))
            } catch let error as StoreError {
                return .failure(error)
            } catch {
                return .failure(StoreError(code: .internalError, operation: "acknowledge outbox for peer \(peer)", path: path, detail: "\(error)"))
            }
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
