import Foundation
import NIOCore

/// The accepted TCP connections the listener's async sequence has not handed out yet.
///
/// NIO's async server channel drops a connection it accepted after its sequence ended (the
/// listener closing, swift-nio #2637); the connection's writer is then released without being
/// finished, which traps when the connection becomes active. Every accepted connection is held
/// here from the moment it is wrapped until the accept loop takes it, and what the loop never
/// took is closed properly once the listener is closed.
final class AcceptedConnections: @unchecked Sendable {
    private let lock = NSLock()
    private var waiting: [ObjectIdentifier: WireConnection] = [:]

    /// Holds `connection` (on the listener's loop, as it is wrapped).
    func hold(_ connection: WireConnection) {
        lock.withLock { waiting[ObjectIdentifier(connection.channel)] = connection }
    }

    /// The accept loop took `connection`: it is the loop's to close from now on.
    func take(_ connection: WireConnection) {
        _ = lock.withLock { waiting.removeValue(forKey: ObjectIdentifier(connection.channel)) }
    }

    /// Closes every connection the accept loop never took (after the listener closed).
    func closeLeftovers() async {
        let leftovers = lock.withLock {
            let all = Array(waiting.values)
            waiting.removeAll()
            return all
        }
        for connection in leftovers { try? await connection.executeThenClose { _, _ in } }
    }
}
