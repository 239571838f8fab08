/// What each side tells the other inside the (encrypted) Noise handshake messages.
///
/// ```
/// +---------+---------------+-----------+-------------------+-------+
/// | version | session index | UDP port  | wall time (ns)    | flags |
/// |   u8    |   u32 (BE)    | u16 (BE)  | i64 (BE)          |  u8   |
/// +---------+---------------+-----------+-------------------+-------+
/// ```
/// - *session index*: the index the sender wants on datagrams addressed to it, so a receiver
///   finds the keys with one dictionary lookup and an unknown index costs nothing.
/// - *UDP port*: where the sender listens (TCP uses the same port), so the peer can learn an
///   address to reconnect to from an inbound connection.
/// - *wall time*: the initiator's timestamp makes a replayed first message useless (the
///   responder only accepts a timestamp newer than the last confirmed one from that peer, and
///   none more than `maximumLeadNanoseconds` ahead of its own clock; the timestamp is recorded
///   only once the initiator confirmed the handshake).
/// - *flags*: bit 0 marks a rekey over an existing channel; bit 1 says the sender reads the
///   device set's channel messages (`0x0B`…`0x0F`), so they may be sent to it.
struct HandshakePayload: Sendable, Equatable {
    static let version: UInt8 = 1
    static let encodedSize = 16
    /// How far ahead of the responder's wall clock an initiator's timestamp may be: one hour.
    /// Beyond it the handshake is refused (`handshakes.refused.future`), so no timestamp can
    /// lock a peer's later handshakes out as replays for longer than that.
    static let maximumLeadNanoseconds: Int64 = 3_600_000_000_000

    var sessionIndex: UInt32
    var udpPort: UInt16
    var wallNanoseconds: Int64
    var isRekey: Bool
    /// Flags bit 1: the sender reads the device set's channel messages.
    var speaksDeviceSet: Bool

    func encode() -> [UInt8] {
        var writer = WireWriter(capacity: Self.encodedSize)
        writer.u8(Self.version)
        writer.u32(sessionIndex)
        writer.u16(udpPort)
        writer.i64(wallNanoseconds)
        writer.u8((isRekey ? 1 : 0) | (speaksDeviceSet ? 2 : 0))
        return writer.bytes
    }

    init(sessionIndex: UInt32, udpPort: UInt16, wallNanoseconds: Int64, isRekey: Bool, speaksDeviceSet: Bool = false) {
        self.sessionIndex = sessionIndex
        self.udpPort = udpPort
        self.wallNanoseconds = wallNanoseconds
        self.isRekey = isRekey
        self.speaksDeviceSet = speaksDeviceSet
    }

    init(decoding bytes: [UInt8]) throws(WireFormatError) {
        var reader = WireReader(bytes)
        guard try reader.u8("handshake payload version") == Self.version else {
            throw WireFormatError(what: "handshake payload (unsupported version)")
        }
        sessionIndex = try reader.u32("handshake session index")
        udpPort = try reader.u16("handshake UDP port")
        wallNanoseconds = try reader.i64("handshake timestamp")
        let flags = try reader.u8("handshake flags")
        isRekey = flags & 1 == 1
        speaksDeviceSet = flags & 2 == 2
        try reader.expectEnd("handshake payload")
    }
}
