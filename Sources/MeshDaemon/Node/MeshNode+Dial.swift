import MeshCrypto
import MeshCore
import NIOCore
import NIOPosix

/// An outgoing handshake between message 1 and message 2.
struct PendingInitiator: Sendable {
    let peer: DeviceID
    var handshake: ChannelHandshake
    let localIndex: UInt32
    let connectionID: UInt64
    /// Monotonic instant message 1 was built (the handshake-time figure starts here).
    let startedAt: UInt64
}

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
        guard phase == .running, let slot = peers.index(forKey: peer) else { return }
        let active = peers.values[slot].channel != nil
        guard let delay = peers.values[slot].dial.schedule(immediately: immediately, channelActive: active, using: &random) else { return }
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
        guard phase == .running, var runtime = peers[peer] else { return nil }
        guard runtime.dial.due(channelActive: runtime.channel != nil) else {
            peers[peer] = runtime
            return nil
        }
        let addresses = dialCandidates(runtime)
        guard !addresses.isEmpty else {
            peers[peer] = runtime
            return nil      // nothing to dial: the peer will connect to us
        }
        let generation = runtime.dial.startAttempt()
        peers[peer] = runtime
        return (addresses, generation)
    }

    /// A dial job ended; when every address failed, back off and try again later.
    func dialEnded(_ peer: DeviceID, generation: UInt64, failed: Bool) {
        guard peers[peer]?.dial.attemptEnded(generation: generation, failed: failed) == true else { return }
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

    /// Builds message 1 (framed) for `peer`; nil when the dial is no longer needed (a channel
    /// is active, unless `replacingLiveChannel`).
    func startHandshake(_ peer: DeviceID, channel: any Channel, replacingLiveChannel: Bool = false) -> ([UInt8], PendingInitiator)? {
        guard phase == .running, var runtime = peers[peer], runtime.channel == nil || replacingLiveChannel else { return nil }
        let started = clock.monotonicNanoseconds()
        let index = allocateIndex(for: peer)
        let payload = HandshakePayload(sessionIndex: index, udpPort: UInt16(boundListenAddress?.port ?? 0),
                                       wallNanoseconds: clock.wallNanoseconds(), isRekey: false)
        do {
            let (handshake, message1) = try ChannelHandshake.initiate(localStatic: identity.keyPair,
                                                                      peerPublicKey: runtime.record.publicKey,
                                                                      pairKey: runtime.record.pairKey, payload: payload)
            let id = registerConnection(channel)
            armDeadline(channel, seconds: tuning.handshakeTimeout, connection: id)
            runtime.outgoingHandshakeInFlight = true
            peers[peer] = runtime
            let macKey = HandshakeMac.key(pairKey: runtime.record.pairKey, responderPublicKey: runtime.record.publicKey)
            return (try WireFrame.encode(HandshakeMac.append(to: message1, key: macKey)),
                    PendingInitiator(peer: peer, handshake: handshake, localIndex: index, connectionID: id, startedAt: started))
        } catch {
            indexTable.removeValue(forKey: index)
            return nil
        }
    }

    /// The responder closed, answered garbage, or lost a simultaneous connect: clean up.
    func handshakeFailed(_ pending: PendingInitiator, countFailure: Bool) {
        if countFailure { counters.handshakesFailed += 1 }
        connectionEnded(pending.connectionID)
        if var runtime = peers[pending.peer] {
            runtime.outgoingHandshakeInFlight = false
            peers[pending.peer] = runtime
        }
        if indexTable[pending.localIndex] == pending.peer,
           peers[pending.peer]?.channel?.localIndices.contains(pending.localIndex) != true {
            indexTable.removeValue(forKey: pending.localIndex)
        }
    }

    /// Reads message 2, confirms and activates. `.ranAndClosed` here means "now active".
    func finishHandshake(_ pending: PendingInitiator, message2: [UInt8], channel: any Channel) -> DialResult {
        var pending = pending
        guard phase == .running, let runtime = peers[pending.peer] else { return .notNeeded }
        let payload: HandshakePayload
        let keys: ChannelKeys
        do {
            (payload, keys) = try pending.handshake.readResponse(message2)
        } catch {
            return .failed
        }
        if let connection = runtime.connection, runtime.channel != nil,
           !SimultaneousConnectRule.candidateWins(candidateIsLocal: true, existingIsLocal: connection.locallyInitiated,
                                                   localKey: identity.keyPair.publicKey, peerKey: runtime.record.publicKey) {
            counters.simultaneousConnectsResolved += 1
            return .notNeeded
        }
        let now = clock.monotonicNanoseconds()
        var active = ActiveChannel(keys: keys, localIndex: pending.localIndex, remoteIndex: payload.sessionIndex,
                                   locallyInitiated: true, now: now, tuning: tuning)
        guard let confirm = try? active.sealStream(.confirm) else { return .failed }
        channel.writeAndFlush(ByteBuffer(bytes: confirm), promise: nil)
        markAuthenticated(pending.connectionID)
        counters.lastHandshakeMicroseconds = (now &- pending.startedAt) / 1000
        var endpoint: SocketAddress?
        if let ip = channel.remoteAddress?.ipAddress, payload.udpPort != 0 {
            endpoint = try? SocketAddress(ipAddress: ip, port: Int(payload.udpPort))
        }
        activate(pending.peer, channel: active,
                 connection: ChannelConnection(id: pending.connectionID, channel: channel, locallyInitiated: true),
                 datagramEndpoint: endpoint)
        return .ranAndClosed
    }
}
