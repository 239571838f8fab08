import MeshCrypto
import MeshCore

extension MeshNode {
    /// Largest application message the datagram path carries (1200 bytes sealed on the wire,
    /// minus header, counter, tag and the message type byte). Larger ones take the stream.
    public static let maximumDatagramMessage = maximumDatagramBytes - DatagramHeader.size - 24 - 1

    /// Largest datagram this node sends, header and seal included.
    static let maximumDatagramBytes = 1200

    /// Sends `message` to `peer` over `path` on its active channel.
    ///
    /// Datagram: one UDP datagram, best effort (no retransmission, may be lost or reordered;
    /// replays are dropped by the receiver). Stream: in order, reliable while the connection
    /// lives; returns after the bytes were handed to the kernel. Throws `ChannelSendError`.
    ///
    /// With `connection`, a stream message goes only on that TCP connection (see
    /// ``streamConnection(of:)``); when the peer's channel has moved to another one since, it
    /// throws `.notActive` and sends nothing.
    public func send(_ message: [UInt8], to peer: DeviceID, path: PingPath, connection: UInt64? = nil) async throws {
        guard channels.peers[peer] != nil else { throw ChannelSendError(code: .unknownPeer) }
        guard channels.peers[peer]?.channel != nil else { throw ChannelSendError(code: .notActive) }
        if let connection, channels.peers[peer]?.connection?.id != connection { throw ChannelSendError(code: .notActive) }
        switch path {
        case .datagram:
            try sendApplicationDatagram(message, to: peer)
        case .stream:
            guard let written = sendStream(.application(message), to: peer) else { throw ChannelSendError(code: .notActive) }
            do { try await written.get() } catch { throw ChannelSendError(code: .writeFailed) }
        }
    }

    /// The datagram path of `send(_:to:path:)`, synchronous: for callers already isolated to
    /// the node's loop (the delivery router). Throws `ChannelSendError`.
    func sendApplicationDatagram(_ message: [UInt8], to peer: DeviceID) throws {
        guard channels.peers[peer] != nil else { throw ChannelSendError(code: .unknownPeer) }
        guard message.count <= Self.maximumDatagramMessage else { throw ChannelSendError(code: .tooLargeForDatagram) }
        guard sendDatagram(.application(message), to: peer) else { throw ChannelSendError(code: .notActive) }
    }

    /// Sends `message` as an application message on `peer`'s stream without waiting for the
    /// write; false (nothing sent) when there is no active channel or its connection is not
    /// writable (the peer does not read: NIO's outbound buffer is over its high-water mark).
    func sendStreamIfDraining(_ message: [UInt8], to peer: DeviceID) -> Bool {
        guard let connection = channels.peers[peer]?.connection, channels.peers[peer]?.channel != nil, connection.channel.isWritable else {
            return false
        }
        return sendStream(.application(message), to: peer) != nil
    }

    /// The TCP connection that carries `peer`'s active channel now, or nil when none is active.
    /// A new channel (after a reconnect) has a new one, possibly before the delivery router has
    /// consumed its activation event.
    func streamConnection(of peer: DeviceID) -> UInt64? {
        guard let runtime = channels.peers[peer], runtime.channel != nil else { return nil }
        return runtime.connection?.id
    }

    /// Device IDs of peers whose channel is active now.
    public func activePeers() -> [DeviceID] { channels.peers.filter { $0.value.channel != nil }.map(\.key) }

    /// Hands an application message to the inbound handler (the delivery router), which
    /// handles it at once or queues it behind earlier ones, in order; what `InboundGate`
    /// decides drops it or holds it until a handler is installed.
    func deliver(_ bytes: [UInt8], from peer: DeviceID, path: PingPath) {
        let message = InboundChannelMessage(peer: peer, path: path, bytes: bytes)
        switch inbound.admit(message) {
        case .dropped: counters.inboundMessagesDropped += 1
        case .held: break
        case .handOut:
            if let inboundHandler, !inboundHandler.receive(message) { inbound.handlerQueued(bytes: bytes.count) }
        }
    }

    /// Tells the inbound handler about a channel change (held until one is installed).
    func channelEvent(_ event: PeerChannelEvent) {
        guard inbound.admit(event) else { return }
        inboundHandler?.channelEvent(event)
    }

    /// Returns once the inbound queue has room for stream messages again (at once when it has).
    func waitForInboundRoom() async {
        guard inbound.isFull else { return }
        await withCheckedContinuation { reader in inbound.pause { reader.resume() } }
    }

    /// Resumes the stream readers waiting for room (the handler went away, or the node stops).
    func releaseInboundRoomWaiters() {
        for resume in inbound.releaseReaders() { resume() }
    }

    /// Installs (nil: removes) the consumer of inbound messages and channel events; what was
    /// held meanwhile goes to the new one first, in arrival order.
    func setInbound(_ handler: (any DeliveryInbound)?) {
        inboundHandler = handler
        let held = inbound.handlerChanged(installed: handler != nil)
        guard let handler else {
            releaseInboundRoomWaiters()
            return
        }
        for item in held {
            switch item {
            case .message(let message):
                if !handler.receive(message) { inbound.handlerQueued(bytes: message.bytes.count) }
            case .event(let event): handler.channelEvent(event)
            }
        }
    }

    /// The datagrams of one socket read (up to 32) have all been handled: the handler writes
    /// out what they produced now, before the loop turns to other work.
    func datagramBurstEnded() { inboundHandler?.inboundBurstEnded() }

    /// The handler finished one message it had queued.
    func inboundConsumed(bytes: Int = 0) {
        for resume in inbound.handlerConsumed(bytes: bytes) { resume() }
    }
}
