import Foundation
import Logging
import MeshCrypto
import MeshLocalAPI
import NIOCore
import SessionMesh
@testable import MeshDaemon
#if canImport(Glibc)
import Glibc
#endif

/// Counts the warning lines a logger writes, by message (to show repeated warnings are
/// rate-limited). Lines below `.warning` are not even formatted.
final class CountingLogHandler: LogHandler, @unchecked Sendable {
    private let lock = NSLock()
    private var counts: [String: Int] = [:]
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .warning

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String,
             file: String, function: String, line: UInt) {
        lock.withLock { counts["\(message)", default: 0] += 1 }
    }

    /// Warning (and worse) lines so far, by message.
    var lines: [String: Int] { lock.withLock { counts } }
    var total: Int { lock.withLock { counts.values.reduce(0, +) } }

    func logger(_ label: String) -> Logger { Logger(label: label, factory: { _ in self }) }
}

/// What an app attached on the victim notices: envelopes (counted per event ID, never stored
/// whole), their features, anchors with negative durations.
final class AppObserver: DeliveryEventSink, @unchecked Sendable {
    private let lock = NSLock()
    let features: Set<String>
    private var firstHandOuts: [UUID: Int] = [:]
    private var byPeer: [String: Set<UUID>] = [:]
    private(set) var envelopesOfOtherFeatures = 0
    private(set) var undecodable = 0
    private(set) var negativeDurations = 0
    private(set) var anchors = 0

    init(features: Set<String>) { self.features = features }

    func emit(_ event: DeliveryEvent) {
        lock.withLock {
            switch event {
            case .envelope(let from, _, let redelivery, _, let encoded):
                guard let metadata = try? SessionWireCodec.decodeEnvelopeMetadata(encoded) else {
                    undecodable += 1
                    return
                }
                if !features.contains(metadata.featureID) { envelopesOfOtherFeatures += 1 }
                if !redelivery { firstHandOuts[metadata.eventID, default: 0] += 1 }
                byPeer[from, default: []].insert(metadata.eventID)
            case .anchor(_, _, _, _, let anchor):
                anchors += 1
                let now = Date()
                if anchor.elapsed(at: now) < 0 || (anchor.remaining(at: now) ?? 0) < 0 || (anchor.stepElapsed(at: now) ?? 0) < 0 {
                    negativeDurations += 1
                }
            default:
                break
            }
        }
    }

    /// Event IDs handed out (not as a redelivery) more than once.
    var eventIDsHandedTwice: Int { lock.withLock { firstHandOuts.values.filter { $0 > 1 }.count } }
    func eventIDs(from peer: String) -> Set<UUID> { lock.withLock { byPeer[peer] ?? [] } }
    var snapshot: (otherFeatures: Int, undecodable: Int, negative: Int, anchors: Int) {
        lock.withLock { (envelopesOfOtherFeatures, undecodable, negativeDurations, anchors) }
    }
}

extension MeshNode {
    /// Test seam of the hostile-peer tests: seals and sends each message to `peer` on its path
    /// (authenticated with the real channel keys); returns how many went out and the last
    /// stream write (the caller awaits it, so it cannot outrun TCP).
    func sendSealed(_ messages: [(ChannelMessage, PingPath)], to peer: DeviceID) -> (sent: Int, lastWrite: EventLoopFuture<Void>?) {
        var sent = 0
        var lastWrite: EventLoopFuture<Void>?
        for (message, path) in messages {
            switch path {
            case .datagram:
                if sendDatagram(message, to: peer) { sent += 1 }
            case .stream:
                if let write = sendStream(message, to: peer) {
                    sent += 1
                    lastWrite = write
                }
            }
        }
        return (sent, lastWrite)
    }

    /// The keepalive requests this node sent to `peer` and has no reply for (white box).
    func outstandingKeepalives(to peer: DeviceID) -> [Int64] { channels.peers[peer]?.estimator.outstanding ?? [] }

