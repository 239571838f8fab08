/// What ``StoreInbox/receive(from:items:at:storingWhatFits:handedOutFeatures:)`` did with one received item.
///
/// Both outcomes mean the item is safe with this daemon: acknowledge both to the sender.
public enum InboxReceipt: Sendable, Equatable {
    /// New: stored durably, to be delivered to the app.
    case stored(InboxID)
    /// Its event ID was seen before (in the inbox or the seen-set): nothing stored.
    case duplicate
}
