import MeshLocalAPI

/// Errors of the data operations, as the local API reports them (`code` + `message`).
///
/// The codes are MeshLocalAPI's `LocalAPIDataError` constants, listed in docs/LOCAL-API.md
/// (§ data operations).
enum DeliveryError {
    static func queueFull(_ detail: String) -> ControlError {
        ControlError(code: LocalAPIDataError.queueFull, message: detail)
    }
    static func notFound(_ what: String) -> ControlError {
        ControlError(code: LocalAPIDataError.notFound, message: what)
    }
    static func sessionClosed(_ id: String) -> ControlError {
        ControlError(code: LocalAPIDataError.sessionClosed, message: "session \(id) is closed; a new session needs a new UUID")
    }
    static func store(_ error: any Error) -> ControlError {
        // A value the store cannot hold (a revision or sequence above 2^63−1) is the caller's
        // mistake, not a failing disk: say which value, as invalid-argument.
        if let error = error as? StoreError, error.code == .invalidArgument {
            return ControlError(code: LocalAPIErrorBody.Code.invalidArgument, message: error.detail)
        }
        return ControlError(code: LocalAPIDataError.storeFailed, message: "the daemon's durable store failed: \(error)")
    }
    static let unavailable = ControlError(code: LocalAPIDataError.deliveryUnavailable,
                                          message: "this daemon runs without the delivery router (no data operations)")
}

extension DeliveryError {
    static func tooManyAttachments(_ limit: Int) -> ControlError {
        ControlError(code: LocalAPIDataError.tooManyAttachments,
                     message: "this connection already has \(limit) attachments (they end only with the connection); attach to several features at once, or use another connection")
    }

    static func featureNotAllowed(_ feature: String, uid: UInt32?) -> ControlError {
        ControlError(code: LocalAPIDataError.featureNotAllowed,
                     message: "uid \(uid.map(String.init) ?? "unknown") may not use feature '\(feature)'; see feature_allow in the daemon's config")
    }
}
