/// What the router keeps for one sink while its inbox replay runs; all of it ends with the
/// replay (or with the sink's last attachment).
struct SinkReplay: Sendable {
    /// False for a re-offer of shed items (`DeliveryRouter.reoffer`), which reads only those
    /// items: its end leaves a pending hand-out retry in place.
    var readsStore = true
    /// What the sink was given meanwhile, handed to it once the replay is done.
    var deferred: [DeferredDelivery] = []
    /// Live realtime envelopes in `deferred` (at most `maximumDeferredLive`), and those shed
    /// beyond (reported to the sink when the replay ends).
    var liveHeld = 0
    var liveShed: UInt64 = 0
    /// Inbox entries in `deferred` (at most `maximumDeferredInbox`).
    var inboxHeld = 0
    /// The redelivery mark of each inbox entry in `deferred`, by id. A replay page that reads
    /// one of them hands it with this mark: the store's delivery count may already include the
    /// delivery recorded for this very hold (`unrecorded`).
    var heldMarks: [Int64: Bool] = [:]
    /// Inbox entries in `deferred` whose delivery is not recorded in the store yet; it is,
    /// before they are handed (so a crash after they reached the app flags them).
    var unrecorded: [InboxID] = []
    /// Entries were left in the store beyond that bound: the replay takes another pass.
    var passAgain = false
    /// The replay left entries in the store after its last pass: replay again once done.
    var resyncAfter = false
    /// Re-offers of shed items waiting for the replay's end (`reoffer`); resumed when it ends,
    /// also by a detach.
    var waiters: [CheckedContinuation<Void, Never>] = []
    /// The inbox could not be read, or a hand-out not recorded: the replay stopped there. It
    /// ends without handing the inbox entries it holds (they stay in the store, so nothing
    /// overtakes what it could not hand) and another replay follows (`HandOutRetry`).
    var handOutFailed = false
}
