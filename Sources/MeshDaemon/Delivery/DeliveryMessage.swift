import Foundation
import MeshCore

/// The daemon-to-daemon application protocol, carried in `MeshNode.send` messages. The first
/// byte is the type; docs/DELIVERY.md draws every layout.
///
/// ```
///  type  name               path      body
///  0x01  realtime           datagram  item                       (stream when drained from pending)
///  0x02  realtime ack       datagram  eventID 16
///  0x03  reliable batch     stream    count u32, (sequence u64, item)*
///  0x04  reliable ack       stream    upTo u64 (cumulative, after the inbox commit)
///  0x05  snapshot push      stream    encoded snapshot (SessionWireCodec)
///  0x06  snapshot request   stream    encoded SessionSnapshotRequest
///  0x07  snapshot reply     stream    encoded snapshot (always shown to apps)
///  0x08  timer anchor       stream    anchor record (sender's wall clock)
///  0x09  session            stream    session record
///  0x0A  watermark          stream    sessionID 16, feature str16, sequence u64
///  0x0B  feature presence   either    count u16, feature str16 *
///  0x0C  realtime acks      datagram  count u16, eventID 16 *      (coalesced 0x02)
///  0x0D  realtime batch     datagram  count u16 (≥ 1), item *       (several 0x01 in one datagram)
///  0x0E  reliable resend    stream    after u64 (the sender's last ack; batches from there follow)
///  0x0F  reliable room      stream    (empty: the receiver refused a batch and has room again)
///  0x10  session hand-over  stream    owner str16 (a device ID), session record
/// ```
enum DeliveryMessage: Sendable, Equatable {
    case realtime(DeliveryItem)
    case realtimeAck(eventID: UUID)
    case reliableBatch([(sequence: UInt64, item: DeliveryItem)])
    case reliableAck(upTo: UInt64)
    case snapshotPush([UInt8])
    case snapshotRequest([UInt8])
    case snapshotReply([UInt8])
    case anchor(DeliveryAnchorRecord)
    case session(DeliverySessionRecord)
    case watermark(sessionID: UUID, featureID: String, sequence: UInt64)
    case presence(features: [String])
    case realtimeAcks([UUID])
    /// Several realtime items in one datagram, in send order (each handled as one `.realtime`).
    case realtimeBatch([DeliveryItem])
    /// The sender starts its reliable stream over after `after` (its last ack): what follows is
    /// its outbox from there (cancelled items left out), so a receiver that refused a batch may
    /// store batches again (`DeliveryPeerState.awaitingResend`).
    case reliableResend(after: UInt64)
    /// The receiver refused a batch (its inbox was full) and an app's ack has made room since:
    /// the sender may start over from its last ack now instead of at its retry delay.
    case reliableRoom
    /// A device-set member claims that `owner` owns the session now (docs/DEVICE-SET.md,
    /// "Session owner hand-over"): its own take-over, or a claim it accepted and passes on.
    case sessionHandOver(owner: DeviceID, record: DeliverySessionRecord)

    /// The smallest encoded item (eventID, kind, empty feature, no session, empty payload).
    static let minimumItemSize = 16 + 1 + 2 + 1 + 4
    /// Bytes of a realtime batch before its items (type and count).
    static let realtimeBatchHeaderSize = 3

    static func == (lhs: DeliveryMessage, rhs: DeliveryMessage) -> Bool { lhs.encode() == rhs.encode() }

    /// The bytes to pass to `MeshNode.send`.
    func encode() -> [UInt8] {
        var writer: WireWriter
        switch self {
        case .realtime(let item): writer = WireWriter(capacity: 1 + item.encodedSize)
        case .realtimeBatch(let items): writer = WireWriter(capacity: Self.realtimeBatchHeaderSize + items.reduce(0) { $0 + $1.encodedSize })
        default: writer = WireWriter(capacity: 64)
        }
        switch self {
        case .realtime(let item):
            writer.u8(0x01)
            item.encode(into: &writer)
        case .realtimeAck(let eventID):
            writer.u8(0x02)
            writer.uuid(eventID)
        case .reliableBatch(let items):
            writer.u8(0x03)
            writer.u32(UInt32(truncatingIfNeeded: items.count))
            for (sequence, item) in items {
                writer.u64(sequence)
                item.encode(into: &writer)
            }
        case .reliableAck(let upTo):
            writer.u8(0x04)
            writer.u64(upTo)
        case .reliableResend(let after):
            writer.u8(0x0E)
            writer.u64(after)
        case .reliableRoom:
            writer.u8(0x0F)
        case .sessionHandOver(let owner, let record):
            writer.u8(0x10)
            writer.string16(owner.description)
            record.encode(into: &writer)
        case .snapshotPush(let bytes):
            writer.u8(0x05)
            writer.raw(bytes)
        case .snapshotRequest(let bytes):
            writer.u8(0x06)
            writer.raw(bytes)
        case .snapshotReply(let bytes):
            writer.u8(0x07)
            writer.raw(bytes)
        case .anchor(let record):
            writer.u8(0x08)
            record.encode(into: &writer)
        case .session(let record):
            writer.u8(0x09)
            record.encode(into: &writer)
        case .watermark(let sessionID, let featureID, let sequence):
            writer.u8(0x0A)
            writer.uuid(sessionID)
            writer.string16(featureID)
            writer.u64(sequence)
        case .presence(let features):
            writer.u8(0x0B)
            writer.u16(UInt16(truncatingIfNeeded: features.count))
            for feature in features { writer.string16(feature) }
        case .realtimeAcks(let eventIDs):
            writer.u8(0x0C)
            writer.u16(UInt16(truncatingIfNeeded: eventIDs.count))
            for eventID in eventIDs { writer.uuid(eventID) }
        case .realtimeBatch(let items):
            writer.u8(0x0D)
            writer.u16(UInt16(truncatingIfNeeded: items.count))
            for item in items { item.encode(into: &writer) }
        }
        return writer.bytes
    }