    /// Bytes of inbound messages queued for the consumer now.
    func queuedInboundBytes() -> Int { handOff.gate.queuedBytes }

    /// This node's record of `peer` (public key and pair key), for hand-made handshakes.
    func pairedRecord(of peer: DeviceID) -> PairedPeer? { channels.peers[peer]?.record }

    /// Test seam of the slow-peer tests: the connection of `peer`'s channel stops reading from
    /// its socket (its receive buffer fills, then TCP's window closes), as a peer that stopped
    /// reading does; `receiveBuffer` also shrinks its socket's receive buffer. The node still
    /// writes (and notices the connection closing when a write fails). False without a channel.
    func holdStreamReads(from peer: DeviceID, receiveBuffer: Int? = nil) -> Bool {
        guard let channel = (channels.peers[peer]?.connection?.path as? TCPStreamPath)?.channel else { return false }
        if let receiveBuffer {
            try? channel.syncOptions?.setOption(.socketOption(.so_rcvbuf), value: receiveBuffer)
        }
        return (try? channel.pipeline.syncOperations.addHandler(ReadHoldHandler(), position: .first)) != nil
    }

    /// Test seam: shrinks the kernel's send buffer of `peer`'s channel connection, so what
    /// this node writes towards a peer that does not read stays in NIO sooner.
    func shrinkSendBuffer(to peer: DeviceID, bytes: Int) -> Bool {
        guard let channel = (channels.peers[peer]?.connection?.path as? TCPStreamPath)?.channel else { return false }
        return (try? channel.syncOptions?.setOption(.socketOption(.so_sndbuf), value: bytes)) != nil
    }

    /// The id of the connection carrying `peer`'s channel now.
    func connectionID(of peer: DeviceID) -> UInt64? { channels.peers[peer]?.connection?.id }
}

/// Swallows a channel's read requests: with it first in the pipeline the connection reads
/// nothing more from its socket.
final class ReadHoldHandler: ChannelOutboundHandler, Sendable {
    typealias OutboundIn = NIOAny

    func read(context: ChannelHandlerContext) {}
}

extension DeliveryRouter {
    /// The highest inbox-pipeline level seen, bytes.
    func backlogPeakBytes() -> Int { consumer.inbox.peakBytes }
}

/// The resident set of this process, or of the process `pid`, bytes (`/proc/…/statm`).
func residentBytes(of pid: Int32? = nil) -> Int {
    let path = pid.map { "/proc/\($0)/statm" } ?? "/proc/self/statm"
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// The seed of a randomised test: `MESH_TEST_SEED` (decimal or 0x-hex), else the property-test
/// base; printed so a failure reproduces.
func hostileTestSeed(_ test: String) -> UInt64 {
    let text = ProcessInfo.processInfo.environment["MESH_TEST_SEED"] ?? ""
    let parsed = text.hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16) : UInt64(text)
    guard let seed = parsed else { return SeededGenerator.seed(for: test) }
    print("\(test): MESH_TEST_SEED=\(seed)")
    return seed
}

/// Builds the messages a hostile paired peer sends: well-sealed (the node seals them), with
/// random and boundary values in every field the protocol has.
struct HostileMessageFactory {
    var random: SeededGenerator
    /// Feature the victim's app is attached to, and one nobody is attached to.
    let attachedFeature: String
    let otherFeature = "unattached"
    /// Session IDs reused by the messages that key state by session (bounded on purpose:
    /// each new session also costs the victim a row on disk, which this test does not measure).
    let sessions: [UUID] = (0..<32).map { _ in UUID() }

    init(seed: UInt64, attachedFeature: String) {
        random = SeededGenerator(seed: seed)
        self.attachedFeature = attachedFeature
    }

    mutating func chance(_ percent: UInt64) -> Bool { random.next() % 100 < percent }
    mutating func pick<T>(_ values: [T]) -> T { values[Int(random.next() % UInt64(values.count))] }

