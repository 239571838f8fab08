import NIOCore

/// An accepted TCP connection that passed the rate limit and the unauthenticated cap.
///
/// Until the node marks it authenticated it counts against the cap, and a deadline the node
/// keeps closes it when it has not authenticated in time.
struct InboundAdmission: Sendable {
    let id: UInt64
    let channel: any Channel
    /// Remote IP address text (the rate-limit key).
    let sourceIP: String
}
