/// What `DeliveryRouter.send` did (the local API's send reply).
public struct DeliverySendOutcome: Sendable, Equatable {
    /// `sent` (datagram out, ack awaited), `queued` (durably in the outbox) or `pending` (in the
    /// pre-activation buffer). With several targets: `queued` if any was queued, else `pending`
    /// if any was buffered, else `sent`.
    public var outcome: String
    /// How many peers were targeted.
    public var peers: Int
}
