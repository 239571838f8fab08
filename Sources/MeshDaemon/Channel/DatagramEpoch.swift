import MeshCrypto

/// The datagram keys of one handshake, with the session indices both sides chose.
struct DatagramEpoch: Sendable {
    /// The index the peer puts on datagrams to us (names these keys in our table).
    var localIndex: UInt32
    /// The index we put on datagrams to the peer.
    var remoteIndex: UInt32
    var sealer: DatagramSealer
    var opener: DatagramOpener
    /// Monotonic instant the handshake that made these keys completed.
    var createdAt: UInt64

    /// Header + sealed datagram carrying `message`.
    mutating func seal(_ message: ChannelMessage) throws -> [UInt8] {
        let header = DatagramHeader(receiverIndex: remoteIndex).bytes
        return header + (try sealer.seal(message.encode(), associatedData: header))
    }

    /// Opens a whole datagram (header included) addressed to `localIndex`.
    mutating func open(_ datagram: [UInt8]) throws -> ChannelMessage {
        let header = Array(datagram[0..<DatagramHeader.size])
        let body = Array(datagram[DatagramHeader.size...])
        return try ChannelMessage(decoding: try opener.open(body, associatedData: header))
    }
}
