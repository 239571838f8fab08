import Foundation
import Logging
import MeshLocalAPI
import SessionMesh
import NIOCore
import NIOPosix
@testable import MeshCrypto
@testable import MeshDaemon

// libFuzzer harness `router`: a paired peer's authenticated messages, in sequence, into a real
// node and delivery router.
//
// Each input gets a fresh state folder (a fixed identity, one paired peer P), a `MeshNode`
// (not listening: the channel's encryption is what the crypto harnesses cover; what comes out
// of it arrives here as plaintext), a `DeliveryStore` and a `DeliveryRouter` over them, with an
// app attached to features "a" and "b". Time is a fake clock that only the input moves, so a
// run is a function of its input. The node's outbound budget is small (32 KiB of replies,
// 64 KiB in all, a stall of 5 s) so that a burst reaches it. The input is a list of at most 64
// steps; each starts with a byte (taken modulo 12):
//   0, 1: a record is a delivery message from P on the stream (0) or datagram path (1), handed
//         to `InboundConsumer.handle` as the router's message consumer would, then stored as
//         its inbox consumer would (`storeInboxBacklog`).
//   2:    a record is a channel message (`ChannelMessage(decoding:)`) from P to the node's
//         stream dispatch (keepalives, pings, rekeys, unpair, ...).
//   3:    time passes (next byte × 50 ms), the router ticks (estimates, presence, leases) and
//         the node makes its timer pass (keepalives, leases, rekeys, stalled connections).
//   4:    the app acknowledges the inbox items it was handed so far.
//   5, 6: P's channel comes up / goes down (the router's channel events).
//   7:    the app sends a reliable envelope to P (the record is its payload); a record starting
//         0xF5 instead has P name 8 + record[1] new sessions, each with a session row, a
//         snapshot and a timer anchor, and checks that the store kept at most P's limits
//         (`PeerStateLimits`, set low here) of each.
//   8:    P's channel comes up on a new TCP connection that P does not read
//         (router+outbound.swift): installed as a completed handshake installs one, replacing
//         the one before; the router is told.
//   9:    P sends a burst on that connection, genuine stream frames its stream reader opens:
//         next byte n → 16·(n+1) requests (pings and keepalive requests as the bits of the
//         byte after say; its top bit adds a rekey initiation every 16th), at most 16 384 per
//         input, so the outbound budget drops replies and, with the daemon's own writes
//         (keepalives, rekeys, reliable batches), closes the channel.
//   10:   P reads from that connection: the oldest 16·(next byte) writes complete (255: all).
//   11:   a storage burst (router+storage.swift): the next byte picks session announcements,
//         snapshot pushes or timer anchors, the byte after their count 16·(n+1) (at most
//         4 096 per input), and a record their template; each message names another session.
// Nothing may crash, trap or grow without bound (libFuzzer's -rss_limit_mb and
// -malloc_limit_mb), whatever P sends; the outbound budget holds (router+outbound.swift:
// nothing written past its limits, its charge is what the connection holds, every reply
// written or dropped and counted, a connection over its reply limit for longer than the stall
// time closed by the next timer pass); no session row from P that P did not announce
// (router+storage.swift).
func fuzzRouter(_ bytes: [UInt8]) {
    FuzzRouterBed.run(bytes)
}

