import Foundation
import MeshCore

/// Wakes the tasks waiting for something to change, each also woken at its own deadline (a
/// dispatch timer, so a waiter never polls). A waiter passes the generation it saw before it
/// checked its condition, so a change in between is never missed.
final class ChangeSignal: Sendable {
    private struct State {
        var generation: UInt64 = 0
        var nextWaiter: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }
    private let state = Locked(State())

    var generation: UInt64 { state.withLock { $0.generation } }

    /// Records a change and wakes every waiter.
    func notify() {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.generation &+= 1
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in woken { waiter.resume() }
    }

    /// Returns once the generation differs from `seen`, or at `deadline`.
    func wait(after seen: UInt64, until deadline: ContinuousClock.Instant) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let id: UInt64? = state.withLock { state in
                guard state.generation == seen else { return nil }
                state.nextWaiter &+= 1
                state.waiters[state.nextWaiter] = continuation
                return state.nextWaiter
            }
            guard let id else { return continuation.resume() }
            let (seconds, attoseconds) = ContinuousClock.now.duration(to: deadline).components
            let nanoseconds = max(0, Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [self] in
                self.state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
            }
        }
    }
}

extension ChangeSignal {
    /// Awaits `condition` (checked now and after every `notify()`) until `seconds` pass;
    /// returns whether it held.
    func until(_ seconds: Double, _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while true {
            let seen = generation
            if condition() { return true }
            if ContinuousClock.now >= deadline { return false }
            await wait(after: seen, until: deadline)
        }
    }
}
