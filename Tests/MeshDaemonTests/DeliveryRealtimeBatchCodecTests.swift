import Foundation
import Testing
@testable import MeshDaemon

@Suite("Delivery realtime batches: wire format and packing")
struct DeliveryRealtimeBatchCodecTests {
    static func item(_ index: Int, payload: Int = 200) -> DeliveryItem {
        DeliveryItem(eventID: UUID(), kind: 1, featureID: "demo", sessionID: UUID(),
                     payload: [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: payload))
    }

    @Test func aBatchDecodesToItsItemsInOrder() throws {
        let items = (0..<4).map { Self.item($0) }
        let bytes = DeliveryMessage.realtimeBatch(items).encode()
        #expect(bytes[0] == 0x0D && bytes[1] == 0 && bytes[2] == 4)
        guard case .realtimeBatch(let decoded) = try DeliveryMessage(decoding: bytes) else {
            Issue.record("not a realtime batch")
            return
        }
        #expect(decoded.map(\.eventID) == items.map(\.eventID))
        #expect(decoded.map(\.payload) == items.map(\.payload))
    }

    @Test func malformedBatchesAreErrorsNotTraps() {
        let items = (0..<3).map { Self.item($0, payload: 5) }
        let valid = DeliveryMessage.realtimeBatch(items).encode()
        // Empty: a count of 0 is never sent.
        #expect(throws: WireFormatError.self) { try DeliveryMessage(decoding: [0x0D, 0, 0]) }
        // No count at all, or half of one.
        #expect(throws: WireFormatError.self) { try DeliveryMessage(decoding: [0x0D]) }
        #expect(throws: WireFormatError.self) { try DeliveryMessage(decoding: [0x0D, 0]) }
        // The count lies: more items than the bytes hold, or fewer than are there (trailing bytes).
        for lie in [UInt16(4), 5, 0xFFFF, 2, 1] {
            var bytes = valid
            bytes[1] = UInt8(lie >> 8)
            bytes[2] = UInt8(lie & 0xFF)
            #expect(throws: WireFormatError.self) { try DeliveryMessage(decoding: bytes) }
        }
        // Truncated anywhere.
        for cut in 0..<valid.count {
            #expect(throws: WireFormatError.self) { try DeliveryMessage(decoding: Array(valid[..<cut])) }
        }
        // A trailing byte.
        #expect(throws: WireFormatError.self) { try DeliveryMessage(decoding: valid + [0]) }
    }

    @Test func packingFillsDatagramsInOrderAndKeepsSingleItemsPlain() throws {
        let items = (0..<25).map { Self.item($0) }
        let messages = items.map { DeliveryMessage.realtime($0).encode() }
        let groups = RealtimeSender.pack(messages)
        #expect(groups.count < items.count)
        #expect(groups.map(\.range.count).reduce(0, +) == items.count)
        var decoded: [UUID] = []
        for group in groups {
            #expect(group.bytes.count <= MeshNode.maximumDatagramMessage)
            switch try DeliveryMessage(decoding: group.bytes) {
            case .realtime(let item):
                #expect(group.range.count == 1)
                decoded.append(item.eventID)
            case .realtimeBatch(let batch):
                #expect(batch.count == group.range.count && batch.count > 1)
                decoded += batch.map(\.eventID)
            default:
                Issue.record("unexpected message type \(group.bytes[0])")
            }
        }
        #expect(decoded == items.map(\.eventID))
        // One item alone goes as a plain 0x01 message (what a build without batches reads).
        let single = RealtimeSender.pack([messages[0]])
        #expect(single.count == 1 && single[0].bytes == messages[0])
        // An item of the largest size a datagram takes goes alone, also between small ones.
        let largest = DeliveryItem(eventID: UUID(), kind: 1, featureID: "demo", sessionID: nil, payload: [])
        let padding = MeshNode.maximumDatagramMessage - DeliveryMessage.realtime(largest).encode().count
        let big = DeliveryMessage.realtime(DeliveryItem(eventID: UUID(), kind: 1, featureID: "demo", sessionID: nil,
                                                        payload: [UInt8](repeating: 1, count: padding))).encode()
        #expect(big.count == MeshNode.maximumDatagramMessage)
        let mixed = RealtimeSender.pack([messages[0], big, messages[1]])
        #expect(mixed.map(\.range) == [0..<1, 1..<2, 2..<3])
        #expect(mixed.allSatisfy { $0.bytes.count <= MeshNode.maximumDatagramMessage })
    }
}