enum FuzzRouterBed {
    static let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    static let peerKey: X25519KeyPair = fixedKey(0x61)
    static let peer = DeviceID(publicKey: peerKey.publicKey)
    static let ownKeyFile: [UInt8] = KeyFile.encode(fixedKey(0x62))
    static let logger: Logger = {
        var logger = Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() })
        logger.logLevel = .critical
        return logger
    }()

    static func fixedKey(_ fill: UInt8) -> X25519KeyPair {
        guard let pair = try? X25519KeyPair(privateKey: SecretBytes([UInt8](repeating: fill, count: 32))) else {
            fuzzFailure("fixture key")
        }
        return pair
    }

    static func run(_ bytes: [UInt8]) {
        let folder = FuzzFiles.path("router")
        try? FileManager.default.removeItem(atPath: folder)
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false,
                                                    attributes: [.posixPermissions: 0o700])
            guard FileManager.default.createFile(atPath: folder + "/identity.key", contents: Data(ownKeyFile),
                                                 attributes: [.posixPermissions: 0o600]) else {
                fuzzFailure("cannot write the identity key")
            }
            let record = PairedPeer(publicKey: peerKey.publicKey, name: "peer",
                                    pairKey: SecretBytes([UInt8](repeating: 0x63, count: 32)),
                                    addresses: [PeerAddress(address: "127.0.0.1:9", source: .pairing)],
                                    pairedAt: 1_700_000_000)
            try PairedDeviceStore(stateDirectory: folder).save([record])
        } catch {
            fuzzFailure("cannot prepare the state folder: \(error)")
        }
        let clock = FuzzClock()
        var configuration = DaemonConfiguration(name: "fuzz", stateDirectory: folder, socketPath: folder + "/meshd.sock",
                                                listen: .init(host: "127.0.0.1", port: 0))
        configuration.channelTuning.outboundReplyBytes = 32 << 10
        configuration.channelTuning.outboundBytes = 64 << 10
        let node: MeshNode
        let store: DeliveryStore
        do {
            node = try MeshNode(configuration: configuration, logger: logger, eventLoopGroup: group, clock: clock)
            var storeOptions = DeliveryStoreOptions()
            storeOptions.synchronous = .normal
            storeOptions.spaceReserveBytes = 0
            storeOptions.peerState = peerLimits
            store = try DeliveryRouter.openStore(stateDirectory: folder, options: storeOptions)
        } catch {
            fuzzFailure("cannot start the node or open the store: \(error)")
        }
        let router = DeliveryRouter(node: node, store: store, options: DeliveryRouterOptions(), logger: logger)
        // On the node's event loop, as the router's own tasks run: no thread switch per step.
        let done = DispatchSemaphore(value: 0)
        Task(executorPreference: node.taskExecutor) {
            await steps(bytes, node: node, router: router, clock: clock)
            done.signal()
        }
        done.wait()
        store.close()
    }

    static func steps(_ bytes: [UInt8], node: MeshNode, router: DeliveryRouter, clock: FuzzClock) async {
        let app = FuzzApp()
        _ = await router.attach(features: ["a", "b"], sink: app)
        await router.settleReplays()

        var input = FuzzInput(bytes)
        var steps = 0
        var undrained: FuzzUndrainedPeer?
        var connections: [FuzzUndrainedPeer] = []
        var requestsLeft = 16_384, storageLeft = 4_096
        var announced = FuzzAnnounced()
        while !input.isEmpty, steps < 64 {
            steps += 1
            let step = input.byte() % 12
            switch step {
            case 0, 1:
                let path: PingPath = step == 0 ? .stream : .datagram
                let record = input.record()
                announced.note(record)
                await router.handleForFuzzing(InboundChannelMessage(peer: peer, path: path, bytes: record))
                await router.storeInboxBacklogForFuzzing()
            case 2:
                guard let message = try? ChannelMessage(decoding: input.record()) else { continue }
                await node.fuzzStreamMessage(message, from: peer, receivedAt: clock.wallNanoseconds())
            case 3:
                clock.advance(nanoseconds: UInt64(input.byte()) * 50_000_000)
                await router.tickForFuzzing(round: UInt64(steps))
                await node.fuzzTimerPass()
                if let undrained { await node.fuzzCheckOutbound(undrained, of: peer, afterTimerPass: true) }
            case 4:
                _ = try? await router.acknowledgeInbox(ids: app.takeInboxIDs())
            case 5:
                await router.activated(peer)
            case 6:
                await router.deactivated(peer)
            case 7:
                let record = input.record()
                if record.first == 0xF5 {
                    await flood(record, router: router)
                } else {
                    await FuzzApp.send(record, via: router)
                }
            case 8:
                let connection = await node.fuzzUndrainedPeer(id: 1_000 + UInt64(connections.count), clock: clock)
                connections.append(connection)
                undrained = connection
                await node.fuzzActivate(peer, connection)
                await router.activated(peer)
            case 9:
                let count = min(requestsLeft, 16 * (Int(input.byte()) + 1)), mix = input.byte()
                requestsLeft -= count
                guard let undrained, count > 0 else { continue }
                let burst = await node.fuzzRequestBurst(undrained, from: peer, count: count, mix: mix,
                                                        rekeyEvery: mix & 0x80 != 0 ? 16 : 0, peerKey: peerKey)
                if mix & 0x80 == 0, burst.written + Int(burst.dropped) != burst.requests {
                    fuzzFailure("\(burst.requests) requests, \(burst.written) replies written, \(burst.dropped) dropped")
                }
            case 10:
                let count = input.byte()
                guard let undrained else { continue }
                await node.fuzzRead(undrained, writes: count == 255 ? Int.max : Int(count) * 16)
            default:
                let kind = input.byte(), count = min(storageLeft, 16 * (Int(input.byte()) + 1))
                storageLeft -= count
                let messages = FuzzStorageBurst.messages(kind: kind, count: count, first: 4_096 - storageLeft - count,
                                                         template: input.record(), wallMicros: clock.wallNanoseconds() / 1_000)
                for message in messages {
                    announced.note(message)
                    await router.handleForFuzzing(InboundChannelMessage(peer: peer, path: .stream, bytes: message))
                }
                await router.storeInboxBacklogForFuzzing()
                await router.fuzzCheckSessions(from: peer, announced: announced)
            }
            await router.settleReplays()
            await node.fuzzSettle(connections)
            if let undrained { await node.fuzzCheckOutbound(undrained, of: peer, afterTimerPass: false) }
        }
        await router.stopForFuzzing()
        // Every connection closes here: its embedded loop must go on the thread that made it.
        await node.fuzzFinish(connections, of: peer)
    }
}

