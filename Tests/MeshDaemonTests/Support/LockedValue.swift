import Foundation

/// A value behind a pthread mutex (`NSLock`), for test doubles and probes that several threads
/// touch. Not `Synchronization.Mutex`: ThreadSanitizer cannot see its futex, so `make tsan`
/// would report every access to the value as a race.
final class LockedValue<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    /// Runs `body` with exclusive access to the value.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
