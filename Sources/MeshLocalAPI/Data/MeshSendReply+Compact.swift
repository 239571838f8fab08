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
              let eventID = UUID(uuidString: String(decoding: view[index..<(index + 36)], as: UTF8.self)) else { return nil }
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
}

private extension UInt8 {
    var asciiDigit: Int? { (48...57).contains(self) ? Int(self) - 48 : nil }
}
