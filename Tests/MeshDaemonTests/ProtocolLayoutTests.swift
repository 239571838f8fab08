import Foundation
import MeshCore
import SessionMesh
import Testing
@testable import MeshDaemon

/// Pins the byte layouts docs/PROTOCOL.md shows: each example is encoded by the code, compared
/// with the hex written independently from the page, and looked up on the page itself, so the
/// code and the page cannot drift apart unnoticed.
@Suite("Wire layouts as docs/PROTOCOL.md draws them")
struct ProtocolLayoutTests {
    static let eventID = UUID(uuidString: "00112233-4455-6677-8899-AABBCCDDEEFF")!
    static let sessionID = UUID(uuidString: "01234567-89AB-CDEF-0123-456789ABCDEF")!
    /// The device ID of the identity PROTOCOL.md's vectors use (private key 01 02 … 20).
    static let handOverOwner = try! DeviceID.parse("VKUP75Y-YDWUFSK-FF7U63E-QTKCHXG-EQQNS3Z-6QD25Y7-JSYHIRB-E4VLXWB")
    static let t1: Int64 = 1_700_000_000_000_000_000

    /// (what, bytes the code writes, hex as the page shows it)
    static let examples: [(String, [UInt8], String)] = [
        ("channel preamble", ConnectionKind.channel.preamble, "53 4d 01 01"),
        ("handshake payload",
         HandshakePayload(sessionIndex: 0x0102_0304, udpPort: 47470, wallNanoseconds: 1_700_000_000_123_456_789,
                          isRekey: false).encode(),
         "01 01 02 03 04 b9 6e 17 97 9c fe 3d 85 cd 15 00"),
        ("datagram header", DatagramHeader(receiverIndex: 0x0A0B_0C0D).bytes, "01 0a 0b 0c 0d"),
        ("keepalive request", ChannelMessage.keepaliveRequest(t1: t1).encode(), "01 17 97 9c fe 36 2a 00 00"),
        ("keepalive reply", ChannelMessage.keepaliveReply(t1: t1, t2: t1 + 50_000, t3: t1 + 60_000).encode(),
         "02 17 97 9c fe 36 2a 00 00 17 97 9c fe 36 2a c3 50 17 97 9c fe 36 2a ea 60"),
        ("ping request", ChannelMessage.pingRequest(id: 7).encode(), "03 00 00 00 07"),
        ("ping reply", ChannelMessage.pingReply(id: 7).encode(), "04 00 00 00 07"),
        ("application", ChannelMessage.application([0xAA, 0xBB]).encode(), "05 aa bb"),
        ("unpaired", ChannelMessage.unpaired.encode(), "06"),
        ("rekey confirm", ChannelMessage.rekeyConfirm.encode(), "09"),
        ("confirm", ChannelMessage.confirm.encode(), "0a"),
        ("realtime item",
         DeliveryMessage.realtime(DeliveryItem(eventID: eventID, kind: 1, featureID: "demo", sessionID: nil,
                                               payload: [0xAA, 0xBB])).encode(),
         "01 00 11 22 33 44 55 66 77 88 99 aa bb cc dd ee ff 01 00 04 64 65 6d 6f 00 00 00 00 02 aa bb"),
        ("reliable batch",
         DeliveryMessage.reliableBatch([(1, DeliveryItem(eventID: eventID, kind: 2, featureID: "demo", sessionID: sessionID,
                                                         payload: [0xCC]))]).encode(),
         "03 00 00 00 01 00 00 00 00 00 00 00 01 00 11 22 33 44 55 66 77 88 99 aa bb cc dd ee ff 02 00 04 64 65 6d 6f 01 "
            + "01 23 45 67 89 ab cd ef 01 23 45 67 89 ab cd ef 00 00 00 01 cc"),
        ("realtime ack", DeliveryMessage.realtimeAck(eventID: eventID).encode(),
         "02 00 11 22 33 44 55 66 77 88 99 aa bb cc dd ee ff"),
        ("reliable ack", DeliveryMessage.reliableAck(upTo: 5).encode(), "04 00 00 00 00 00 00 00 05"),
        ("watermark", DeliveryMessage.watermark(sessionID: sessionID, featureID: "demo", sequence: 9).encode(),
         "0a 01 23 45 67 89 ab cd ef 01 23 45 67 89 ab cd ef 00 04 64 65 6d 6f 00 00 00 00 00 00 00 09"),
        ("presence", DeliveryMessage.presence(features: ["demo"]).encode(), "0b 00 01 00 04 64 65 6d 6f"),
        ("session",
         DeliveryMessage.session(DeliverySessionRecord(sessionID: sessionID, featureID: "demo", owner: "o", status: "running",
                                                       updatedAtMicros: 1_700_000_000_000_000, revision: 2)).encode(),
         "09 01 23 45 67 89 ab cd ef 01 23 45 67 89 ab cd ef 00 04 64 65 6d 6f 00 01 6f 00 07 72 75 6e 6e 69 6e 67 "
            + "00 06 0a 24 18 1e 40 00 00 00 00 00 00 00 00 02"),
        ("session hand-over",
         DeliveryMessage.sessionHandOver(owner: handOverOwner, record: DeliverySessionRecord(
            sessionID: sessionID, featureID: "demo", owner: handOverOwner.description, status: "running",
            updatedAtMicros: 1_700_000_000_000_000, revision: 3)).encode(),
         "10 00 3f 56 4b 55 50 37 35 59 2d 59 44 57 55 46 53 4b 2d 46 46 37 55 36 33 45 2d 51 54 4b 43 48 58 47 2d 45 51 51 4e 53 "
            + "33 5a 2d 36 51 44 32 35 59 37 2d 4a 53 59 48 49 52 42 2d 45 34 56 4c 58 57 42 01 23 45 67 89 ab cd ef 01 23 45 67 89 ab "
            + "cd ef 00 04 64 65 6d 6f 00 3f 56 4b 55 50 37 35 59 2d 59 44 57 55 46 53 4b 2d 46 46 37 55 36 33 45 2d 51 54 4b 43 48 58 "
            + "47 2d 45 51 51 4e 53 33 5a 2d 36 51 44 32 35 59 37 2d 4a 53 59 48 49 52 42 2d 45 34 56 4c 58 57 42 00 07 72 75 6e 6e 69 "
            + "6e 67 00 06 0a 24 18 1e 40 00 00 00 00 00 00 00 00 03"),
        ("timer anchor",
         DeliveryMessage.anchor(DeliveryAnchorRecord(
            sessionID: sessionID, featureID: "demo", revision: 1,
            anchor: SessionTimerAnchor(startedAt: Date(timeIntervalSince1970: 1_700_000_000), accumulatedElapsedBeforeAnchor: 1.5,
                                       pauseStartedAt: Date(timeIntervalSince1970: 1_700_000_010), isPaused: true,
                                       expectedEndAt: nil, stepStartedAt: nil))).encode(),
         "08 01 23 45 67 89 ab cd ef 01 23 45 67 89 ab cd ef 00 04 64 65 6d 6f 00 00 00 00 00 00 00 01 "
            + "00 06 0a 24 18 1e 40 00 00 00 00 00 00 16 e3 60 03 00 06 0a 24 18 b6 d6 80"),
    ]

