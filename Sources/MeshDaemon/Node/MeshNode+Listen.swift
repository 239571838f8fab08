import Foundation
import Logging
import NIOCore
import NIOPosix

extension MeshNode {
    /// Accepts TCP connections until the listener closes; each is served in its own task.
    nonisolated func acceptConnections(_ server: ListenerSocket) async throws {
        try await server.executeThenClose { inbound in
            try await withThrowingDiscardingTaskGroup { group in
                for try await connection in inbound {
                    group.addTask { await self.serveInbound(connection) }
                }
            }
        }
    }

    /// Serves the UDP socket until it closes (its reads go to `DatagramReceiveHandler`);
    /// cancelling closes it.
    nonisolated func receiveDatagrams(_ socket: any Channel) async throws {
        try await withTaskCancellationHandler {
            try await socket.closeFuture.get()
        } onCancel: {
            socket.close(promise: nil)
        }
    }

    /// One accepted connection: admission, preamble, then a channel handshake or pairing.
    nonisolated func serveInbound(_ connection: WireConnection) async {
        guard let admission = await admitInbound(connection.channel) else {
            try? await connection.executeThenClose { _, _ in }
            return
        }
        do {
            try await connection.executeThenClose { inbound, _ in
                var frames = inbound.makeAsyncIterator()
                guard case .preamble(let kind)? = try await frames.next() else { return }
                switch kind {
                case .channel: try await self.respondToChannel(admission, frames: &frames)
                case .pairing: try await self.servePairing(admission, frames: &frames)
                }
            }
        } catch let error as WireFormatError {
            await count { $0.connectionsBadPreamble += 1 }
            logger.trace("closed a connection that sent bad framing", metadata: ["error": "\(error)"])
        } catch {
            logger.trace("inbound connection ended", metadata: ["error": "\(error)"])
        }
        await connectionEnded(admission.id)
    }

    /// Rate limit and slots (`UnauthenticatedSlots`) for a new connection; registers it and
    /// arms its first-message deadline. A stranger connection evicted to make room is closed.
    func admitInbound(_ channel: any Channel) -> InboundAdmission? {
        guard phase == .running else { return nil }
        let source = channel.remoteAddress?.ipAddress ?? "?"
        let now = clock.monotonicNanoseconds()
        switch connections.admit(channel, source: source, known: isPairedDeviceAddress(source), now: now) {
        case .refused(let refusal):
            counters.count(refusal)
            return nil
        case .admitted(let id, let evicted):
            if let evicted {
                counters.connectionsEvicted += 1
                connections.dropDeadline(evicted.id)?.cancel()
                evicted.channel?.close(promise: nil)
            }
            armDeadline(channel, seconds: tuning.firstMessageTimeout, connection: id)
            return InboundAdmission(id: id, channel: channel, sourceIP: source)
        }
    }

    /// Whether `host` (an IP address as sockets report it) is an address a paired device was
    /// seen at, was paired or configured with, or advertises over mDNS now.
    func isPairedDeviceAddress(_ host: String) -> Bool {
        channels.isPairedDeviceAddress(host, mdnsEndpoints: discovered.mdnsEndpoints)
    }

    /// The first message of an accepted connection passed (a handshake from a paired key, a
    /// pairing attempt under the live code): it is no longer evictable, and `seconds` is its
    /// deadline from now.
    func engage(_ id: UInt64, channel: any Channel, deadline seconds: Double) {
        guard connections.engage(id) else { return }
        armDeadline(channel, seconds: seconds, connection: id)
    }

    /// Closes `channel` after `seconds` unless the connection authenticates or ends first
    /// (replaces an earlier deadline of the same connection).
    func armDeadline(_ channel: any Channel, seconds: Double, connection id: UInt64) {
        // On the node's loop (every connection's channel is on it too), so the node is entered
        // at once, without a task.
        let timer = loop.scheduleTask(in: .nanoseconds(Nanoseconds.signed(seconds: seconds))) { [weak self] in
            guard let self else {
                channel.close(promise: nil)
                return
            }
            self.onLoop { $0.deadlinePassed(id, channel: channel) }
        }
        connections.setDeadline(id, timer)?.cancel()
    }

    /// A deadline fired: unless the connection authenticated or ended meanwhile, close it.
    private func deadlinePassed(_ id: UInt64, channel: any Channel) {
        guard connections.deadlinePassed(id) else { return }
        counters.connectionsTimedOut += 1
        channel.close(promise: nil)
    }

    /// Forgets a connection that closed.
    func connectionEnded(_ id: UInt64) {
        connections.ended(id)?.cancel()
    }

    /// The connection authenticated: it no longer counts against the cap or has a deadline.
    func markAuthenticated(_ id: UInt64) {
        connections.authenticated(id)?.cancel()
    }

    /// Mutates the counters (for nonisolated callers).
    func count(_ change: (inout NodeCounters) -> Void) { change(&counters) }

    /// Registers an outgoing connection.
    func registerConnection(_ channel: any Channel) -> UInt64 {
        connections.register(channel)
    }
}
