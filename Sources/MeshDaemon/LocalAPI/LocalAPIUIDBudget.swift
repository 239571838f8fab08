import Foundation

/// What one local user (uid) may hold of the local API at once: open connections and body
/// bytes of requests running, over all its connections. Without it one process could take
/// every connection (locking `meshctl` and every other app out) or pin
/// `connections × maximumInFlightBytes` of request bodies.
///
/// Shared by every connection (they may live on different event loops), hence the lock. A
/// request of a uid with nothing running may always start, whatever its size (a body is at most
/// 1 MiB); otherwise it starts only within `maximumInFlightBytes`. A connection whose next
/// request does not fit waits (its reading paused) and is woken when the uid's bytes go down.
final class LocalAPIUIDBudget: @unchecked Sendable {
    /// The limits, per uid.
    struct Limits: Sendable, Equatable {
        /// Open connections per uid.
        var maximumConnections: Int
        /// Body bytes of running requests per uid.
        var maximumInFlightBytes: Int
    }

    /// The key for a connection whose credentials could not be read (they share one budget).
    static let unknownUID = UInt32.max

    let limits: Limits
    private let lock = NSLock()
    private var connections: [UInt32: Int] = [:]
    private var bytes: [UInt32: Int] = [:]
    private var waiters: [UInt32: [ObjectIdentifier: @Sendable () -> Void]] = [:]

    init(limits: Limits) { self.limits = limits }

    /// Counts a new connection of `uid`; false when the uid already has its maximum open.
    func openConnection(uid: UInt32) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        let open = connections[uid, default: 0]
        guard open < limits.maximumConnections else { return false }
        connections[uid] = open + 1
        return true
    }

    /// Forgets a connection of `uid` opened with `openConnection`.
    func closeConnection(uid: UInt32) {
        lock.lock()
        defer { lock.unlock() }
        let open = connections[uid, default: 0] - 1
        connections[uid] = open > 0 ? open : nil
    }

    /// Takes `count` bytes for a request of `uid`; false when they do not fit now.
    func reserve(uid: UInt32, bytes count: Int) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        let running = bytes[uid, default: 0]
        guard running == 0 || running + count <= limits.maximumInFlightBytes else { return false }
        bytes[uid] = running + count
        return true
    }

    /// Gives back `count` bytes of `uid` and wakes the connections of `uid` that wait for room.
    func release(uid: UInt32, bytes count: Int) {
        guard count > 0 else { return }
        lock.lock()
        let left = bytes[uid, default: 0] - count
        bytes[uid] = left > 0 ? left : nil
        let woken = waiters.removeValue(forKey: uid)
        lock.unlock()
        woken?.values.forEach { $0() }
    }

    /// Calls `wake` (once) the next time bytes of `uid` are released; at once when none run.
    func waitForRoom(uid: UInt32, waiter: ObjectIdentifier, wake: @escaping @Sendable () -> Void) {
        lock.lock()
        guard bytes[uid, default: 0] > 0 else {
            lock.unlock()
            wake()
            return
        }
        waiters[uid, default: [:]][waiter] = wake
        lock.unlock()
    }

    /// Withdraws a `waitForRoom` (the connection closed).
    func stopWaiting(uid: UInt32, waiter: ObjectIdentifier) {
        lock.lock()
        defer { lock.unlock() }
        waiters[uid]?.removeValue(forKey: waiter)
        if waiters[uid]?.isEmpty == true { waiters[uid] = nil }
    }

    /// Bytes of running requests of `uid` (tests, status).
    func inFlightBytes(uid: UInt32) -> Int {
        lock.lock()
        defer { lock.unlock() }
        return bytes[uid, default: 0]
    }

    /// Open connections of `uid`.
    func connectionCount(uid: UInt32) -> Int {
        lock.lock()
        defer { lock.unlock() }
        return connections[uid, default: 0]
    }
}
