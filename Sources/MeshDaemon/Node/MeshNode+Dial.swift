import MeshCrypto
import MeshCore
import NIOCore
import NIOPosix

/// How one outgoing attempt ended.
enum DialResult: Sendable {
    /// The channel was active and its connection has since closed (a redial is scheduled).
    case ranAndClosed
    /// Could not connect or the handshake failed; try the next address.
    case failed
    /// No longer needed (another channel is active, the peer is gone, or the node stops).
    case notNeeded
}

extension MeshNode {
    /// Schedules one dial job for `peer` unless one is already pending: now, or once its
    /// backoff has passed (a timer on the node's loop).
    func scheduleDial(_ peer: DeviceID, immediately: Bool) {
        guard phase == .running, let delay = channels.scheduleDial(peer, immediately: immediately) else { return }
        guard delay > 0 else {
            jobQueue.yield(.dial(peer: peer))
            return
        }
        let queue = jobQueue
        dialTimers[peer]?.cancel()
        dialTimers[peer] = loop.scheduleTask(in: .nanoseconds(Int64(clamping: delay))) { queue.yield(.dial(peer: peer)) }
    }

    /// Runs a job from the run loop.
    nonisolated func perform(_ job: NodeJob) async {
        switch job {
        case .dial(let peer):
            guard let (addresses, generation) = await beginDial(peer) else { return }
            var failed = true
            for address in addresses where failed {
                switch await dial(peer, at: address) {
                case .ranAndClosed, .notNeeded: failed = false
                case .failed: continue
                }
            }
            await dialEnded(peer, generation: generation, failed: failed)
        case .dialAddresses(let peer, let addresses):
            for address in addresses {
                guard case .failed = await dial(peer, at: address) else { break }
            }
        case .probeAddresses(let peer, let addresses):
            await probe(peer, at: addresses)
        }
    }

    /// The addresses to try now and the attempt's number, or nil when no dial is needed.
    func beginDial(_ peer: DeviceID) -> ([DaemonConfiguration.Endpoint], UInt64)? {
        dialTimers.removeValue(forKey: peer)
        guard phase == .running, let runtime = channels.dialDue(peer) else { return nil }
        let addresses = dialCandidates(runtime)
        // Nothing to dial: the peer will connect to us.
        guard !addresses.isEmpty, let generation = channels.peers[peer]?.dial.startAttempt() else { return nil }
        return (addresses, generation)
    }

    /// A dial job ended; when every address failed, back off and try again later.
    func dialEnded(_ peer: DeviceID, generation: UInt64, failed: Bool) {
        guard channels.peers[peer]?.dial.attemptEnded(generation: generation, failed: failed) == true else { return }
        scheduleDial(peer, immediately: false)
    }

