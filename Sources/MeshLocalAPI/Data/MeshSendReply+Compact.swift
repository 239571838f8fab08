import Foundation
import NIOCore

extension MeshSendReply {
    /// Reads the `send` reply in the exact compact form meshd writes
    /// (`{"eventID":"…","outcome":"…","peers":N}`, sorted keys, no spaces) without a JSON decoder:
    /// the reply to every send, so its decoding cost matters. Nil for any other shape (a valid
    /// reply in another layout, a newer daemon's extra field): decode it with `LocalAPIJSON` then.
    public init?(compactBody body: ByteBuffer) {
        guard let reply = body.withUnsafeReadableBytes({ Self.parseCompact($0) }) else { return nil }
        self = reply
    }

    /// The compact form parsed from raw memory (indexing a `ByteBufferView` element by element
    /// costs several times more).
    private static func parseCompact(_ view: UnsafeRawBufferPointer) -> MeshSendReply? {
        var index = 0
        func expect(_ literal: StaticString) -> Bool {
            let count = literal.utf8CodeUnitCount
            guard view.count - index >= count, let base = view.baseAddress,
                  memcmp(base + index, literal.utf8Start, count) == 0 else { return false }
            index += count
            return true
        }
        guard expect(#"{"eventID":""#), view.count - index >= 36,
              let eventID = uuid(UnsafeRawBufferPointer(rebasing: view[index..<(index + 36)])) else { return nil }
        index += 36
        guard expect(#"","outcome":""#) else { return nil }
        let outcome: Outcome
        if expect("sent") { outcome = .sent } else if expect("queued") { outcome = .queued } else if expect("pending") { outcome = .pending } else { return nil }
        guard expect(#"","peers":"#) else { return nil }
        var peers = 0
        var digits = 0
        while index < view.count, let digit = view[index].asciiDigit, digits < 9 {
            peers = peers * 10 + digit
            digits += 1
            index += 1
        }
        guard digits > 0, index + 1 == view.count, view[index] == UInt8(ascii: "}") else { return nil }
        return MeshSendReply(eventID: eventID, outcome: outcome, peers: peers)
    }

    /// A UUID in its 36-character text form (either case), without `UUID(uuidString:)`'s scanf.
    /// Each character's value comes from a table: an event ID's digits and letters are random,
    /// and a range test per character (digit, lower, upper) was a branch mispredicted about
    /// every other character, on every send's reply.
    private static func uuid(_ text: UnsafeRawBufferPointer) -> UUID? {
        guard text.count == 36 else { return nil }
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let ok = hexValues.withUnsafeBufferPointer { table in
            withUnsafeMutableBytes(of: &bytes) { out -> Bool in
                var invalid: UInt8 = 0
                var position = 0
                var offset = 0
                while offset < 36 {
                    if offset == 8 || offset == 13 || offset == 18 || offset == 23 {
                        invalid |= text[offset] == UInt8(ascii: "-") ? 0 : 0x10
                        offset += 1
                        continue
                    }
                    let high = table[Int(text[offset])], low = table[Int(text[offset + 1])]
                    invalid |= high | low
                    out[position] = high << 4 | (low & 0x0F)
                    position += 1
                    offset += 2
                }
                // A valid character's value is below 16; 0x10 marks anything else.
                return invalid & 0xF0 == 0
            }
        }
        return ok ? UUID(uuid: bytes) : nil
    }

    /// Every byte's hex value, 0x10 for bytes that are not hex digits.
    private static let hexValues: [UInt8] = (0...255).map { byte in
        switch UInt8(byte) {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt8(byte) - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt8(byte) - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt8(byte) - UInt8(ascii: "A") + 10
        default: 0x10
        }
    }
}

private extension UInt8 {
    var asciiDigit: Int? { (48...57).contains(self) ? Int(self) - 48 : nil }
}
