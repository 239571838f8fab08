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
    /// With `batched`, it waits for `flushDatagrams()` (see `sendDatagram(_:to:batched:)`).
    func sendApplicationDatagram(_ message: [UInt8], to peer: DeviceID, batched: Bool = false) throws {
        guard channels.peers[peer] != nil else { throw ChannelSendError(code: .unknownPeer) }
        guard message.count <= Self.maximumDatagramMessage else { throw ChannelSendError(code: .tooLargeForDatagram) }
        guard sendDatagram(.application(message), to: peer, batched: batched) else { throw ChannelSendError(code: .notActive) }
    }

    /// Sends `message` as an application message on `peer`'s stream without waiting for the
    /// write, as a reply the peer asked for; false (nothing sent) when there is no active
    /// channel or the peer does not drain (its connection holds more than the outbound budget's
    /// reply limit: the reply is dropped and counted).
    func sendStreamIfDraining(_ message: [UInt8], to peer: DeviceID) -> Bool {
        sendStream(.application(message), to: peer, traffic: .reply) != nil
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

    /// Returns once the inbound queue has room for stream messages again (at once when it has).
    func waitForInboundRoom() async {
        guard handOff.gate.isFull else { return }
        await withCheckedContinuation { reader in handOff.gate.pause { reader.resume() } }
    }
}
