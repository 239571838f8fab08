/// An inbox item handed to an attachment that its connection shed before the app saw it (a
/// slow reader): `DeliveryRouter.reoffer(_:to:)` offers it to that attachment again.
public struct ShedInboxItem: Sendable, Equatable {
    /// The item's inbox id.
    public var inboxID: Int64
    /// The redelivery mark it was handed with; the second offer carries the same mark (the app
    /// never saw the first).
    public var redelivery: Bool

    /// Creates an item.
    public init(inboxID: Int64, redelivery: Bool) {
        self.inboxID = inboxID
        self.redelivery = redelivery
    }
}
