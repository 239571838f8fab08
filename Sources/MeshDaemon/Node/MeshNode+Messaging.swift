import MeshCrypto
import MeshCore

/// An application message received on a channel (the delivery router consumes these).
public struct InboundChannelMessage: Sendable, Equatable {
    /// The paired device that sent it (authenticated by the channel).
    public var peer: DeviceID
    /// The path it arrived on.
    public var path: PingPath
    /// The message bytes, exactly as the peer passed them to `send`.
    public var bytes: [UInt8]

    /// Creates a value (the node makes these; fakes in tests too).
    public init(peer: DeviceID, path: PingPath, bytes: [UInt8]) {
        self.peer = peer
        self.path = path
        self.bytes = bytes
    }
}

/// A change of a peer's channel.
public enum PeerChannelEvent: Sendable, Equatable {
    /// A handshake completed; both paths can carry messages now.
    case activated(DeviceID)
    /// The channel closed (connection lost, lease expired, keys expired, unpaired…).
    case deactivated(DeviceID, reason: String)
    /// A device was paired.
    case paired(DeviceID)
    /// A device was unpaired (here or by the peer).
    case unpaired(DeviceID)
}

/// Why `send(_:to:path:)` failed.
public struct ChannelSendError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable reason.
    public enum Code: String, Sendable, Equatable {
        /// No paired device has that ID.
        case unknownPeer
        /// The peer has no active channel now.
        case notActive
        /// The message exceeds `MeshNode.maximumDatagramMessage` on the datagram path.
        case tooLargeForDatagram
        /// The connection failed while writing.
        case writeFailed
    }

    /// The reason.
    public var code: Code
    /// A sentence for logs.
    public var description: String { "channel send failed: \(code.rawValue)" }
}

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
        guard peers[peer] != nil else { throw ChannelSendError(code: .unknownPeer) }
        guard peers[peer]?.channel != nil else { throw ChannelSendError(code: .notActive) }
        if let connection, peers[peer]?.connection?.id != connection { throw ChannelSendError(code: .notActive) }
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
        guard peers[peer] != nil else { throw ChannelSendError(code: .unknownPeer) }
        guard message.count <= Self.maximumDatagramMessage else { throw ChannelSendError(code: .tooLargeForDatagram) }
        guard sendDatagram(.application(message), to: peer) else { throw ChannelSendError(code: .notActive) }
    }

    /// Sends `message` as an application message on `peer`'s stream without waiting for the
    /// write; false (nothing sent) when there is no active channel or its connection is not
    /// writable (the peer does not read: NIO's outbound buffer is over its high-water mark).
    func sendStreamIfDraining(_ message: [UInt8], to peer: DeviceID) -> Bool {
        guard let connection = peers[peer]?.connection, peers[peer]?.channel != nil, connection.channel.isWritable else {
            return false
        }
        return sendStream(.application(message), to: peer) != nil
    }

    /// The TCP connection that carries `peer`'s active channel now, or nil when none is active.
    /// A new channel (after a reconnect) has a new one, possibly before the delivery router has
    /// consumed its activation event.
    func streamConnection(of peer: DeviceID) -> UInt64? {
        guard let runtime = peers[peer], runtime.channel != nil else { return nil }
        return runtime.connection?.id
    }

    /// Device IDs of peers whose channel is active now.
    public func activePeers() -> [DeviceID] { peers.filter { $0.value.channel != nil }.map(\.key) }

    /// Hands an application message to the inbound handler (the delivery router), which
    /// handles it at once or queues it behind earlier ones, in order.
    ///
    /// What the handler queued is bounded in messages and bytes. A datagram message beyond
    /// half of either bound is dropped and counted (datagrams are best effort). A stream message
    /// is never dropped for room: its reader pauses after it until the handler made room
    /// (`waitForInboundRoom`), so a peer sending faster than this daemon stores is slowed down
    /// by TCP instead of growing the daemon's memory, and cannot crowd out other peers. Without
    /// a handler (before the router runs) messages are held, up to the same bounds.
    func deliver(_ bytes: [UInt8], from peer: DeviceID, path: PingPath) {
        if path == .datagram, inboundQueued >= Self.inboundBufferLimit / 2 || inboundQueuedBytes >= Self.inboundBufferBytes / 2 {
            counters.inboundMessagesDropped += 1
            return
        }
        let message = InboundChannelMessage(peer: peer, path: path, bytes: bytes)
        guard let inboundHandler else {
            guard inboundHeld.count < Self.inboundBufferLimit else {
                counters.inboundMessagesDropped += 1
                return
            }
            inboundHeld.append(.message(message))
            return
        }
        if !inboundHandler.receive(message) {
            inboundQueued += 1
            inboundQueuedBytes += bytes.count
        }
    }

    /// Tells the inbound handler about a channel change (held until one is installed).
    func channelEvent(_ event: PeerChannelEvent) {
        guard let inboundHandler else {
            if inboundHeld.count < Self.inboundBufferLimit { inboundHeld.append(.event(event)) }
            return
        }
        inboundHandler.channelEvent(event)
    }

    /// Whether a stream reader should pause before reading more: the handler's queue is past
    /// its stream bounds (and there is a handler: without one nothing would make room).
    var inboundQueueFull: Bool {
        inboundHandler != nil
            && (inboundQueued >= Self.inboundBufferLimit * 3 / 4 || inboundQueuedBytes >= Self.inboundBufferBytes)
    }

    /// Returns once the inbound queue has room for stream messages again (at once when it has).
    func waitForInboundRoom() async {
        guard inboundQueueFull else { return }
        await withCheckedContinuation { inboundRoomWaiters.append($0) }
    }

    /// Resumes the stream readers waiting for room (the queue drained, or the node stops).
    func releaseInboundRoomWaiters() {
        let waiters = inboundRoomWaiters
        inboundRoomWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    /// Installs (nil: removes) the consumer of inbound messages and channel events; what was
    /// held meanwhile goes to the new one first, in arrival order.
    func setInbound(_ handler: (any DeliveryInbound)?) {
        inboundHandler = handler
        // Messages queued by a previous handler will never be consumed now.
        inboundQueued = 0
        inboundQueuedBytes = 0
        guard let handler else {
            releaseInboundRoomWaiters()
            return
        }
        let held = inboundHeld
        inboundHeld = []
        for item in held {
            switch item {
            case .message(let message):
                if !handler.receive(message) {
                    inboundQueued += 1
                    inboundQueuedBytes += message.bytes.count
                }
            case .event(let event): handler.channelEvent(event)
            }
        }
    }

    /// The datagrams of one socket read (up to 32) have all been handled: the handler writes
    /// out what they produced now, before the loop turns to other work.
    func datagramBurstEnded() { inboundHandler?.inboundBurstEnded() }

    /// The handler finished one message it had queued.
    func inboundConsumed(bytes: Int = 0) {
        inboundQueued = max(0, inboundQueued - 1)
        inboundQueuedBytes = max(0, inboundQueuedBytes - bytes)
        if !inboundRoomWaiters.isEmpty, !inboundQueueFull { releaseInboundRoomWaiters() }
    }
}

/// Something that arrived before an inbound handler was installed.
enum HeldInbound: Sendable {
    case message(InboundChannelMessage)
    case event(PeerChannelEvent)
}
