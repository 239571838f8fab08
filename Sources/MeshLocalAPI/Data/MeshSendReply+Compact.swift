import Foundation
import NIOCore

extension MeshSendReply {
    /// Reads the `send` reply in the exact compact form meshd writes
    /// (`{"eventID":"…","outcome":"…","peers":N}`, sorted keys, no spaces) without a JSON decoder:
    /// the reply to every send, so its decoding cost matters. Nil for any other shape (a valid
    /// reply in another layout, a newer daemon's extra field): decode it with `LocalAPIJSON` then.
    public init?(compactBody body: ByteBuffer) {
        let prefix = #"{"eventID":""#.utf8, middle = #"","outcome":""#.utf8, tail = #"","peers":"#.utf8
        let view = body.readableBytesView
        var index = view.startIndex
        func expect(_ literal: String.UTF8View) -> Bool {
            guard view.distance(from: index, to: view.endIndex) >= literal.count,
                  view[index..<(index + literal.count)].elementsEqual(literal) else { return false }
            index += literal.count
            return true
        }
        guard expect(prefix), view.distance(from: index, to: view.endIndex) >= 36,
              let eventID = Self.uuid(view[index..<(index + 36)]) else { return nil }
        index += 36
        guard expect(middle), let quote = view[index...].firstIndex(of: UInt8(ascii: "\"")),
              let outcome = Outcome(rawValue: String(decoding: view[index..<quote], as: UTF8.self)) else { return nil }
        index = quote
        guard expect(tail) else { return nil }
        var peers = 0
        var digits = 0
        while index < view.endIndex, let digit = view[index].asciiDigit, digits < 9 {
            peers = peers * 10 + digit
            digits += 1
            index += 1
        }
        guard digits > 0, index + 1 == view.endIndex, view[index] == UInt8(ascii: "}") else { return nil }
        self.init(eventID: eventID, outcome: outcome, peers: peers)
    }

    /// A UUID in its 36-character text form (either case), without `UUID(uuidString:)`'s scanf.
    private static func uuid(_ text: ByteBufferView.SubSequence) -> UUID? {
        var bytes = [UInt8]()
        bytes.reserveCapacity(16)
        var high: UInt8?
        for (offset, character) in text.enumerated() {
            if offset == 8 || offset == 13 || offset == 18 || offset == 23 {
                guard character == UInt8(ascii: "-") else { return nil }
                continue
            }
            guard let nibble = character.hexNibble else { return nil }
            if let first = high {
                bytes.append(first << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        guard bytes.count == 16 else { return nil }
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}

private extension UInt8 {
    var asciiDigit: Int? { (48...57).contains(self) ? Int(self) - 48 : nil }

    var hexNibble: UInt8? {
        switch self {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): self - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): self - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): self - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
