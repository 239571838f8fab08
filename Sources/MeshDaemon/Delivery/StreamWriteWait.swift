import Synchronization

/// A stream write's wait (`DeliveryRouter.send`): resumed once, by whichever comes first, the
/// write's completion or the cancellation of the awaiting task (which may come before the
/// continuation exists). The router cancels its tasks when it stops, and a peer that does not
/// read its connection must not hold that up.
final class StreamWriteWait: Sendable {
    private let state = Mutex<(continuation: CheckedContinuation<Bool, Never>?, result: Bool?)>((nil, nil))

    /// The continuation to resume (at once when the result is known already).
    func set(_ continuation: CheckedContinuation<Bool, Never>) {
        let early: Bool? = state.withLock { state in
            if let result = state.result { return result }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(returning: early) }
    }

    /// The write completed (true: it succeeded) or the task was cancelled (false).
    func resume(_ result: Bool) {
        let continuation: CheckedContinuation<Bool, Never>? = state.withLock { state in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: result)
    }
}