extension FuzzRouterBed {
    /// What P may make the store hold, low so that a flood step reaches it.
    static let peerLimits = PeerStateLimits(slotsPerPeer: 64, slotBytesPerPeer: 1 << 16, slots: 128, slotBytes: 1 << 20,
                                            sessionsPerPeer: 64, sessions: 128, anchorsPerPeer: 64, anchors: 128)

    /// Step 7 with a 0xF5 record: P names `8 + record[1]` new sessions (IDs from the index and
    /// `record[2]`), each with a session row, a snapshot and a timer anchor; then the store must
    /// hold at most P's limits of each.
    static func flood(_ record: [UInt8], router: DeliveryRouter) async {
        let count = 8 + Int(record.count > 1 ? record[1] : 0)
        let fill = record.count > 2 ? record[2] : 0
        let at = Date(timeIntervalSince1970: 1_700_000_000)
        for index in 0..<count {
            let low = UInt8(truncatingIfNeeded: index), high = UInt8(truncatingIfNeeded: index >> 8)
            let session = UUID(uuid: (low, high, fill, fill, fill, fill, fill, fill, fill, fill, fill, fill, fill, fill, fill, 0xF5))
            let row = SessionRecord(sessionID: session, featureID: "a", owner: "p", status: "running", updatedAt: at,
                                    revision: 1, sourcePeer: nil)
            let metadata = SessionSyncMetadata(sessionID: session, featureID: "a", sourcePeerID: "p", eventID: session,
                                               sequence: 0, causalTimestamp: at, payloadType: "fuzz")
            let snapshot = AnySessionSyncSnapshot(metadata: metadata, revision: 1, state: Data([fill]))
            let anchor = DeliveryAnchorRecord(sessionID: session, featureID: "a", revision: 1,
                                              anchor: SessionTimerAnchor(startedAt: at))
            var messages = [DeliveryMessage.session(DeliverySessionRecord(row)).encode(),
                            DeliveryMessage.anchor(anchor).encode()]
            if let encoded = try? SessionWireCodec.encode(snapshot) { messages.append(DeliveryMessage.snapshotPush(encoded).encode()) }
            for bytes in messages {
                await router.handleForFuzzing(InboundChannelMessage(peer: peer, path: .stream, bytes: bytes))
            }
        }
        let store = await router.store, key = peer.description
        let slots = (try? store.slots.listInbound(peer: key).count) ?? 0
        let rows = (try? store.sessions.list().filter { $0.sourcePeer == key }.count) ?? 0
        let anchors = (try? store.sessions.listTimerAnchors().filter { $0.sourcePeer == key }.count) ?? 0
        if slots > peerLimits.slotsPerPeer || rows > peerLimits.sessionsPerPeer || anchors > peerLimits.anchorsPerPeer {
            fuzzFailure("P grew the store past its limits: \(slots) slots, \(rows) session rows, \(anchors) anchors")
        }
    }
}

