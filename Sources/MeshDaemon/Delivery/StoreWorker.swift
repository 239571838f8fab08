import Foundation
import MeshCore

/// Runs blocking `DeliveryStore` calls on one dedicated serial queue, so an fsync never blocks
/// the router actor or a thread of the Swift concurrency pool. Inline (the deterministic
/// simulator): on the caller, with no queue or thread.
final class StoreWorker: Sendable {
    private let queue: DispatchQueue?

    /// `inline`: run each body on the caller (no thread).
    init(inline: Bool = false) {
        queue = inline ? nil : DispatchQueue(label: "mesh-delivery-store")
    }

    /// Runs `body` on the worker queue and returns its result. Suspends on the caller's executor
    /// (`nonisolated(nonsending)`): a caller on the router's loop does not hop to the shared pool.
    nonisolated(nonsending) func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        guard let queue else { return try body() }
        return try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }
}

extension StoreWorker {
    /// `run`, for calls whose failure the caller reports: an error is thrown as `MeshError.store`.
    nonisolated(nonsending) func call<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        do {
            return try await run(body)
        } catch {
            throw MeshError.store(error)
        }
    }
}
