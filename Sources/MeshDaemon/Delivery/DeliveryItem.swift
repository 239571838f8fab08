import Foundation
import MeshCore
import SessionMesh

/// One application item as two daemons carry it: on the realtime datagram path, in a reliable
/// batch, and (by its fields) in the outbox and inbox.
///
/// ```
/// +-----------+------+-------------+---------+-------------+-------------+----------+
/// | eventID   | kind | featureLen  | feature | hasSession  | sessionID?  | payload  |
/// | 16        | u8   | u16         | UTF-8   | u8 (0 / 1)  | 16          | u32 len  |
/// +-----------+------+-------------+---------+-------------+-------------+----------+
/// ```
struct DeliveryItem: Sendable, Equatable {
    /// What the payload is (see `DeliveryItem.Kind`).
    enum Kind: UInt8, Sendable {
        /// An envelope the app sent in realtime mode (delivered as mode 1).
        case realtimeEnvelope = 1
        /// An envelope the app sent in reliable mode (mode 2).
        case reliableEnvelope = 2
        /// An acknowledgement envelope (mode 5).
        case acknowledgementEnvelope = 5
    }

    var eventID: UUID
    var kind: UInt8
    var featureID: String
    var sessionID: UUID?
    /// The encoded envelope (`SessionWireCodec`).
    var payload: [UInt8]
    /// The local uid whose app sent it, if known: its outbox rows count toward that uid's share
    /// (`uid_max_outbox_*`). Never on the wire; nil for items received or sent by the daemon.
    var ownerUID: UInt32?

    /// The local API `mode` byte of an envelope event carrying this item.
    var mode: UInt8 { kind }

    /// Bytes `encode(into:)` writes.
    var encodedSize: Int {
        16 + 1 + 2 + min(featureID.utf8.count, Int(UInt16.max)) + 1 + (sessionID == nil ? 0 : 16) + 4 + payload.count
    }

    func encode(into writer: inout WireWriter) {
        writer.uuid(eventID)
        writer.u8(kind)
        writer.string16(featureID)
        if let sessionID {
            writer.u8(1)
            writer.uuid(sessionID)
        } else {
            writer.u8(0)
        }
        writer.u32(UInt32(truncatingIfNeeded: payload.count))
        writer.raw(payload)
    }

    init(eventID: UUID, kind: UInt8, featureID: String, sessionID: UUID?, payload: [UInt8], ownerUID: UInt32? = nil) {
        self.ownerUID = ownerUID
        self.eventID = eventID
        self.kind = kind
        self.featureID = featureID
        self.sessionID = sessionID
        self.payload = payload
    }

    init(reading reader: inout WireReader) throws(WireFormatError) {
        eventID = try reader.uuid("item event id")
        kind = try reader.u8("item kind")
        featureID = try reader.string16("item feature")
        switch try reader.u8("item session flag") {
        case 0: sessionID = nil
        case 1: sessionID = try reader.uuid("item session")
        default: throw WireFormatError(what: "item session flag")
        }
        let length = Int(try reader.u32("item payload length"))
        payload = try reader.bytes(length, "item payload")
    }

    /// The store's form for the outbox.
    func outboxItem(createdAt: Date) -> OutboxItem {
        OutboxItem(eventID: eventID, featureID: featureID, sessionID: sessionID, kind: kind, payload: payload,
                   createdAt: createdAt, ownerUID: ownerUID)
    }

    /// The store's form for the inbox.
    func inboxItem(senderSequence: UInt64) -> InboxItem {
        InboxItem(eventID: eventID, featureID: featureID, sessionID: sessionID, kind: kind,
                  senderSequence: senderSequence, payload: payload)
    }

    /// Rebuilds an item from an outbox entry.
    init(_ entry: OutboxEntry) {
        self.init(eventID: entry.item.eventID, kind: entry.item.kind, featureID: entry.item.featureID,
                  sessionID: entry.item.sessionID, payload: entry.item.payload)
    }
}

extension WireWriter {
    mutating func uuid(_ value: UUID) {
        withUnsafeBytes(of: value.uuid) { raw($0) }
    }

    /// `u16 length | UTF-8` (truncated to 65535 bytes; callers validate lengths first).
    mutating func string16(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            let count = min(utf8.count, Int(UInt16.max))
            u16(UInt16(count))
            raw(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(utf8)[0..<count]))
        }
    }
}

extension WireReader {
    mutating func bytes(_ count: Int, _ what: String) throws(WireFormatError) -> [UInt8] {
        try take(count, what)
    }

    mutating func uuid(_ what: String) throws(WireFormatError) -> UUID {
        try borrow(16, what) { b in
            UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
        }
    }

    mutating func string16(_ what: String) throws(WireFormatError) -> String {
        let length = Int(try u16(what))
        return try borrow(length, what) { raw throws(WireFormatError) in
            guard let text = String(exactUTF8: raw) else { throw WireFormatError(what: what + " (not UTF-8)") }
            return text
        }
    }

    /// A `str16` of `range` UTF-8 bytes; anything shorter or longer is malformed.
    mutating func string16(_ what: String, bytes range: ClosedRange<Int>) throws(WireFormatError) -> String {
        let text = try string16(what)
        guard range.contains(text.utf8.count) else {
            throw WireFormatError(what: what + " (\(text.utf8.count) bytes, not \(range.lowerBound)–\(range.upperBound))")
        }
        return text
    }

    /// A feature ID: a `str16` of 1–255 UTF-8 bytes, the local API's limit for feature IDs.
    mutating func featureID(_ what: String) throws(WireFormatError) -> String {
        try string16(what, bytes: 1...FeatureIDLimit.maximumBytes)
    }
}
