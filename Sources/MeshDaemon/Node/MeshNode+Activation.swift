import MeshCrypto
import MeshCore
import NIOCore

extension MeshNode {
    /// Installs a channel that completed its handshake, replacing (and closing) any older one.
    func activate(_ peer: DeviceID, channel: ActiveChannel, connection: ChannelConnection,
                  datagramEndpoint: PathAddress?) {
        let before = channels.peers[peer].flatMap { $0.channel == nil ? nil : $0.connection?.kind }
        switch channels.install(peer, channel: channel, connection: connection, datagramEndpoint: datagramEndpoint,
                                now: clock.monotonicNanoseconds(), wallSeconds: clock.wallSeconds()) {
        case .unknownPeer:
            connection.path.close()
            return
        case .installed(let replaced):
            replaced?.path.close()
            if let replaced { outbound.close(replaced.id, peer: peer, reason: "replaced by a new connection", at: clock.wallSeconds()) }
        }
        outbound.open(connection.id)
        counters.handshakesCompleted += 1
        logger.info("channel active", metadata: ["peer.id": "\(peer.short)",
                                                "initiator": "\(connection.locallyInitiated ? "local" : "peer")",
                                                "path": "\(connection.kind == .relay ? "relay" : "direct")"])
        if let before, before != connection.kind {
            counters.pathChanges += 1
            logger.info(connection.kind == .direct ? "channel moved from the relay to a direct path" : "channel moved to the relay",
                        metadata: ["peer.id": "\(peer.short)", "path": "\(connection.path.remote)"])
        }
        handOff.channelEvent(.activated(peer))
        deviceSet.channelActivated(self, peer)
        // On the relay, direct addresses are still tried, at the dial cadence.
        if connection.kind == .relay { dialer.scheduleDial(self, peer, immediately: false) }
    }

    /// Closes the channel to `peer` (if any) and, when `redial`, schedules a reconnect.
    func dropChannel(_ peer: DeviceID, reason: String, redial: Bool) {
        guard let (connection, hadChannel) = channels.drop(peer, now: clock.monotonicNanoseconds()) else { return }
        connection?.path.close()
        prober.fail(to: peer)
        if hadChannel || connection != nil { outbound.close(connection?.id, peer: peer, reason: reason, at: clock.wallSeconds()) }
        if hadChannel {
            logger.info("channel closed", metadata: ["peer.id": "\(peer.short)", "reason": "\(reason)"])
            handOff.channelEvent(.deactivated(peer, reason: reason))
        }
        if redial { dialer.scheduleDial(self, peer, immediately: false) }
    }

    /// The stream path `connectionID` of `peer` ended.
    func connectionClosed(peer: DeviceID, connectionID: UInt64) {
        gate.ended(connectionID)
        guard channels.isCurrent(peer, connectionID: connectionID) else { return }
        dropChannel(peer, reason: "connection closed", redial: phase == .running)
    }

    /// Writes already-sealed stream bytes on the peer's stream path (in call order), counted in
    /// the connection's outbound budget until the path completes the write. Every write towards
    /// a peer's stream path after its handshake goes through here.
    func writeStream(_ bytes: [UInt8], to connection: ChannelConnection) -> EventLoopFuture<Void> {
        let count = bytes.count, id = connection.id
        outbound.queued(bytes: count, on: id, now: clock.monotonicNanoseconds())
        let promise = connection.path.eventLoop.makePromise(of: Void.self)
        connection.path.send(ByteBuffer(bytes: bytes), promise: promise)
        promise.futureResult.whenComplete { [self] _ in
            // Paths live on the node's loop, so this runs there.
            if loop.inEventLoop {
                onLoop { $0.outbound.written(bytes: count, on: id) }
            } else {
                loop.execute { self.onLoop { $0.outbound.written(bytes: count, on: id) } }
            }
        }
        return promise.futureResult
    }

