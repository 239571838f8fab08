import Foundation
import NIOCore

/// The open local API connections, so the server can cap their number and close them all on
/// shutdown. Connections live on different event loops, hence the lock.
final class LocalAPIConnectionRegistry: @unchecked Sendable {
    private let lock = NSLock()
    private var channels: [ObjectIdentifier: any Channel] = [:]
    private var closed = false
    private let limit: Int

    init(limit: Int) { self.limit = limit }

    /// Adds a connection; false when the registry is full or shut down.
    func add(_ channel: any Channel) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard !closed, channels.count < limit else { return false }
        channels[ObjectIdentifier(channel)] = channel
        return true
    }

    /// Forgets a closed connection.
    func remove(_ channel: any Channel) {
        lock.lock()
        channels.removeValue(forKey: ObjectIdentifier(channel))
        lock.unlock()
    }

    /// Refuses new connections and returns the open ones.
    func closeAll() -> [any Channel] {
        lock.lock()
        defer { lock.unlock() }
        closed = true
        let open = Array(channels.values)
        channels.removeAll()
        return open
    }

    /// How many connections are open.
    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return channels.count
    }
}
