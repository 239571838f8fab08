import Foundation
import MeshCrypto
import Testing
@testable import MeshDaemon

/// The mailbox's own bytes: the ack plaintext (strict), an item box holding a reliable batch
/// that opens only for its receiver, the client ID that names no device, and the open budget.
@Suite("Mailbox formats")
struct MailboxFormatTests {
    static let eventA = UUID(uuidString: "00112233-4455-6677-8899-AABBCCDDEEFF")!
    static let eventB = UUID(uuidString: "01234567-89AB-CDEF-0123-456789ABCDEF")!

    @Test func ackLayout() throws {
        let bytes = MailboxAck(eventIDs: [Self.eventA, Self.eventB]).encode()
        #expect(Self.hex(bytes) == "0002" + "00112233445566778899aabbccddeeff" + "0123456789abcdef0123456789abcdef")
        #expect(try MailboxAck(decoding: bytes).eventIDs == [Self.eventA, Self.eventB])
    }

    @Test(arguments: [
        "", "00", "0000", "0001", "000100112233445566778899aabbccddee", "0001" + String(repeating: "00", count: 17),
        "0fff" + String(repeating: "00", count: 16 * 4_095),
    ])
    func malformedAcksAreRefused(_ hex: String) {
        #expect(throws: WireFormatError.self) { try MailboxAck(decoding: Self.bytes(hex)) }
    }