    mutating func u64() -> UInt64 {
        pick([0, 1, UInt64.max, UInt64.max - 1, 1 << 63, (1 << 63) - 1, (1 << 63) + 1, UInt64(UInt32.max) + 1, random.next()])
    }

    mutating func i64() -> Int64 {
        pick([0, 1, -1, Int64.max, Int64.min, Int64.max - 1, Int64.min + 1, Int64(bitPattern: random.next()),
              Int64(Date().timeIntervalSince1970 * 1e9), Int64(Date().timeIntervalSince1970 * 1e9) + 200 * 365 * 86_400 * 1_000_000_000])
    }

    mutating func u32() -> UInt32 { pick([0, 1, UInt32.max, UInt32.max - 1, 1 << 31, UInt32(truncatingIfNeeded: random.next())]) }

    mutating func bytes(_ maximum: Int) -> [UInt8] {
        let count = Int(random.next() % UInt64(maximum + 1))
        return (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) }
    }

    /// A feature string: usually one of the two, sometimes invalid UTF-8 or empty (written raw).
    mutating func featureBytes() -> [UInt8] {
        switch random.next() % 10 {
        case 0: return [0xFF, 0xFE, 0xC3]
        case 1: return []
        case 2: return Array(otherFeature.utf8)
        default: return Array(attachedFeature.utf8)
        }
    }

    /// A valid envelope (encoded) and its metadata.
    mutating func envelope(feature: String) -> (SessionSyncMetadata, [UInt8]) {
        let metadata = SessionSyncMetadata(sessionID: pick(sessions), featureID: feature, sourcePeerID: "hostile",
                                           eventID: UUID(), sequence: random.next() >> 1,
                                           causalTimestamp: Date(timeIntervalSince1970: 1_700_000_000), payloadType: "text")
        let envelope = AnySessionSyncEnvelope(metadata: metadata, payload: Data(bytes(64)))
        return (metadata, (try? SessionWireCodec.encode(envelope)) ?? [])
    }

    /// An item written raw: consistent with its envelope, or lying about it in one field, or
    /// broken at the byte level (bad UTF-8, bad session flag, declared length beyond the bytes).
    mutating func rawItem(into writer: inout WireWriter) {
        let (metadata, encoded) = envelope(feature: chance(80) ? attachedFeature : otherFeature)
        let variant = random.next() % 10
        writer.uuid(variant == 1 ? UUID() : metadata.eventID)                  // 1: another event ID
        writer.u8(variant == 2 ? UInt8(truncatingIfNeeded: random.next()) : pick([1, 2, 5]))
        if variant == 3 {
            writer.u16(3)
            writer.raw([0xFF, 0xFE, 0xC3])                                      // invalid UTF-8
        } else {
            writer.string16(variant == 4 ? (metadata.featureID == attachedFeature ? otherFeature : attachedFeature)
                                         : metadata.featureID)
        }
        if variant == 5 {
            writer.u8(2)                                                        // bad session flag
        } else {
            writer.u8(1)
            writer.uuid(metadata.sessionID)
        }
        if variant == 6 {
            writer.u32(UInt32.max)                                              // huge declared size
            writer.raw(encoded.prefix(8))
        } else {
            writer.u32(UInt32(encoded.count))
            writer.raw(encoded)
        }
    }

    /// One delivery-protocol message (the payload of a channel application message), small
    /// enough for a datagram when `datagram`.
    mutating func deliveryMessage(datagram: Bool) -> [UInt8] {
        var writer = WireWriter(capacity: 256)
        switch random.next() % 18 {
        case 0, 1, 2:
            writer.u8(0x01)
            rawItem(into: &writer)
        case 3:
            writer.u8(0x02)
            writer.uuid(UUID())
        case 4:
            writer.u8(0x03)
            let count = pick([0, 1, 2, 3, UInt32.max, 1 << 20])
            writer.u32(count)
            for _ in 0..<min(Int(count), 3) {
                writer.u64(u64())
                rawItem(into: &writer)
            }
        case 5:
            writer.u8(0x04)
            writer.u64(u64())
        case 6:
            writer.u8(pick([0x05, 0x06, 0x07]))
            writer.raw(bytes(48))
        case 7:
            writer.u8(0x08)
            writer.uuid(pick(sessions))
            writer.raw(Array([UInt8(0), UInt8(4)]) + Array(attachedFeature.utf8).prefix(4))
            writer.u64(u64())
            writer.i64(i64())
            writer.i64(i64())
            let flags = UInt8(truncatingIfNeeded: random.next()) & 0x1F
            writer.u8(flags)
            for bit in [UInt8(2), 4, 8] where flags & bit != 0 { writer.i64(i64()) }
        case 8:
            writer.u8(0x09)
            writer.uuid(pick(sessions))
            writer.raw([0, UInt8(otherFeature.utf8.count)] + Array(otherFeature.utf8))
            writer.raw([0, 1, 0x41, 0, 4] + Array("open".utf8))
            writer.i64(i64())
            writer.u64(u64())
        case 9:
            writer.u8(0x0A)
            writer.uuid(pick(sessions))
            let feature = featureBytes()
            writer.u16(UInt16(feature.count))
            writer.raw(feature)
            writer.u64(u64())
        case 10:
            writer.u8(0x0B)
            let count = pick([0, 1, 3, UInt16.max])
            writer.u16(count)
            for _ in 0..<min(Int(count), 3) {
                let feature = featureBytes()
                writer.u16(UInt16(feature.count))
                writer.raw(feature)
            }
        case 11:
            writer.u8(0x0C)
            let count = pick([0, 1, 4, UInt16.max])
            writer.u16(count)
            for _ in 0..<min(Int(count), 4) { writer.uuid(UUID()) }
        case 12, 13:
            writer.u8(0x0D)
            let count = pick([0, 1, 2, 3, UInt16.max])
            writer.u16(count)
            for _ in 0..<min(Int(count), 3) { rawItem(into: &writer) }
        case 14:
            writer.u8(0x0E)
            writer.u64(u64())
        case 15:
            writer.u8(0x0F)
        case 16:
            writer.u8(pick([0x00, 0x10, 0x7F, 0xFF]))
            writer.raw(bytes(16))
        default:
            writer.raw(bytes(32))
        }
        var bytes = writer.bytes
        if datagram, bytes.count > MeshNode.maximumDatagramMessage { bytes = Array(bytes.prefix(MeshNode.maximumDatagramMessage)) }
        return bytes
    }

    /// One channel message with its path: mostly delivery messages, else keepalives and pings
    /// with boundary values. Never `unpaired` (a peer may unpair; that ends the test) and no
    /// rekey messages (`rekeyMessage()` sends those, rarely: each closes the channel).
    mutating func channelMessage() -> (ChannelMessage, PingPath) {
        let path: PingPath = chance(55) ? .datagram : .stream
        switch random.next() % 20 {
        case 0, 1: return (.keepaliveReply(t1: i64(), t2: i64(), t3: i64()), path)
        case 2: return (.keepaliveRequest(t1: i64()), path)
        case 3: return (.pingRequest(id: u32()), path)
        case 4: return (.pingReply(id: u32()), path)
        case 5: return (.confirm, path)
        default: return (.application(deliveryMessage(datagram: path == .datagram)), path)
        }
    }

    /// A rekey message with garbage or empty contents (the victim closes the channel, the
    /// peers reconnect).
    mutating func rekeyMessage() -> ChannelMessage {
        pick([.rekeyInitiation(bytes(96)), .rekeyResponse(bytes(48)), .rekeyConfirm])
    }
}
