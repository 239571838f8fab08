/// One local uid's share of this device's outbound snapshot slots (`uid_max_slots`,
/// `uid_max_slot_bytes`): a uid whose apps publish snapshots of ever new sessions fills its share
/// and is refused, while other uids' publishes still fit.
extension StoreSlots {
    /// Throws `.full` naming the share when `uid`'s slots plus `adding` pass it. Only what
    /// `adding` raises is checked, so a smaller snapshot always replaces a larger one.
    func checkOutboundShare(of uid: UInt32, adding: QueueTally, operation: String) throws {
        let options = store.options    // plain integers: a copy costs nothing
        let held = store.tallies.outboundSlotsByUID[uid] ?? QueueTally()
        let share = held + adding
        let limit: StoreLimit? =
            if adding.items > 0 && share.items > options.maxOutboundSlotsPerUID { .outboundSlotsPerUID(options.maxOutboundSlotsPerUID) }
            else if adding.bytes > 0 && share.bytes > options.maxOutboundSlotBytesPerUID {
                .outboundSlotBytesPerUID(options.maxOutboundSlotBytesPerUID)
            }
            else { nil }
        guard let limit else { return }
        throw StoreError(code: .full, operation: operation, path: store.path, limit: limit,
                         detail: "uid \(uid) holds its share of the outbound snapshot slots (\(held.items) slots, "
                             + "\(held.bytes) bytes); other uids can still publish")
    }
}