    /// Seals `message` for the stream path of `peer` and writes it, within the connection's
    /// outbound budget (see `OutboundBudget`): nil when not active, when a `.reply` is dropped
    /// because the peer does not drain, or when `.own` traffic is refused at the hard limit
    /// (the channel then closes).
    @discardableResult
    func sendStream(_ message: ChannelMessage, to peer: DeviceID,
                    traffic: OutboundBudget.Traffic = .own) -> EventLoopFuture<Void>? {
        guard var runtime = channels.peers[peer], var channel = runtime.channel, let connection = runtime.connection else { return nil }
        // Decided before sealing: a sealed frame that is not written would break the stream.
        guard admitStream(traffic, to: peer, on: connection) else { return nil }
        do {
            let bytes = try channel.sealStream(message)
            runtime.channel = channel
            channels.peers[peer] = runtime
            counters.streamMessagesSent += 1
            return writeStream(bytes, to: connection)
        } catch {
            dropChannel(peer, reason: "stream keys exhausted", redial: true)
            return nil
        }
    }

    /// Whether a write of `traffic` may go on `peer`'s `connection` now (see `OutboundBudget`),
    /// decided before anything is sealed for it: a reply over the reply limit is dropped and
    /// counted; own traffic at the hard limit is refused, counted, and the channel closes.
    func admitStream(_ traffic: OutboundBudget.Traffic, to peer: DeviceID, on connection: ChannelConnection) -> Bool {
        switch outbound.admit(traffic, on: connection.id) {
        case .write:
            return true
        case .drop:
            counters.streamRepliesDropped += 1
            return false
        case .refuse:
            counters.streamWritesRefused += 1
            counters.channelsClosedNotReading += 1
            logger.warning("closing a channel: the peer does not read what this daemon sends",
                           metadata: ["peer.id": "\(peer.short)", "queued.bytes": "\(outbound.budget(of: connection.id)?.charge ?? 0)"])
            dropChannel(peer, reason: Self.outboundFullReason(limit: outbound.limit), redial: true)
            return false
        }
    }

    /// Seals `message` for the datagram path of `peer` and sends it; false when not active. It
    /// leaves at once (with any batched datagrams before it), unless `batched`: then it waits
    /// for `flushDatagrams()`, which the caller calls once its batch is written, so the batch
    /// leaves with one sendmmsg(2).
    @discardableResult
    func sendDatagram(_ message: ChannelMessage, to peer: DeviceID, batched: Bool = false) -> Bool {
        guard let slot = channels.peers.index(forKey: peer) else { return false }
        // The transport keeps datagrams the network refused (a full send buffer) until it
        // drains: past its limit a datagram is dropped here instead, as UDP would.
        guard transport.canSendDatagrams else {
            counters.datagramsDroppedUnwritable += 1
            return false
        }
        // Room for the largest datagram up front: growing the buffer while sealing cost a
        // reallocation and a copy (≈ 800 instructions) per realtime datagram.
        var buffer = transport.datagramBuffer(capacity: Self.maximumDatagramBytes)
        do {
            // Sealed in place through `channels.peers.values` (no copy of the peer's runtime or channel,
            // and no move in and out of an Optional as `channels.peers[peer]?.…` makes).
            guard let endpoint = try channels.peers.values[slot].sealDatagram(message, into: &buffer) else { return false }
            counters.datagramsSent += 1
            transport.sendDatagram(buffer, to: endpoint, batched: batched)
            return true
        } catch {
            dropChannel(peer, reason: "datagram keys exhausted", redial: true)
            return false
        }
    }

    /// Sends the datagrams `sendDatagram(_:to:batched:)` wrote and that still wait, together.
    func flushDatagrams() {
        transport.flushDatagrams()
    }
}

extension MeshNode {
    /// The close reason of a channel whose own traffic met the hard outbound limit.
    static func outboundFullReason(limit: Int) -> String {
        "the peer did not read: \(limit >> 10) KiB queued towards it"
    }

    /// The close reason of a channel that stayed over its reply limit.
    static func outboundStalledReason(seconds: Double) -> String {
        "the peer did not read for \(Int(seconds.rounded())) s"
    }
}
