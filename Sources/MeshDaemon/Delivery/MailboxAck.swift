import Foundation

/// The plaintext of a mailbox ack box (kind 2): the event IDs of the items the receiver stored
/// durably (or held already), so their sender deletes exactly those outbox items.
///
/// ```
/// +-------------+-----------------------+
/// | count u16   | eventID (16) × count  |
/// +-------------+-----------------------+
///   count 1 … 4091 (a box holds at most 65 466 plaintext bytes)
/// ```
/// Not cumulative, unlike the channel's reliable ack: boxes arrive in any order and some never
/// do, so each ack names the items it covers. An ack is safe to receive twice (a second delete
/// finds nothing), which is what a box may be after the receiver restarts.
struct MailboxAck: Sendable, Equatable {
    /// Most event IDs in one ack.
    static let maximumCount = 4_091

    var eventIDs: [UUID]

    /// The ack boxes' plaintexts for `eventIDs`, at most ``maximumCount`` each.
    static func plaintexts(for eventIDs: [UUID]) -> [[UInt8]] {
        stride(from: 0, to: eventIDs.count, by: maximumCount).map { start in
            MailboxAck(eventIDs: Array(eventIDs[start..<min(start + maximumCount, eventIDs.count)])).encode()
        }
    }

    func encode() -> [UInt8] {
        var writer = WireWriter(capacity: 2 + 16 * eventIDs.count)
        writer.u16(UInt16(truncatingIfNeeded: eventIDs.count))
        for eventID in eventIDs { writer.uuid(eventID) }
        return writer.bytes
    }

    /// Strict: a count of 0 or above ``maximumCount``, a short or a longer input throw.
    init(decoding bytes: [UInt8]) throws(WireFormatError) {
        var reader = WireReader(bytes)
        let count = Int(try reader.u16("mailbox ack count"))
        guard count >= 1, count <= Self.maximumCount, count * 16 == reader.remaining else {
            throw WireFormatError(what: "mailbox ack count")
        }
        var eventIDs: [UUID] = []
        eventIDs.reserveCapacity(count)
        for _ in 0..<count { eventIDs.append(try reader.uuid("mailbox acked event id")) }
        try reader.expectEnd("mailbox ack")
        self.eventIDs = eventIDs
    }

    init(eventIDs: [UUID]) { self.eventIDs = eventIDs }
}
