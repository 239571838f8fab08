import MeshCrypto
import NIOCore

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
        var buffer = ByteBuffer()
        try seal(message, into: &buffer)
        return Array(buffer.readableBytesView)
    }

    /// Writes header + sealed datagram carrying `message` at the end of `buffer`: the header
    /// and the sealer's output go straight into the buffer (no intermediate arrays).
    mutating func seal(_ message: ChannelMessage, into buffer: inout ByteBuffer) throws {
        let plaintext = message.encode()
        let headerSize = DatagramHeader.size
        let total = headerSize + plaintext.count + DatagramSealer.overhead
        let remoteIndex = remoteIndex
        try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: total) { out in
            out[0] = DatagramHeader.transportType
            out.storeBytes(of: remoteIndex.bigEndian, toByteOffset: 1, as: UInt32.self)
            let header = UnsafeRawBufferPointer(rebasing: out[0..<headerSize])
            let body = UnsafeMutableRawBufferPointer(rebasing: out[headerSize..<total])
            let sealed = try plaintext.withUnsafeBytes { try sealer.seal($0, associatedData: header, into: body) }
            return headerSize + sealed
        }
    }

    /// Opens a whole datagram (header included) addressed to `localIndex`.
    mutating func open(_ datagram: UnsafeRawBufferPointer) throws -> ChannelMessage {
        let headerSize = DatagramHeader.size
        guard datagram.count >= headerSize + DatagramSealer.overhead else {
            throw WireFormatError(what: "datagram shorter than its header, counter and tag")
        }
        let header = UnsafeRawBufferPointer(rebasing: datagram[0..<headerSize])
        let body = UnsafeRawBufferPointer(rebasing: datagram[headerSize...])
        let plaintext = try [UInt8](unsafeUninitializedCapacity: body.count - DatagramSealer.overhead) { out, count in
            count = try opener.open(body, associatedData: header, into: UnsafeMutableRawBufferPointer(out))
        }
        return try ChannelMessage(decoding: plaintext)
    }
}
