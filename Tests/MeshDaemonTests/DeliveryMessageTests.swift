import Foundation
import MeshCore
import MeshCrypto
import SessionMesh
import Testing
@testable import MeshDaemon

@Suite("Delivery wire protocol")
struct DeliveryMessageTests {
    @Test func aSendTargetMeansEveryPeerWhenMissingAllOrBlank() {
        for target in [nil, "", "all", " ", "\t \t", "\u{00A0}", " \u{2003} "] as [String?] {
            #expect(DeliveryRouter.meansEveryPeer(target), "\(String(describing: target)) is every peer")
        }
        for target in ["x", " all", "ABCDEFG-HIJKLMN", "\n", "\u{00A0}x"] {
            #expect(!DeliveryRouter.meansEveryPeer(target), "\(target) names a device")
            #expect(target.trimmingCharacters(in: .whitespaces).isEmpty == DeliveryRouter.meansEveryPeer(target))
        }
    }

    static let item = DeliveryItem(eventID: UUID(), kind: 2, featureID: "démo", sessionID: UUID(), payload: [1, 2, 3])

    static let samples: [DeliveryMessage] = [
        .realtime(item),
        .realtime(DeliveryItem(eventID: UUID(), kind: 1, featureID: "f", sessionID: nil, payload: [])),
        .realtimeAck(eventID: UUID()),
        .reliableBatch([(UInt64(1), item), (UInt64(2), item)]),
        .reliableBatch([]),
        .reliableAck(upTo: 42),
        .reliableResend(after: 41), .reliableResend(after: 0), .reliableRoom,
        .snapshotPush([9, 9]), .snapshotRequest([8]), .snapshotReply([]),
        .anchor(DeliveryAnchorRecord(sessionID: UUID(), featureID: "demo", revision: 3,
                                     anchor: SessionTimerAnchor(startedAt: Date(timeIntervalSince1970: 1_700_000_000.25),
                                                                accumulatedElapsedBeforeAnchor: 1.5,
                                                                pauseStartedAt: Date(timeIntervalSince1970: 1_700_000_010),
                                                                isPaused: true, expectedEndAt: nil,
                                                                stepStartedAt: Date(timeIntervalSince1970: 1_700_000_001)))),
        .session(DeliverySessionRecord(sessionID: UUID(), featureID: "demo", owner: "o", status: "running",
                                       updatedAtMicros: 1_700_000_000_000_000, revision: 7)),
        .sessionHandOver(owner: DeviceID(publicKey: Array(repeating: 7, count: 32)),
                         record: DeliverySessionRecord(sessionID: UUID(), featureID: "demo", owner: "o", status: "open",
                                                       updatedAtMicros: -5, revision: 8)),
        .watermark(sessionID: UUID(), featureID: "demo", sequence: 99),
        .presence(features: ["a", "b"]), .presence(features: []),
        .realtimeAcks([UUID(), UUID(), UUID()]),
        .realtimeBatch([item, DeliveryItem(eventID: UUID(), kind: 1, featureID: "f", sessionID: nil, payload: [7])]),
        .realtimeBatch([item]),
    ]

    @Test(arguments: samples)
    func everyMessageRoundTrips(_ message: DeliveryMessage) throws {
        #expect(try DeliveryMessage(decoding: message.encode()) == message)
    }

    @Test func truncationsAndTrailingBytesAreErrorsNotTraps() {
        for message in Self.samples {
            let bytes = message.encode()
            for cut in 0..<bytes.count {
                // A shorter prefix may decode as something (e.g. a shorter snapshot body), never as the original.
                if let decoded = try? DeliveryMessage(decoding: Array(bytes[..<cut])) { #expect(decoded != message) }
            }
            // Snapshot bodies (0x05–0x07) run to the end; SessionWireCodec checks them.
            if !(0x05...0x07).contains(bytes[0]) {
                #expect(throws: WireFormatError.self) { try DeliveryMessage(decoding: bytes + [0]) }
            }
        }
        #expect(throws: WireFormatError.self) { try DeliveryMessage(decoding: [0x03, 0xFF, 0xFF, 0xFF, 0xFF]) }
        #expect(throws: WireFormatError.self) { try DeliveryMessage(decoding: [0x7F]) }
        #expect(throws: WireFormatError.self) { try DeliveryMessage(decoding: []) }
    }

    @Test func randomBytesNeverTrap() {
        var random = SeededGenerator(seed: SeededGenerator.seed(for: "delivery random bytes"))
        for round in 0..<20_000 {
            var bytes = (0..<Int.random(in: 0...64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            if round % 2 == 0, !bytes.isEmpty { bytes[0] = UInt8.random(in: 1...0x0F, using: &random) }
            _ = try? DeliveryMessage(decoding: bytes)
        }
        // Mutations of valid messages.
        for message in Self.samples {
            let valid = message.encode()
            for _ in 0..<500 where !valid.isEmpty {
                var bytes = valid
                bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                _ = try? DeliveryMessage(decoding: bytes)
            }
        }
    }
}

extension DeliveryMessage: CustomTestStringConvertible {
    public var testDescription: String { "type \(encode().first ?? 0), \(encode().count) bytes" }
}
