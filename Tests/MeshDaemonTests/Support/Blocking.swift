import Foundation

/// Runs a blocking call (a `recv` with a timeout, waiting for a process) on its own thread, so
/// it never occupies the cooperative pool that the server under test needs for its requests.
func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Result { try body() })
        }
    }
}
