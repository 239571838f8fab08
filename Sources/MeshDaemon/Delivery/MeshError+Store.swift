import MeshCore

extension MeshError {
    /// The error a failed store call becomes. A value the store cannot hold (a revision or
    /// sequence above 2^63−1) is the caller's mistake, not a failing disk: it says which value,
    /// as `invalidArgument`; anything else is `storeFailed`.
    static func store(_ error: any Error) -> MeshError {
        if let error = error as? StoreError, error.code == .invalidArgument {
            return MeshError(.invalidArgument, error.detail)
        }
        return MeshError(.storeFailed, "the daemon's durable store failed: \(error)")
    }
}