extension DeliveryRouter {
    /// One tick of the router's periodic work (`DeliveryTicker.tick`).
    func tickForFuzzing(round: UInt64) async {
        await ticker.tick(self, round: round)
    }

    /// Lets the inbox replays that `attach` started finish (bounded), so what follows sees a
    /// settled router.
    func settleReplays() async {
        for _ in 0..<10_000 where !handOut.state.replaying.isEmpty { await Task.yield() }
    }

    /// A peer's message handled as the message consumer does.
    func handleForFuzzing(_ message: InboundChannelMessage) async {
        await consumer.handle(self, message)
    }

    /// What the message queued for the inbox, stored as the inbox consumer does.
    func storeInboxBacklogForFuzzing() async {
        await consumer.storeInboxBacklog(self)
    }

    /// What `run()` does when it stops, for a router that never ran.
    func stopForFuzzing() async {
        await consumer.flushSeen(self)
        let committer = self.committer
        _ = try? await worker.run { committer.shutdown() }
    }
}

extension MeshNode {
    /// One authenticated channel message from `peer` on the stream, as the stream reader
    /// dispatches it after the frame opened.
    func fuzzStreamMessage(_ message: ChannelMessage, from peer: DeviceID, receivedAt: Int64) {
        let now = clock.monotonicNanoseconds()
        _ = perform(channels.streamMessage(message, from: peer, receivedAt: receivedAt, now: now),
                    from: peer, path: .stream, now: now)
    }
}

/// Wall and monotonic time that move only when the harness says so.
final class FuzzClock: MeshClock, @unchecked Sendable {
    private let lock = NSLock()
    private var wall: Int64 = 1_750_000_000 * 1_000_000_000
    private var monotonic: UInt64 = 1_000_000_000

    func wallNanoseconds() -> Int64 { lock.withLock { wall } }
    func monotonicNanoseconds() -> UInt64 { lock.withLock { monotonic } }

    func advance(nanoseconds: UInt64) {
        lock.withLock {
            monotonic &+= nanoseconds
            wall &+= Int64(truncatingIfNeeded: nanoseconds)
        }
    }
}

/// The attached app: remembers the inbox IDs it was handed, to acknowledge them.
final class FuzzApp: DeliveryEventSink, @unchecked Sendable {
    private let lock = NSLock()
    private var inboxIDs: [Int64] = []

    func emit(_ event: DeliveryEvent) {
        guard case .envelope(_, let inboxID, _, _, _) = event, inboxID != 0 else { return }
        lock.withLock { if inboxIDs.count < 10_000 { inboxIDs.append(inboxID) } }
    }

    func takeInboxIDs() -> [Int64] { lock.withLock { defer { inboxIDs = [] }; return inboxIDs } }

    static func send(_ payload: [UInt8], via router: DeliveryRouter) async {
        let metadata = SessionSyncMetadata(sessionID: UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)),
                                           featureID: "a", sourcePeerID: "app",
                                           eventID: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                                                UInt8(truncatingIfNeeded: payload.count), 1)),
                                           sequence: 1, causalTimestamp: Date(timeIntervalSince1970: 1_700_000_000),
                                           payloadType: "fuzz")
        let envelope = AnySessionSyncEnvelope(metadata: metadata, payload: Data(payload))
        guard let encoded = try? SessionWireCodec.encode(envelope) else { return }
        _ = try? await router.send(envelope, encoded: encoded, mode: 2, to: FuzzRouterBed.peer.description)
    }
}