    /// Strict decoding: any short, oversized or trailing input throws (the caller counts and
    /// drops it); never traps.
    init(decoding bytes: [UInt8]) throws(WireFormatError) {
        var reader = WireReader(bytes)
        let type = try reader.u8("delivery message type")
        switch type {
        case 0x01: self = .realtime(try DeliveryItem(reading: &reader))
        case 0x02: self = .realtimeAck(eventID: try reader.uuid("realtime ack"))
        case 0x03:
            let count = Int(try reader.u32("batch count"))
            // Each item takes at least 8 + 16 + 1 + 2 + 1 + 4 bytes: refuse counts the bytes cannot hold.
            guard count <= reader.remaining / 32 else { throw WireFormatError(what: "batch count") }
            var items: [(sequence: UInt64, item: DeliveryItem)] = []
            items.reserveCapacity(count)
            for _ in 0..<count {
                let sequence = try reader.u64("batch sequence")
                items.append((sequence, try DeliveryItem(reading: &reader)))
            }
            self = .reliableBatch(items)
        case 0x04: self = .reliableAck(upTo: try reader.u64("reliable ack"))
        case 0x0E: self = .reliableResend(after: try reader.u64("reliable resend"))
        case 0x0F: self = .reliableRoom
        case 0x10:
            // The owner in its canonical grouped form only, so one device has one spelling.
            let text = try reader.string16("hand-over owner", bytes: 1...64)
            guard let owner = try? DeviceID.parse(text), owner.description == text else {
                throw WireFormatError(what: "hand-over owner (not a device ID in its grouped form)")
            }
            self = .sessionHandOver(owner: owner, record: try DeliverySessionRecord(reading: &reader))
        case 0x05: self = .snapshotPush(reader.rest())
        case 0x06: self = .snapshotRequest(reader.rest())
        case 0x07: self = .snapshotReply(reader.rest())
        case 0x08: self = .anchor(try DeliveryAnchorRecord(reading: &reader))
        case 0x09: self = .session(try DeliverySessionRecord(reading: &reader))
        case 0x0A:
            let sessionID = try reader.uuid("watermark session")
            let featureID = try reader.featureID("watermark feature")
            let sequence = try reader.u64("watermark sequence")
            // The store keeps sequences as SQLite integers, as `watermark.set` does locally.
            guard sequence <= UInt64(Int64.max) else { throw WireFormatError(what: "watermark sequence (above 2^63 − 1)") }
            self = .watermark(sessionID: sessionID, featureID: featureID, sequence: sequence)
        case 0x0B:
            let count = Int(try reader.u16("presence count"))
            var features: [String] = []
            for _ in 0..<count { features.append(try reader.featureID("presence feature")) }
            self = .presence(features: features)
        case 0x0C:
            let count = Int(try reader.u16("acks count"))
            guard count <= reader.remaining / 16 else { throw WireFormatError(what: "acks count") }
            var eventIDs: [UUID] = []
            for _ in 0..<count { eventIDs.append(try reader.uuid("acked event id")) }
            self = .realtimeAcks(eventIDs)
        case 0x0D:
            let count = Int(try reader.u16("realtime batch count"))
            guard count >= 1, count <= reader.remaining / Self.minimumItemSize else {
                throw WireFormatError(what: "realtime batch count")
            }
            var items: [DeliveryItem] = []
            items.reserveCapacity(count)
            for _ in 0..<count { items.append(try DeliveryItem(reading: &reader)) }
            self = .realtimeBatch(items)
        default:
            throw WireFormatError(what: "delivery message (unknown type \(type))")
        }
        try reader.expectEnd("delivery message")
    }
}
