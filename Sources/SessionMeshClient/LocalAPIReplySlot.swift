import Foundation

/// Where one waiting caller gets its answer: completed exactly once, by the connection's loop
/// (a reply, or the connection's end) or by the caller's cancellation, whichever comes first.
///
/// Resumes the caller's continuation directly, so a reply costs one resume and no
/// `EventLoopFuture` callbacks (registering those from off the loop costs a hop of its own).
final class LocalAPIReplySlot<Value: Sendable>: @unchecked Sendable {
    private enum State {
        case idle
        case waiting(UnsafeContinuation<Value, any Error>)
        case done(Result<Value, any Error>)
        case resumed
    }

    private let lock = NSLock()
    private var state = State.idle

    /// Suspends until the slot is completed (at once when it already is).
    func wait() async throws -> Value {
        try await withUnsafeThrowingContinuation { continuation in
            let ready: Result<Value, any Error>? = lock.withLock {
                if case .done(let result) = state {
                    state = .resumed
                    return result
                }
                state = .waiting(continuation)
                return nil
            }
            if let ready { continuation.resume(with: ready) }
        }
    }

    /// Completes the slot; later completions are ignored.
    func complete(_ result: Result<Value, any Error>) {
        let continuation: UnsafeContinuation<Value, any Error>? = lock.withLock {
            switch state {
            case .idle:
                state = .done(result)
                return nil
            case .waiting(let continuation):
                state = .resumed
                return continuation
            case .done, .resumed:
                return nil
            }
        }
        continuation?.resume(with: result)
    }

    /// Completes the slot with `value`.
    func succeed(_ value: Value) { complete(.success(value)) }

    /// Completes the slot with `error`.
    func fail(_ error: any Error) { complete(.failure(error)) }
}