    @Test func theCodeWritesTheBytesThePageShows() {
        for (what, bytes, hex) in Self.examples {
            #expect(ProtocolPage.hex(bytes) == hex, "\(what)")
        }
    }

    @Test func thePageShowsEveryExample() throws {
        let page = try ProtocolPage.compactText()
        for (what, _, hex) in Self.examples {
            #expect(page.contains(ProtocolPage.compact(hex)), "docs/PROTOCOL.md no longer shows the \(what) example: \(hex)")
        }
    }

    @Test func theExamplesDecodeBack() throws {
        for (what, bytes, _) in Self.examples.dropFirst(11) {
            let decoded = try DeliveryMessage(decoding: bytes)
            #expect(decoded.encode() == bytes, "\(what)")
        }
        #expect(try ChannelMessage(decoding: ChannelMessage.keepaliveRequest(t1: Self.t1).encode()) == .keepaliveRequest(t1: Self.t1))
    }

    /// What the page says a receiver refuses is refused (the message is malformed, never a trap).
    @Test func valuesThePageForbidsAreMalformed() {
        let long = String(repeating: "x", count: 256)
        for feature in ["", long] {
            #expect(throws: WireFormatError.self) { try DeliveryMessage(decoding: DeliveryMessage.presence(features: [feature]).encode()) }
            #expect(throws: WireFormatError.self) {
                try DeliveryMessage(decoding: DeliveryMessage.watermark(sessionID: Self.sessionID, featureID: feature, sequence: 1).encode())
            }
        }
        #expect(throws: Never.self) {
            try DeliveryMessage(decoding: DeliveryMessage.presence(features: [String(repeating: "x", count: 255)]).encode())
        }
        for (owner, status) in [("", "running"), ("o", ""), (String(repeating: "o", count: 257), "running")] {
            let record = DeliverySessionRecord(sessionID: Self.sessionID, featureID: "demo", owner: owner, status: status,
                                               updatedAtMicros: 0, revision: 1)
            #expect(throws: WireFormatError.self) { try DeliveryMessage(decoding: DeliveryMessage.session(record).encode()) }
        }
        #expect(throws: WireFormatError.self) {
            try DeliveryMessage(decoding: DeliveryMessage.watermark(sessionID: Self.sessionID, featureID: "demo",
                                                                    sequence: UInt64(Int64.max) + 1).encode())
        }
        #expect(throws: Never.self) {
            try DeliveryMessage(decoding: DeliveryMessage.watermark(sessionID: Self.sessionID, featureID: "demo",
                                                                    sequence: UInt64(Int64.max)).encode())
        }
        // A stream frame's channel message of a fixed size with a byte too many.
        #expect(throws: WireFormatError.self) { try ChannelMessage(decoding: [0x0A, 0x00]) }
        #expect(throws: WireFormatError.self) { try ChannelMessage(decoding: [0x0B]) }
    }
}

/// docs/PROTOCOL.md, read from the source tree.
enum ProtocolPage {
    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined(separator: " ")
    }

    /// Lower case, all white space removed (the page may wrap long examples).
    static func compact(_ text: String) -> String {
        String(text.lowercased().unicodeScalars.filter { !CharacterSet.whitespacesAndNewlines.contains($0) }.map(Character.init))
    }

    static func compactText(file: String = #filePath) throws -> String {
        let root = URL(fileURLWithPath: file).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return compact(try String(contentsOf: root.appendingPathComponent("docs/PROTOCOL.md"), encoding: .utf8))
    }
}
