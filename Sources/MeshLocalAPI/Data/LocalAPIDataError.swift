/// Error codes of the data operations, and helpers building their error bodies.
///
/// The daemon documents when each code is returned in docs/LOCAL-API.md (§ data operations).
public enum LocalAPIDataError {
    /// No such item: `snapshot.latest` with an empty slot, `queue.cancel` of an unknown id.
    public static let notFound = "not-found"
    /// The durable queue (or the disk) is full; nothing already queued was lost. Retry later.
    public static let queueFull = "queue-full"
    /// Reserved: no operation of this daemon version needs an attachment, so none sends it.
    public static let notAttached = "not-attached"
    /// The caller's uid may not use this feature (the daemon's per-uid allow-list).
    public static let featureNotAllowed = "feature-not-allowed"
    /// The session was closed; a new session needs a new UUID.
    public static let sessionClosed = "session-closed"
    /// The daemon's durable store failed (I/O); see its log.
    public static let storeFailed = "store-failed"
    /// The daemon runs without a delivery router.
    public static let deliveryUnavailable = "delivery-unavailable"
    /// No paired device matches the peer given.
    public static let unknownPeer = "unknown-peer"
    /// `snapshot.request` to a named peer without an active channel.
    public static let peerNotActive = "peer-not-active"
    /// `attach` on a connection that already has the most attachments one connection may have
    /// (256, docs/LOCAL-API.md §6); attachments end only with their connection.
    public static let tooManyAttachments = "too-many-attachments"

    /// A `bad-request` error naming the operation: the body does not have the documented shape.
    public static func badRequest(_ operation: LocalAPIOperation, _ detail: String) -> LocalAPIErrorBody {
        LocalAPIErrorBody(code: LocalAPIErrorBody.Code.badRequest, message: "\(operation.name): \(detail)")
    }

    /// An `invalid-argument` error naming the operation: a field is out of range or empty.
    public static func invalidArgument(_ operation: LocalAPIOperation, _ detail: String) -> LocalAPIErrorBody {
        LocalAPIErrorBody(code: LocalAPIErrorBody.Code.invalidArgument, message: "\(operation.name): \(detail)")
    }
}
