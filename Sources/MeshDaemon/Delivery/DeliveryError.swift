/// Errors of the data operations, as the local API reports them (`code` + `message`).
///
/// Every code is listed in docs/LOCAL-API.md (§ data operations).
enum DeliveryError {
    static func queueFull(_ detail: String) -> ControlError {
        ControlError(code: "queue-full", message: detail)
    }
    static func notFound(_ what: String) -> ControlError {
        ControlError(code: "not-found", message: what)
    }
    static func sessionClosed(_ id: String) -> ControlError {
        ControlError(code: "session-closed", message: "session \(id) is closed; a new session needs a new UUID")
    }
    static func store(_ error: any Error) -> ControlError {
        ControlError(code: "store-failed", message: "the daemon's durable store failed: \(error)")
    }
    static let unavailable = ControlError(code: "delivery-unavailable",
                                          message: "this daemon runs without the delivery router (no data operations)")
}

extension DeliveryError {
    static func featureNotAllowed(_ feature: String, uid: UInt32?) -> ControlError {
        ControlError(code: "feature-not-allowed",
                     message: "uid \(uid.map(String.init) ?? "unknown") may not use feature '\(feature)'; see feature_allow in the daemon's config")
    }
}
