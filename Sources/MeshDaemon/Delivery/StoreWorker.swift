import Foundation

/// Runs blocking `DeliveryStore` calls on one dedicated serial queue, so an fsync never blocks
/// the router actor or a thread of the Swift concurrency pool.
final class StoreWorker: Sendable {
    private let queue = DispatchQueue(label: "mesh-delivery-store")

    /// Runs `body` on the worker queue and returns its result. Suspends on the caller's executor
    /// (`nonisolated(nonsending)`): a caller on the router's loop does not hop to the shared pool.
    nonisolated(nonsending) func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }
}
