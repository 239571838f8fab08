/// The plaintext of every sealed datagram and stream message on an active channel.
///
/// ```
/// +------+------------------------------------------+
/// | type | fields (big-endian)                      |
/// +------+------------------------------------------+
///   1  keepalive request   t1 i64                    (datagram; stream when the lease runs low)
///   2  keepalive reply     t1 i64, t2 i64, t3 i64    (on the path the request came)
///   3  ping request        id u32                    (either path)
///   4  ping reply          id u32                    (either path)
///   5  application         bytes                     (either path; the delivery protocol)
///   6  unpaired            —                         (stream; the sender removed the pair)
///   7  rekey initiation    Noise message 1           (stream)
///   8  rekey response      Noise message 2           (stream)
///   9  rekey confirm       —                         (stream; sender now uses the new keys)
///  10  confirm             —                         (stream; initiator has the first keys)
///  11…15 device set         `DeviceSetMessage`        (stream; only to peers that announced them)
/// ```
/// Timestamps are wall-clock nanoseconds since 1970 of the daemon that took them. Byte layouts
/// and examples: docs/PROTOCOL.md §7.
enum ChannelMessage: Sendable, Equatable {
    case keepaliveRequest(t1: Int64)
    case keepaliveReply(t1: Int64, t2: Int64, t3: Int64)
    case pingRequest(id: UInt32)
    case pingReply(id: UInt32)
    case application([UInt8])
    case unpaired
    case rekeyInitiation([UInt8])
    case rekeyResponse([UInt8])
    case rekeyConfirm
    case confirm
    case deviceSet(DeviceSetMessage)

    func encode() -> [UInt8] {
        var writer: WireWriter
        if case .application(let bytes) = self { writer = WireWriter(capacity: 1 + bytes.count) } else { writer = WireWriter() }
        switch self {
        case .keepaliveRequest(let t1): writer.u8(1); writer.i64(t1)
        case .keepaliveReply(let t1, let t2, let t3): writer.u8(2); writer.i64(t1); writer.i64(t2); writer.i64(t3)
        case .pingRequest(let id): writer.u8(3); writer.u32(id)
        case .pingReply(let id): writer.u8(4); writer.u32(id)
        case .application(let bytes): writer.u8(5); writer.raw(bytes)
        case .unpaired: writer.u8(6)
        case .rekeyInitiation(let bytes): writer.u8(7); writer.raw(bytes)
        case .rekeyResponse(let bytes): writer.u8(8); writer.raw(bytes)
        case .rekeyConfirm: writer.u8(9)
        case .confirm: writer.u8(10)
        case .deviceSet(let message): writer.u8(message.type); message.encodeBody(into: &writer)
        }
        return writer.bytes
    }

    init(decoding bytes: [UInt8]) throws(WireFormatError) {
        var reader = WireReader(bytes)
        let type = try reader.u8("channel message type")
        switch type {
        case 1: self = .keepaliveRequest(t1: try reader.i64("keepalive t1"))
        case 2: self = .keepaliveReply(t1: try reader.i64("keepalive t1"), t2: try reader.i64("keepalive t2"),
                                       t3: try reader.i64("keepalive t3"))
        case 3: self = .pingRequest(id: try reader.u32("ping id"))
        case 4: self = .pingReply(id: try reader.u32("ping id"))
        case 5: self = .application(reader.rest())
        case 6: self = .unpaired
        case 7: self = .rekeyInitiation(reader.rest())
        case 8: self = .rekeyResponse(reader.rest())
        case 9: self = .rekeyConfirm
        case 10: self = .confirm
        case 11...15: self = .deviceSet(try DeviceSetMessage(type: type, reader: &reader))
        default: throw WireFormatError(what: "channel message (unknown type \(type))")
        }
        try reader.expectEnd("channel message")
    }
}
