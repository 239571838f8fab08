/// The device set's channel messages (types `0x0B`…`0x0F`, stream only; docs/PROTOCOL.md
/// "The device set"). Sent only to a peer whose handshake payload set flags bit 1.
///
/// ```
/// 0x0B roster head      digest (32) | record count u16
/// 0x0C roster records   flags u8 (bit 0: all the sender has) | count u16 | count × (len u16 | record)
/// 0x0D join proposal    an add record whose subject signature is 64 zero bytes
/// 0x0E join signed      the same add record, countersigned
/// 0x0F member addresses count u8 | count × (device key (32) | n u8 | n × (len u8 | "HOST:PORT"))
/// ```
enum DeviceSetMessage: Sendable, Equatable {
    case rosterHead(digest: [UInt8], count: UInt16)
    /// `complete`: these are all the records the sender has (else: new ones only).
    case rosterRecords([[UInt8]], complete: Bool)
    case joinProposal([UInt8])
    case joinSigned([UInt8])
    case memberAddresses([MemberAddresses])

    /// Where one member can be reached, as the sender knows it.
    struct MemberAddresses: Sendable, Equatable {
        var deviceKey: [UInt8]
        var addresses: [String]
    }

    static let maximumRecords = Roster.maximumRecords
    static let maximumAddressMembers = RosterView.maximumMembers
    static let maximumAddressesPerMember = 8
    static let maximumAddressBytes = 64

    var type: UInt8 {
        switch self {
        case .rosterHead: 0x0B
        case .rosterRecords: 0x0C
        case .joinProposal: 0x0D
        case .joinSigned: 0x0E
        case .memberAddresses: 0x0F
        }
    }

    /// The body after the type byte.
    func encodeBody(into writer: inout WireWriter) {
        switch self {
        case .rosterHead(let digest, let count):
            writer.raw(digest); writer.u16(count)
        case .rosterRecords(let records, let complete):
            writer.u8(complete ? 1 : 0)
            writer.u16(UInt16(records.count))
            for record in records { writer.u16(UInt16(record.count)); writer.raw(record) }
        case .joinProposal(let record), .joinSigned(let record):
            writer.raw(record)
        case .memberAddresses(let members):
            writer.u8(UInt8(members.count))
            for member in members {
                writer.raw(member.deviceKey)
                writer.u8(UInt8(member.addresses.count))
                for address in member.addresses {
                    let bytes = Array(address.utf8)
                    writer.u8(UInt8(bytes.count)); writer.raw(bytes)
                }
            }
        }
    }

    /// Reads the body of a message of `type` (the rest of the channel message).
    init(type: UInt8, reader: inout WireReader) throws(WireFormatError) {
        switch type {
        case 0x0B:
            self = .rosterHead(digest: try reader.take(32, "roster digest"), count: try reader.u16("roster record count"))
        case 0x0C:
            let flags = try reader.u8("roster records flags")
            guard flags <= 1 else { throw WireFormatError(what: "roster records (unknown flags)") }
            let count = Int(try reader.u16("roster records count"))
            guard count <= Self.maximumRecords else { throw WireFormatError(what: "roster records (more than \(Self.maximumRecords))") }
            var records: [[UInt8]] = []
            records.reserveCapacity(count)
            for _ in 0..<count {
                let length = Int(try reader.u16("roster record length"))
                guard length <= RosterRecord.maximumEncodedBytes else { throw WireFormatError(what: "roster record (too long)") }
                records.append(try reader.take(length, "roster record"))
            }
            self = .rosterRecords(records, complete: flags & 1 == 1)
        case 0x0D, 0x0E:
            let record = reader.rest()
            guard record.count <= RosterRecord.maximumEncodedBytes else { throw WireFormatError(what: "join record (too long)") }
            self = type == 0x0D ? .joinProposal(record) : .joinSigned(record)
        case 0x0F:
            let count = Int(try reader.u8("member count"))
            guard count <= Self.maximumAddressMembers else { throw WireFormatError(what: "member addresses (more than 64 members)") }
            var members: [MemberAddresses] = []
            for _ in 0..<count {
                let key = try reader.take(32, "member device key")
                let n = Int(try reader.u8("member address count"))
                guard n <= Self.maximumAddressesPerMember else { throw WireFormatError(what: "member addresses (more than 8)") }
                var addresses: [String] = []
                for _ in 0..<n {
                    let length = Int(try reader.u8("member address length"))
                    guard length <= Self.maximumAddressBytes,
                          let text = String(validating: try reader.take(length, "member address"), as: UTF8.self)
                    else { throw WireFormatError(what: "member address") }
                    addresses.append(text)
                }
                members.append(MemberAddresses(deviceKey: key, addresses: addresses))
            }
            self = .memberAddresses(members)
        default:
            throw WireFormatError(what: "device set message (unknown type \(type))")
        }
    }
}
