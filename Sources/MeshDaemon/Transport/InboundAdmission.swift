/// An accepted stream path that passed the rate limit and the unauthenticated cap.
///
/// Until the node marks it authenticated it counts against the cap, and a deadline the node
/// keeps closes it when it has not authenticated in time.
struct InboundAdmission: Sendable {
    let id: UInt64
    let path: any ChannelPath
    /// Where it comes from (its `sourceKey` is the rate-limit key).
    var source: PathAddress { path.remote }
}
