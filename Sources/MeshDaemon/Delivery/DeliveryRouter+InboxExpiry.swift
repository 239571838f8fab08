import Foundation

/// Inbox items of features no app attached: they expire (`inboxUnattachedExpiry`, config key
/// `inbox_expire_unattached_after`), so items for an app that is gone for good do not hold the
/// inbox (and the sending peer's share of it) forever.
extension DeliveryRouter {
    /// The tick runs the expiry every this many rounds (60 s at 100 ms a tick).
    static let inboxExpiryRounds: UInt64 = 600

    /// Deletes inbox items received more than `inboxUnattachedExpiry` ago (on the wall clock)
    /// that no app ever took and whose feature no app has attached now; counts them
    /// (`delivery.inbox.expired`). An expiry of 0 turns it off.
    func expireUnattachedInbox() async {
        let maxAge = options.inboxUnattachedExpiry
        guard maxAge > 0, maxAge.isFinite else { return }
        let attached = Set(attachments.announcedFeatures), store = self.store
        let before = wallNow().addingTimeInterval(-maxAge)
        do {
            let expired = try await worker.run {
                try store.inbox.expire(receivedBefore: before, keeping: { attached.contains($0) })
            }
            guard !expired.isEmpty else { return }
            counters.inboxExpired &+= UInt64(expired.count)
            logger.notice("expired inbox items of features no app attached",
                          metadata: ["count": "\(expired.count)", "features": "\(Set(expired).count)"])
        } catch {
            noteStoreError(error, "could not expire inbox items")
        }
    }

    /// The oldest `limit` inbox items for `meshctl queue --inbox` (drop one with `acknowledgeInbox`).
    public func inboxItems(limit: Int) async throws -> [InboxSummary] {
        let store = self.store, now = wallNow()
        return try await worker.call { try store.inbox.list(limit: limit, at: now) }
    }
}
