/// The clear header in front of every channel datagram; authenticated as associated data.
///
/// ```
/// +------+---------------------+-------------------------------------------------+
/// | type | receiver index      | counter (u64 LE) | ChaCha20-Poly1305 ct | tag  |
/// |  u8  | u32 (BE)            |      8 bytes     |        n bytes       |  16  |
/// +------+---------------------+-------------------------------------------------+
///  \_______ header ___________/ \______________ DatagramSealer output ____________/
/// ```
/// `type` is 1 (transport data). The receiver index names the receiver's keys; a datagram
/// with an unknown index, another type, or a failed tag is dropped without a reply.
struct DatagramHeader: Sendable, Equatable {
    static let transportType: UInt8 = 1
    static let size = 5

    var receiverIndex: UInt32

    var bytes: [UInt8] {
        var writer = WireWriter(capacity: Self.size)
        writer.u8(Self.transportType)
        writer.u32(receiverIndex)
        return writer.bytes
    }

    init(receiverIndex: UInt32) { self.receiverIndex = receiverIndex }

    /// Parses the header of `datagram` (the bytes where they were received); nil when it is not
    /// a transport datagram.
    init?(parsing datagram: UnsafeRawBufferPointer) {
        guard datagram.count > Self.size, datagram[0] == Self.transportType else { return nil }
        var index: UInt32 = 0
        for i in 1...4 { index = index << 8 | UInt32(datagram[i]) }
        receiverIndex = index
    }
}
