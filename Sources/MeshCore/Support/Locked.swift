import Foundation

/// A value behind a lock, for state that several threads touch and synchronous code must read.
///
/// `@unchecked Sendable`: the value is only touched under `lock`. A pthread mutex (`NSLock`)
/// rather than `Synchronization.Mutex`, whose futex ThreadSanitizer cannot see: `make tsan`
/// would report every access behind a contended one as a race.
public final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    public init(_ value: Value) { self.value = value }

    /// Runs `body` with exclusive access to the value.
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