    /// Opens a TCP connection (no Nagle) to `endpoint` with the wire frame decoder installed,
    /// as both dialing and pairing use it; throws when it does not connect within `timeout`.
    nonisolated func connectWire(to endpoint: DaemonConfiguration.Endpoint, timeout: TimeAmount) async throws -> WireConnection {
        try await ClientBootstrap(group: loop)
            .connectTimeout(timeout)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .connect(host: endpoint.host, port: endpoint.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        ByteToMessageHandler(WireFrameDecoder(expectsPreamble: false)))
                    return try WireConnection(wrappingChannelSynchronously: channel)
                }
            }
    }

    /// One outgoing attempt: connect, handshake, and on success serve the channel until it closes.
    /// With `replacingLiveChannel` the attempt runs next to an active channel (an address
    /// discovery reported), and the channel switches to it only once it authenticated.
    nonisolated func dial(_ peer: DeviceID, at endpoint: DaemonConfiguration.Endpoint,
                          replacingLiveChannel: Bool = false) async -> DialResult {
        let connection: WireConnection
        do {
            connection = try await connectWire(to: endpoint, timeout: .seconds(2))
        } catch {
            logger.trace("could not connect", metadata: ["peer.id": "\(peer.short)", "error": "\(error)"])
            return .failed
        }
        var pendingHandshake: PendingInitiator?
        var result = DialResult.failed
        do {
            result = try await connection.executeThenClose { inbound, _ -> DialResult in
                guard let (message1, pending) = await self.startHandshake(peer, channel: connection.channel,
                                                                          replacingLiveChannel: replacingLiveChannel) else {
                    return .notNeeded
                }
                pendingHandshake = pending
                try await connection.channel.writeAndFlush(ByteBuffer(bytes: ConnectionKind.channel.preamble + message1))
                var frames = inbound.makeAsyncIterator()
                guard case .frame(let message2)? = try await frames.next() else { return .failed }
                let outcome = await self.finishHandshake(pending, message2: message2, channel: connection.channel)
                guard case .ranAndClosed = outcome else { return outcome }
                pendingHandshake = nil
                await self.dialSucceeded(peer, at: endpoint, replacedLiveChannel: replacingLiveChannel)
                try? await self.pumpStream(peer: peer, connectionID: pending.connectionID, frames: &frames)
                return .ranAndClosed
            }
        } catch {
            logger.trace("outgoing connection ended", metadata: ["peer.id": "\(peer.short)", "error": "\(error)"])
        }
        if let pendingHandshake {
            let failed = if case .failed = result { true } else { false }
            await handshakeFailed(pendingHandshake, countFailure: failed)
        }
        return result
    }

    /// Builds message 1 (framed) for `peer` and registers the connection with its handshake
    /// deadline; nil when the dial is no longer needed (a channel is active, unless
    /// `replacingLiveChannel`).
    func startHandshake(_ peer: DeviceID, channel: any Channel, replacingLiveChannel: Bool = false) -> ([UInt8], PendingInitiator)? {
        guard phase == .running,
              let (message1, started) = channels.startHandshake(peer, replacingLiveChannel: replacingLiveChannel, udpPort: announcedUDPPort,
                                                                wall: clock.wallNanoseconds(), now: clock.monotonicNanoseconds()) else {
            return nil
        }
        var pending = started
        pending.connectionID = registerConnection(channel)
        armDeadline(channel, seconds: tuning.handshakeTimeout, connection: pending.connectionID)
        return (message1, pending)
    }

    /// The responder closed, answered garbage, or lost a simultaneous connect: clean up.
    func handshakeFailed(_ pending: PendingInitiator, countFailure: Bool) {
        if countFailure { counters.handshakesFailed += 1 }
        connectionEnded(pending.connectionID)
        channels.initiatorEnded(pending)
    }

    /// Reads message 2, confirms and activates. `.ranAndClosed` here means "now active".
    func finishHandshake(_ pending: PendingInitiator, message2: [UInt8], channel: any Channel) -> DialResult {
        guard phase == .running else { return .notNeeded }
        switch channels.finishHandshake(pending, message2: message2, now: clock.monotonicNanoseconds()) {
        case .gone: return .notNeeded
        case .failed: return .failed
        case .lostSimultaneousConnect:
            counters.simultaneousConnectsResolved += 1
            return .notNeeded
        case .established(let active, let confirm, let udpPort):
            channel.writeAndFlush(ByteBuffer(bytes: confirm), promise: nil)
            markAuthenticated(pending.connectionID)
            // Message 2's X25519 counts: the figure ends after `finishHandshake`.
            counters.lastHandshakeMicroseconds = (clock.monotonicNanoseconds() &- pending.startedAt) / 1000
            var endpoint: SocketAddress?
            if let ip = channel.remoteAddress?.ipAddress, udpPort != 0 {
                endpoint = try? SocketAddress(ipAddress: ip, port: Int(udpPort))
            }
            activate(pending.peer, channel: active,
                     connection: ChannelConnection(id: pending.connectionID, channel: channel, locallyInitiated: true),
                     datagramEndpoint: endpoint)
            return .ranAndClosed
        }
    }
}
