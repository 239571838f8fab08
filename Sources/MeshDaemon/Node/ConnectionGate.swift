import Foundation
import Logging
import NIOCore

/// Every stream path of the node until it authenticates or ends: admits accepted ones (rate
/// limit and slots, `UnauthenticatedSlots`), registers dialled ones, arms and fires their
/// deadlines; then serves an accepted connection by its preamble (the responder side of the
/// channel handshake, or pairing; `ConnectionGate+Responder.swift`).
///
/// Owns the connection table; runs on the node's executor (every method that needs the node
/// takes it `isolated`). The drivers of accepted connections are static and nonisolated: they
/// run as tasks of the node and enter it for each step (`MeshNode.hop`).
final class ConnectionGate {
    /// Stream paths: open ones, admission, where unauthenticated ones stand, their deadlines.
    var table: ConnectionTable

    init(tuning: ChannelTuning) { table = ConnectionTable(tuning: tuning) }

    /// Rate limit and slots (`UnauthenticatedSlots`) for a new connection, both keyed by its
    /// source's `SourceKey` (an IPv6 source counts by its /64); registers it and arms its
    /// first-message deadline. A stranger connection evicted to make room is closed.
    func admit(_ node: isolated MeshNode, _ path: any ChannelPath) -> InboundAdmission? {
        guard node.phase == .running else { return nil }
        let source = path.remote.sourceKey
        let now = node.clock.monotonicNanoseconds()
        let known = node.channels.isPairedDeviceSource(source, now: now)
        switch table.admit(path, source: source, known: known, now: now) {
        case .refused(let refusal):
            node.counters.count(refusal)
            return nil
        case .admitted(let id, let evicted):
            if let evicted {
                node.counters.connectionsEvicted += 1
                table.dropDeadline(evicted.id)?.cancel()
                evicted.path?.close()
            }
            armDeadline(node, path, seconds: node.tuning.firstMessageTimeout, connection: id)
            return InboundAdmission(id: id, path: path)
        }
    }

    /// The first message of an accepted connection passed (a handshake from a paired key, a
    /// pairing attempt under the live code): it is no longer evictable, and `seconds` is its
    /// deadline from now.
    func engage(_ node: isolated MeshNode, _ id: UInt64, path: any ChannelPath, deadline seconds: Double) {
        guard table.engage(id) else { return }
        armDeadline(node, path, seconds: seconds, connection: id)
    }

    /// Closes `path` after `seconds` unless the connection authenticates or ends first
    /// (replaces an earlier deadline of the same connection).
    func armDeadline(_ node: isolated MeshNode, _ path: any ChannelPath, seconds: Double, connection id: UInt64) {
        // On the node's loop (every path is on it too), so the node is entered at once,
        // without a task.
        let timer = node.loop.scheduleTask(in: .nanoseconds(Nanoseconds.signed(seconds: seconds))) { [weak node] in
            guard let node else {
                path.close()
                return
            }
            node.onLoop { $0.gate.deadlinePassed($0, id, path: path) }
        }
        table.setDeadline(id, timer)?.cancel()
    }

    /// A deadline fired: unless the connection authenticated or ended meanwhile, close it.
    private func deadlinePassed(_ node: isolated MeshNode, _ id: UInt64, path: any ChannelPath) {
        guard table.deadlinePassed(id) else { return }
        node.counters.connectionsTimedOut += 1
        path.close()
    }

    /// Forgets a connection that closed.
    func ended(_ id: UInt64) {
        table.ended(id)?.cancel()
    }

    /// The connection authenticated: it no longer counts against the cap or has a deadline.
    func authenticated(_ id: UInt64) {
        table.authenticated(id)?.cancel()
    }

    /// Registers an outgoing connection.
    func register(_ path: any ChannelPath) -> UInt64 {
        table.register(path)
    }

    /// The node stops: every open connection closes.
    func closeAll() {
        for path in table.open.values { path.close() }
    }
}
