import Foundation
import MeshCore
import MeshLocalAPI
import NIOCore
import SessionMesh
@testable import MeshCrypto
@testable import MeshDaemon

/// Writes the seed inputs of Fuzz/seeds/ with the real encoders (`scripts/fuzz seeds`, which
/// runs `mesh-fuzz` with MESH_FUZZ_WRITE_SEEDS=FOLDER): small valid inputs for each harness, so
/// a run starts past the format checks. Regenerated when a format changes.
enum FuzzSeeds {
    static let session = UUID(uuid: (0x6F, 0x96, 0x19, 0xFF, 0x8B, 0x86, 0xD0, 0x11, 0xB4, 0x2D, 0x00, 0xC0, 0x4F, 0xC9, 0x64, 0xFF))
    static let event = UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))

    static func write(to folder: String) throws {
        func put(_ target: String, _ name: String, _ bytes: [UInt8]) throws {
            let directory = folder + "/" + target
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: directory + "/" + name))
        }
        for (index, message) in channelMessages.enumerated() { try put("channel", "type-\(index + 1)", message.encode()) }
        try put("handshakepayload", "initial", HandshakePayload(sessionIndex: 7, udpPort: 47470, wallNanoseconds: 1_750_000_000_000_000_000, isRekey: false).encode())
        try put("handshakepayload", "rekey", HandshakePayload(sessionIndex: .max, udpPort: 1, wallNanoseconds: 0, isRekey: true).encode())
        for message in try deliveryMessages() { try put("delivery", String(format: "type-%02x", message.encode()[0]), message.encode()) }
        for (name, bytes) in try pairingMessages() { try put("pairmsg", name, bytes) }
        for (name, bytes) in localAPIRequests() { try put("localapi", name, bytes) }
        try put("config", "example", Array(config.utf8))
        try put("paireddevices", "two-devices", pairedDevices())
        try put("seenbatches", "three", SeenBatches.encode([event, session, event]))
        try put("txt", "advertised", txt(["v=1", "id=ABCDEFGH", "pair=3MH4"]))
        try put("txt", "odd", txt(["v=1", "ID=x", "junk", "=novalue", "v=2"]))
        try put("router", "conversation", try routerConversation())
        try put("router", "keepalive-reply-extremes", keepaliveExtremes())
        for (name, steps) in try routerBursts() { try put("router", name, steps) }
        for (name, bytes) in relaySeeds() { try put("relay", name, bytes) }
        for (name, bytes) in try rosterSeeds() { try put("roster", name, bytes) }
    }

    /// A genesis and a countersigned add (harness selector 1), both as a roster file (2) and
    /// as a `roster records` message (0): past the signature checks from the first run.
    static func rosterSeeds() throws -> [(String, [UInt8])] {
        let laptop = try X25519KeyPair(privateKey: SecretBytes([UInt8](repeating: 0x11, count: 32)))
        let phone = try X25519KeyPair(privateKey: SecretBytes([UInt8](repeating: 0x22, count: 32)))
        let laptopSigning = SigningKeyPair.derived(from: laptop), phoneSigning = SigningKeyPair.derived(from: phone)
        let genesis = try RosterRecord.make(kind: .genesis, parents: [], signer: laptopSigning, time: 1,
                                            subject: laptop.publicKey, name: "laptop")
        let add = try RosterRecord.make(kind: .add, parents: [genesis.hash], signer: laptopSigning, time: 2,
                                        subject: phone.publicKey, subjectSigningKey: phoneSigning.publicKey, name: "phone")
            .countersigned(by: phoneSigning)
        let remove = try RosterRecord.make(kind: .remove, parents: [add.hash], signer: laptopSigning, time: 3, subject: phone.publicKey)
        var message = WireWriter()
        DeviceSetMessage.rosterRecords([genesis, add, remove].map(\.encoded), complete: true).encodeBody(into: &message)
        return [("record-genesis", [1] + genesis.encoded), ("record-add", [1] + add.encoded),
                ("file-three-records", [2] + RosterFile.encode([genesis, add, remove])),
                ("message-records", [0, 1] + message.bytes)]
    }

    /// Relay messages alone (mode 0) and a path's messages out of order for the receiver (mode 1).
    static func relaySeeds() -> [(String, [UInt8])] {
        let path = RelayPathID(rawValue: 0x0102_0304_0506_0708)
        let stream = (0..<3).compactMap { RelayEnvelope.stream(path, sequence: UInt64($0), data: [0x53, 0x4D, 0x01, UInt8($0)]).encode() }
        let close = RelayEnvelope.close(path, sequence: 3).encode() ?? []
        let datagram = RelayEnvelope.unnumbered(.datagram, payload: [0xAA, 0xBB]).encode(padding: .buckets) ?? []
        let records = [stream[0], stream[2], stream[1], stream[1], close, datagram].flatMap { [UInt8($0.count)] + $0 }
        return [("message-stream", [0] + stream[0]), ("message-datagram-padded", [0] + datagram), ("receiver-path", [1] + records)]
    }

    static let channelMessages: [ChannelMessage] = [
        .keepaliveRequest(t1: 1_750_000_000_000_000_000),
        .keepaliveReply(t1: 1_750_000_000_000_000_000, t2: 1_750_000_000_100_000_000, t3: 1_750_000_000_200_000_000),
        .pingRequest(id: 1), .pingReply(id: 1), .application([0x0F]), .unpaired,
        .rekeyInitiation([UInt8](repeating: 1, count: 96)), .rekeyResponse([UInt8](repeating: 2, count: 64)),
        .rekeyConfirm, .confirm,
    ]

    static func item(_ text: String, kind: UInt8 = 2, feature: String = "a", sequence: UInt64 = 1) throws -> DeliveryItem {
        let metadata = SessionSyncMetadata(sessionID: session, featureID: feature, sourcePeerID: "peer", eventID: event,
                                           sequence: sequence, causalTimestamp: Date(timeIntervalSince1970: 1_700_000_000),
                                           payloadType: "text")
        let encoded = try SessionWireCodec.encode(AnySessionSyncEnvelope(metadata: metadata, payload: Data(text.utf8)))
        return DeliveryItem(eventID: event, kind: kind, featureID: feature, sessionID: session, payload: encoded)
    }

    static func snapshot() throws -> [UInt8] {
        let metadata = SessionSyncMetadata(sessionID: session, featureID: "a", sourcePeerID: "peer", eventID: event,
                                           sequence: 0, causalTimestamp: Date(timeIntervalSince1970: 1_700_000_000),
                                           payloadType: "state")
        return try SessionWireCodec.encode(AnySessionSyncSnapshot(metadata: metadata, revision: 3, state: Data("s".utf8)))
    }

    static func deliveryMessages() throws -> [DeliveryMessage] {
        let anchor = SessionTimerAnchor(startedAt: Date(timeIntervalSince1970: 1_750_000_000), accumulatedElapsedBeforeAnchor: 5,
                                        pauseStartedAt: Date(timeIntervalSince1970: 1_750_000_010), isPaused: true,
                                        expectedEndAt: Date(timeIntervalSince1970: 1_750_000_100), stepStartedAt: nil)
        return [
            .realtime(try item("live", kind: 1)),
            .realtimeAck(eventID: event),
            .reliableBatch([(UInt64(1), try item("one")), (UInt64(2), try item("two", sequence: 2))]),
            .reliableAck(upTo: 2),
            .snapshotPush(try snapshot()),
            .snapshotRequest(try SessionWireCodec.encode(SessionSnapshotRequest(sessionID: session, featureID: "a", requestingPeerID: "peer"))),
            .snapshotReply(try snapshot()),
            .anchor(DeliveryAnchorRecord(sessionID: session, featureID: "a", revision: 1, anchor: anchor)),
            .session(DeliverySessionRecord(sessionID: session, featureID: "a", owner: "peer", status: "open",
                                           updatedAtMicros: 1_750_000_000_000_000, revision: 1)),
            .watermark(sessionID: session, featureID: "a", sequence: 4),
            .presence(features: ["a", "b"]),
            .realtimeAcks([event, session]),
            .realtimeBatch([try item("x", kind: 1), try item("y", kind: 5)]),
            .reliableResend(after: 1),
            .reliableRoom,
            .sessionHandOver(owner: DeviceID(publicKey: Array(repeating: 9, count: 32)),
                             record: DeliverySessionRecord(sessionID: session, featureID: "a", owner: "peer", status: "open",
                                                           updatedAtMicros: 1_750_000_000_000_000, revision: 2)),
        ]
    }

    static func record(_ bytes: [UInt8]) -> [UInt8] {
        bytes.count < 0x80 ? [UInt8(bytes.count)] + bytes
            : [0x80 | UInt8(bytes.count >> 8), UInt8(truncatingIfNeeded: bytes.count)] + bytes
    }

    /// Mode 0: each message alone; mode 1: a genuine joiner's hello and confirmation to the
    /// harness's responder (a whole successful pairing); mode 2: a genuine inviter's reply.
    static func pairingMessages() throws -> [(String, [UInt8])] {
        var joiner = try PairingJoiner(code: FuzzPairingFixtures.code, identity: FuzzPairingFixtures.joiner)
        var responder = PairingResponder(code: FuzzPairingFixtures.code, identity: FuzzPairingFixtures.inviter)
        let hello = try joiner.start()
        guard case .send(let reply) = try responder.receive(hello),
              case .send(let confirmation) = try joiner.receive(reply),
              case .finished(_, let identity?) = try responder.receive(confirmation) else { fuzzFailure("fixture pairing") }
        return [
            ("hello", [0] + hello), ("inviter-confirmation", [0] + reply),
            ("joiner-confirmation", [0] + confirmation), ("inviter-identity", [0] + identity),
            ("responder-run", [1] + record(hello) + record(confirmation)),
            ("joiner-run", [2] + record(reply) + record(identity)),
        ]
    }

    static func localAPIRequests() -> [(String, [UInt8])] {
        let operations = LocalAPIOperation.controlOperations + LocalAPIOperation.dataOperations
        let session = FuzzSeeds.session.uuidString
        let bodies: [LocalAPIOperation: [UInt8]] = [
            .hello: Array(#"{"client":"fuzz","protocolVersion":1}"#.utf8), .status: Array("{}".utf8), .peers: [],
            .pairCreate: Array(#"{"validFor":60}"#.utf8), .pairWait: Array(#"{"code":"3MH4-KX97"}"#.utf8),
            .pairCancel: Array(#"{"code":"3MH4-KX97"}"#.utf8), .pairJoin: Array(#"{"code":"3MH4-KX97","address":"[::1]:47001"}"#.utf8),
            .unpair: Array(#"{"deviceID":"ABC"}"#.utf8), .ping: Array(#"{"deviceID":"ABC","count":3}"#.utf8),
            .attach: Array(#"{"features":["a","b"],"sessionID":"\#(session)","app":"fuzz"}"#.utf8),
            .send: [2, 0] + ((try? item("hi").payload) ?? []),
            .snapshotPublish: [3] + Array("all".utf8) + ((try? snapshot()) ?? []),
            .snapshotRequest: Array(#"{"sessionID":"\#(session)","featureID":"a","peer":"ABC"}"#.utf8),
            .snapshotLatest: Array(#"{"featureID":"a","sessionID":"\#(session)"}"#.utf8),
            .anchorSet: Array(#"{"sessionID":"\#(session)","featureID":"a","revision":2,"anchor":{"startedAt":1750000000,"accumulatedElapsedBeforeAnchor":1.5,"isPaused":false,"expectedEndAt":1750000100}}"#.utf8),
            .sessionAnnounce: Array(#"{"sessionID":"\#(session)","featureID":"a","owner":"me","status":"open"}"#.utf8),
            .sessionClose: Array(#"{"sessionID":"\#(session)","featureID":"a"}"#.utf8),
            .sessions: Array(#"{"featureID":"a"}"#.utf8),
            .inboxAck: Array(#"{"ids":[1,2,9223372036854775807]}"#.utf8),
            .queue: Array("{}".utf8), .queueCancel: Array(#"{"id":42}"#.utf8),
            .watermarkSet: Array(#"{"sessionID":"\#(session)","featureID":"a","peer":"ABC","sequence":9}"#.utf8),
        ]
        var seeds: [(String, [UInt8])] = []
        var stream = ByteBuffer()
        for (index, operation) in operations.enumerated() {
            let body = bodies[operation] ?? []
            seeds.append(("body-\(operation.name)", [0, UInt8(index)] + body))
            LocalAPIFrameEncoder.write(LocalAPIFrame(kind: .request, operation: operation,
                                                     flags: operation.takesBinaryBody ? .binaryBody : [],
                                                     requestID: UInt32(index + 1), body: ByteBuffer(bytes: body)), to: &stream)
        }
        seeds.append(("stream-every-operation", [1] + Array(stream.readableBytesView)))
        return seeds
    }

    static let config = """
        # every key meshd reads
        name = "fuzz-pi"
        state_dir = "/var/lib/sessionmesh"
        socket = "/run/sessionmesh/meshd.sock"
        socket_mode = 0o660
        listen = "0.0.0.0:47470"
        peers = [
            "192.168.1.20:47470",   # the laptop
            "[fe80::1%eth0]:47470",
        ]
        log_level = "info"
        pairing_code_lifetime = 300
        keepalive_interval = 5.5
        reachability_lease = 20
        mdns = true
        feature_allow = ["1000:demo", "0:*"]
        outbox_max_items_per_peer = 10_000
        outbox_max_bytes_per_peer = 67_108_864
        outbox_max_items = 100_000
        outbox_max_bytes = 1_073_741_824
        inbox_max_items = 50_000
        inbox_max_bytes = 268_435_456
        dedup_horizon_per_peer = 65_536
        store_max_bytes = 536_870_912
        pending_max_items = 200
        store_synchronous = "full"

        """

    static func pairedDevices() throws -> [UInt8] {
        let folder = FuzzFiles.path("seed-peers")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let store = PairedDeviceStore(stateDirectory: folder)
        try store.save([
            PairedPeer(publicKey: FuzzRouterBed.peerKey.publicKey, name: "laptop", pairKey: SecretBytes([UInt8](repeating: 9, count: 32)),
                       addresses: [PeerAddress(address: "192.168.1.20:47470", source: .pairing),
                                   PeerAddress(address: "[fe80::1]:47470", source: .observed)],
                       pairedAt: 1_750_000_000.5),
            PairedPeer(publicKey: FuzzRouterBed.fixedKey(0x70).publicKey, name: "phone ☎", pairKey: SecretBytes([UInt8](repeating: 8, count: 32)),
                       addresses: [], pairedAt: 0),
        ])
        return Array(try Data(contentsOf: URL(fileURLWithPath: store.path)))
    }

    static func txt(_ strings: [String]) -> [UInt8] {
        strings.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
    }

    /// Keepalive replies with extreme timestamps (the first once crashed the clock-offset estimate).
    static func keepaliveExtremes() -> [UInt8] {
        [(Int64.max, 0, Int64.max), (Int64.min, Int64.max, Int64.min), (0, Int64.min, Int64.max), (-1, -1, -1)]
            .flatMap { t1, t2, t3 in [2] + record(ChannelMessage.keepaliveReply(t1: t1, t2: t2, t3: t3).encode()) }
    }

    /// The non-reading peer (steps 8–10) and the storage bursts (step 11) of the router harness.
    static func routerBursts() throws -> [(String, [UInt8])] {
        let messages = try deliveryMessages()
        func template(_ type: UInt8) -> [UInt8] { record(messages.first { $0.encode()[0] == type }?.encode() ?? []) }
        // 4096 pings past the reply limit, more requests over the stall time (they renew the
        // lease), the timer pass that closes it, then a second connection the peer partly reads.
        let pingFlood: [UInt8] = [8, 9, 255, 0x00, 3, 40, 9, 15, 0xFF, 3, 40, 9, 15, 0x0F, 3, 40,
                                  8, 9, 64, 0xAA, 10, 4, 9, 64, 0x00, 10, 255, 9, 8, 0x01]
        // Requests with a genuine rekey initiation every 16th: the answers are the daemon's own
        // traffic, refused at the hard limit (the channel closes).
        let rekeyFlood: [UInt8] = [8, 9, 255, 0x80, 9, 255, 0x81, 3, 4]
        // Replies up to the reply limit, then the daemon's own traffic: reliable sends, keepalives.
        let ownTraffic: [UInt8] = [8, 9, 127, 0x00] + (0x41...0x43).flatMap { [7] + record([UInt8](repeating: $0, count: 12_000)) }
            + [3, 20, 3, 20] + [8, 5, 3, 2, 10, 255, 3, 2]
        // 2048 session announcements, 1024 snapshot pushes, 1024 anchors, each of distinct sessions.
        let storage: [UInt8] = [11, 0, 127] + template(0x09) + [11, 1, 63] + template(0x05) + [11, 2, 63] + template(0x08)
            + [11, 0, 15] + record([])
        return [("undrained-ping-flood", pingFlood), ("undrained-rekey-flood", rekeyFlood),
                ("undrained-own-traffic", ownTraffic), ("storage-bursts", storage)]
    }

    /// Channel up, a reliable batch, time, the app's ack, realtime items, keepalives, every other
    /// delivery message, a local send, channel down.
    static func routerConversation() throws -> [UInt8] {
        var steps: [UInt8] = [5]
        for message in try deliveryMessages() {
            steps += [message.encode()[0] == 0x01 || message.encode()[0] >= 0x0C ? 1 : 0] + record(message.encode())
        }
        steps += [3, 20, 4]
        steps += [2] + record(ChannelMessage.keepaliveRequest(t1: 1).encode())
        steps += [2] + record(ChannelMessage.keepaliveReply(t1: 1_750_000_000_000_000_000, t2: 1_750_000_000_000_000_000,
                                                           t3: 1_750_000_000_000_000_000).encode())
        steps += [2] + record(ChannelMessage.pingRequest(id: 5).encode())
        steps += [7] + record(Array("to the peer".utf8)) + [3, 200]
        steps += [0] + record(DeliveryMessage.reliableAck(upTo: 1).encode())
        steps += [6, 3, 255]
        return steps
    }
}

@_cdecl("LLVMFuzzerInitialize")
public func meshFuzzInitialize(_ argc: UnsafeMutablePointer<CInt>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> CInt {
    if let folder = ProcessInfo.processInfo.environment["MESH_FUZZ_WRITE_SEEDS"] {
        do {
            try FuzzSeeds.write(to: folder)
        } catch {
            FileHandle.standardError.write(Data("mesh-fuzz: writing seeds failed: \(error)\n".utf8))
            exit(1)
        }
        exit(0)
    }
    _ = FuzzTargets.selected
    return 0
}