    /// The vector of docs/PROTOCOL.md §11 (computed independently with Python's `hashlib`).
    @Test func snapshotAckIDVector() throws {
        let id = MailboxSnapshotAckID.of(featureID: "demo", sessionID: Self.eventB, revision: 20)
        #expect(id == UUID(uuidString: "DA98E8D3-B277-9120-2719-8865F75694D1"))
        #expect(MailboxSnapshotAckID.of(featureID: "demo", sessionID: Self.eventB, revision: 21)
                == UUID(uuidString: "7526103E-8347-953C-6788-45F5D1FE29A5"), "each revision has its own ID")
        #expect(MailboxSnapshotAckID.of(featureID: "demx", sessionID: Self.eventB, revision: 20) != id)
        // The page shows the hashed bytes and the ID (compactText climbs three folders from its argument).
        let page = try ProtocolPage.compactText(file: URL(fileURLWithPath: #filePath).deletingLastPathComponent().path)
        let hashed = MailboxSnapshotAckID.label + [0, 4] + Array("demo".utf8) + withUnsafeBytes(of: Self.eventB.uuid) { Array($0) }
            + [0, 0, 0, 0, 0, 0, 0, 20]
        #expect(page.contains(ProtocolPage.compact(ProtocolPage.hex(hashed))), "docs/PROTOCOL.md shows the hashed bytes")
        #expect(page.contains("ackid" + ProtocolPage.compact("da 98 e8 d3 b2 77 91 20 27 19 88 65 f7 56 94 d1")))
    }

    @Test func aSnapshotBoxCarriesASnapshotPushAndOpensOnlyAsASnapshot() throws {
        let a = X25519KeyPair.generate(), b = X25519KeyPair.generate(), pairKey = SecretBytes.random(count: 32)
        let sealAB = try #require(MailboxSeal(identity: a, peerPublicKey: b.publicKey, pairKey: pairKey))
        let sealBA = try #require(MailboxSeal(identity: b, peerPublicKey: a.publicKey, pairKey: pairKey))
        let plaintext = DeliveryMessage.snapshotPush([1, 2, 3]).encode()
        #expect(plaintext == [0x05, 1, 2, 3])
        let box = sealAB.seal(plaintext, kind: .snapshot, counter: 7)
        #expect(box[1] == 3, "box kind 3")
        let envelope = try #require(RelayEnvelope.unnumbered(.mailboxSnapshot, payload: box).encode())
        #expect(envelope[1] == 6, "relay message kind 0x06")
        let opened = try #require(sealBA.open(try RelayEnvelope(decoding: envelope).payload))
        #expect(opened.kind == .snapshot && opened.plaintext == plaintext)
        var relabelled = box
        relabelled[1] = MailboxSeal.Kind.item.rawValue
        #expect(sealBA.open(relabelled) == nil, "a snapshot box does not open as an item box")
    }

    @Test func acksSplitAtTheirLimit() throws {
        let ids = (0..<(MailboxAck.maximumCount + 5)).map { _ in UUID() }
        let plaintexts = MailboxAck.plaintexts(for: ids)
        #expect(plaintexts.count == 2)
        #expect(plaintexts.allSatisfy { $0.count <= RelayEnvelope.maximumPayload - MailboxSeal.overhead })
        #expect(try plaintexts.flatMap { try MailboxAck(decoding: $0).eventIDs } == ids)
    }

    @Test func anItemBoxCarriesAReliableBatchToItsReceiverAlone() throws {
        let a = X25519KeyPair.generate(), b = X25519KeyPair.generate(), pairKey = SecretBytes.random(count: 32)
        let sealAB = try #require(MailboxSeal(identity: a, peerPublicKey: b.publicKey, pairKey: pairKey))
        let sealBA = try #require(MailboxSeal(identity: b, peerPublicKey: a.publicKey, pairKey: pairKey))
        let item = DeliveryItem(eventID: Self.eventA, kind: 2, featureID: "demo", sessionID: Self.eventB, payload: [0xcc])
        let plaintext = DeliveryMessage.reliableBatch([(UInt64(1), item)]).encode()
        let box = sealAB.seal(plaintext, kind: .item, counter: 42)
        let envelope = try #require(RelayEnvelope.unnumbered(.mailboxItem, payload: box).encode())
        let decoded = try RelayEnvelope(decoding: envelope)
        #expect(decoded.kind == .mailboxItem)
        let opened = try #require(sealBA.open(decoded.payload))
        #expect(opened.kind == .item && opened.counter == 42)
        #expect(try DeliveryMessage(decoding: opened.plaintext) == .reliableBatch([(UInt64(1), item)]))
        #expect(sealAB.open(box) == nil, "the sender cannot open its own box")
    }

    @Test func theClientIDIsStableAndNamesNoDevice() throws {
        let keys = X25519KeyPair.generate()
        let id = MailboxClientID.derive(privateKey: keys.privateKey)
        #expect(id == MailboxClientID.derive(privateKey: keys.privateKey))
        #expect(id.count == 19 && id.hasPrefix("sm-"))
        #expect(id.dropFirst(3).allSatisfy { "abcdefghijklmnopqrstuvwxyz234567".contains($0) })
        #expect(id != MailboxClientID.derive(privateKey: X25519KeyPair.generate().privateKey))
        let device = DeviceIdentity(keyPair: keys).deviceID.description.replacingOccurrences(of: "-", with: "").lowercased()
        #expect(!device.contains(id.dropFirst(3).prefix(8)))
        #expect(!Self.hex(keys.publicKey).contains(id.dropFirst(3).prefix(8)))
    }

    @Test func theOpenBudgetBoundsBoxesPerSecond() {
        var budget = MailboxOpenBudget()
        var taken = 0
        for _ in 0..<5_000 where budget.take(now: 0) { taken += 1 }
        #expect(taken == Int(MailboxOpenBudget.burst))
        let refused = !budget.take(now: 1_000_000)
        #expect(refused)
        var later = 0
        for _ in 0..<1_000 where budget.take(now: 1_000_000_000) { later += 1 }
        #expect(later == Int(MailboxOpenBudget.ratePerSecond))
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    static func bytes(_ hex: String) -> [UInt8] {
        let characters = Array(hex)
        return stride(from: 0, to: characters.count - 1, by: 2).map { UInt8(String(characters[$0...$0 + 1]), radix: 16) ?? 0 }
    }
}
