import Foundation
import Logging
import NIOCore
import NIOPosix

/// Every TCP connection of the node until it authenticates or ends: admits accepted ones (rate
/// limit and slots, `UnauthenticatedSlots`), registers dialled ones, arms and fires their
/// deadlines; then serves an accepted connection by its preamble (the responder side of the
/// channel handshake, or pairing; `ConnectionGate+Responder.swift`).
///
/// Owns the connection table; runs on the node's executor (every method that needs the node
/// takes it `isolated`). The drivers of accepted connections are static and nonisolated: they
/// run as tasks of the node and enter it for each step (`MeshNode.hop`).
final class ConnectionGate {
    /// TCP connections: open ones, admission, where unauthenticated ones stand, their deadlines.
    var table: ConnectionTable

    init(tuning: ChannelTuning) { table = ConnectionTable(tuning: tuning) }

    /// Rate limit and slots (`UnauthenticatedSlots`) for a new connection, both keyed by its
    /// source's `SourceKey` (an IPv6 source counts by its /64); registers it and arms its
    /// first-message deadline. A stranger connection evicted to make room is closed.
    func admit(_ node: isolated MeshNode, _ channel: any Channel) -> InboundAdmission? {
        guard node.phase == .running else { return nil }
        let source = channel.remoteAddress?.ipAddress ?? "?"
        let now = node.clock.monotonicNanoseconds()
        let known = node.channels.isPairedDeviceAddress(source, now: now)
        switch table.admit(channel, source: SourceKey.of(source), known: known, now: now) {
        case .refused(let refusal):
            node.counters.count(refusal)
            return nil
        case .admitted(let id, let evicted):
            if let evicted {
                node.counters.connectionsEvicted += 1
                table.dropDeadline(evicted.id)?.cancel()
                evicted.channel?.close(promise: nil)
            }
            armDeadline(node, channel, seconds: node.tuning.firstMessageTimeout, connection: id)
            return InboundAdmission(id: id, channel: channel, sourceIP: source)
        }
    }

    /// The first message of an accepted connection passed (a handshake from a paired key, a
    /// pairing attempt under the live code): it is no longer evictable, and `seconds` is its
    /// deadline from now.
    func engage(_ node: isolated MeshNode, _ id: UInt64, channel: any Channel, deadline seconds: Double) {
        guard table.engage(id) else { return }
        armDeadline(node, channel, seconds: seconds, connection: id)
    }

    /// Closes `channel` after `seconds` unless the connection authenticates or ends first
    /// (replaces an earlier deadline of the same connection).
    func armDeadline(_ node: isolated MeshNode, _ channel: any Channel, seconds: Double, connection id: UInt64) {
        // On the node's loop (every connection's channel is on it too), so the node is entered
        // at once, without a task.
        let timer = node.loop.scheduleTask(in: .nanoseconds(Nanoseconds.signed(seconds: seconds))) { [weak node] in
            guard let node else {
                channel.close(promise: nil)
                return
            }
            node.onLoop { $0.gate.deadlinePassed($0, id, channel: channel) }
        }
        table.setDeadline(id, timer)?.cancel()
    }

    /// A deadline fired: unless the connection authenticated or ended meanwhile, close it.
    private func deadlinePassed(_ node: isolated MeshNode, _ id: UInt64, channel: any Channel) {
        guard table.deadlinePassed(id) else { return }
        node.counters.connectionsTimedOut += 1
        channel.close(promise: nil)
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
    func register(_ channel: any Channel) -> UInt64 {
        table.register(channel)
    }

    /// The node stops: every open connection closes.
    func closeAll() {
        for channel in table.open.values { channel.close(promise: nil) }
    }
}
