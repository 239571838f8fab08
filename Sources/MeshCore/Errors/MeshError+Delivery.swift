// The delivery router's failures with fixed wording (data operations, docs/LOCAL-API.md).

extension MeshError {
    /// The durable queue (or the disk) is full.
    public static func queueFull(_ detail: String) -> MeshError {
        MeshError(.queueFull, detail)
    }
    /// No such item; `what` says which.
    public static func notFound(_ what: String) -> MeshError {
        MeshError(.notFound, what)
    }
    /// The session was closed.
    public static func sessionClosed(_ id: String) -> MeshError {
        MeshError(.sessionClosed, "session \(id) is closed; a new session needs a new UUID")
    }
    /// The daemon runs without a delivery router.
    public static let deliveryUnavailable = MeshError(
        .deliveryUnavailable, "this daemon runs without the delivery router (no data operations)")
    /// The connection already has `limit` attachments.
    public static func tooManyAttachments(_ limit: Int) -> MeshError {
        MeshError(.tooManyAttachments,
                  "this connection already has \(limit) attachments (they end only with the connection); attach to several features at once, or use another connection")
    }
    /// The uid may not use `feature`.
    public static func featureNotAllowed(_ feature: String, uid: UInt32?) -> MeshError {
        MeshError(.featureNotAllowed,
                  "uid \(uid.map(String.init) ?? "unknown") may not use feature '\(feature)'; see feature_allow in the daemon's config")
    }
}
