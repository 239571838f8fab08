import Foundation
import Logging
import MeshLocalAPI
import NIOCore
import NIOPosix
import SessionMesh
import Testing
@testable import MeshDaemon

extension DeliveryIntegration {
    /// The data operations through real local API sockets of two daemons.
    @Suite("Local API data operations", .serialized)
    struct LocalAPIDataTests {
        static func startServer(_ daemon: RunningDaemon, bed: DeliveryTestBed) async throws -> LocalAPIServer {
            let dispatcher = LocalAPIDispatcher(controlPlane: daemon.node, defaultPairingLifetime: 60, router: daemon.router)
            return try await LocalAPIServer.start(socketPath: daemon.running.stateDirectory + "/api.sock", mode: 0o600,
                                                  dispatcher: dispatcher, eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
                                                  logger: NodeTestBed.logger("api"))
        }

        /// One daemon named `name` and its local API server; `cleanUp` stops both.
        static func singleServer(_ name: String) async throws -> (socketPath: String, cleanUp: @Sendable () async -> Void) {
            let bed = DeliveryTestBed()
            do {
                let server = try await startServer(try await bed.start(name: name), bed: bed)
                return (server.socketPath, { await server.shutdown(); await bed.shutdown() })
            } catch {
                await bed.shutdown()
                throw error
            }
        }

        /// Two paired daemons and a local API server on the first (`a`); all stopped after `body`.
        static func withPairedServer(_ body: (RunningDaemon, LocalAPIServer) async throws -> Void) async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let (a, _) = try await bed.pair()
            let server = try await startServer(a, bed: bed)
            let servers = ServerCleanup([server])
            defer { Task { await servers.shutdown() } }
            try await body(a, server)
        }

        /// An `attach` request frame for `feature`, as app `app`.
        static func attach(_ feature: String, app: String, id: UInt32) -> LocalAPIFrame {
            .request(.attach, id: id, json: #"{"features":["\#(feature)"],"app":"\#(app)"}"#)
        }

        static func binary(_ operation: UInt16, id: UInt32, _ bytes: [UInt8]) -> LocalAPIFrame {
            LocalAPIFrame(kind: .request, operation: LocalAPIOperation(rawValue: operation), flags: .binaryBody,
                          requestID: id, body: ByteBuffer(bytes: bytes))
        }

        static func json<T: Decodable>(_ type: T.Type, _ frame: LocalAPIFrame?) throws -> T {
            let frame = try #require(frame)
            #expect(frame.kind == .reply, "got \(frame.kind) \(frame.errorBody?.description ?? "")")
            return try JSONDecoder().decode(T.self, from: Data(frame.body.readableBytesView))
        }

        /// Reads frames (skipping events) until the answer to request `id`.
        static func answer(to id: UInt32, on socket: RawSocket) async throws -> LocalAPIFrame {
            for _ in 0..<10_000 {
                let frame = try #require(try await socket.readFrame(), "no answer to request \(id)")
                if frame.kind != .event, frame.requestID == id { return frame }
            }
            throw CancellationError()
        }

        /// Attachments end only with their connection: one connection gets at most 256, the next
        /// attach an error it can act on, and the connection (and other connections) go on.
        @Test func oneConnectionHasAtMost256AttachmentsAndGoesOnAfterTheRefusal() async throws {
            let (socketPath, cleanUp) = try await Self.singleServer("attacher")
            defer { Task { await cleanUp() } }
            let app = try RawSocket(path: socketPath)
            for id in UInt32(1)...256 {
                app.send(Self.attach("f\(id)", app: "many", id: id))
                let reply = try await Self.answer(to: id, on: app)
                #expect(reply.kind == .reply, "attach \(id): \(reply.errorBody?.description ?? "")")
            }
            app.send(Self.attach("one-too-many", app: "many", id: 300))
            let refused = try await Self.answer(to: 300, on: app)
            #expect(refused.kind == .error)
            #expect(refused.errorBody?.code == LocalAPIDataError.tooManyAttachments)
            // The same connection still works, and another connection may attach.
            app.send(.request(.status, id: 301, json: "{}"))
            #expect(try await Self.answer(to: 301, on: app).kind == .reply)
            let other = try RawSocket(path: socketPath)
            other.send(Self.attach("f1", app: "other", id: 1))
            #expect(try await Self.answer(to: 1, on: other).kind == .reply)
        }

        /// Events carry the attach's request id: a second attach with an id an attachment of the
        /// connection already has is refused (before, the first attachment's events were held for
        /// ever and the two could not be told apart), and the first attachment goes on.
        @Test func anAttachReusingAnAttachmentsRequestIDIsRefused() async throws {
            let (socketPath, cleanUp) = try await Self.singleServer("reuser")
            defer { Task { await cleanUp() } }
            let app = try RawSocket(path: socketPath)
            app.send(Self.attach("one", app: "reuser", id: 5))
            #expect(try await Self.answer(to: 5, on: app).kind == .reply)
            app.send(Self.attach("two", app: "reuser", id: 5))
            let refused = try await Self.answer(to: 5, on: app)
            #expect(refused.kind == .error)
            #expect(refused.errorBody?.code == LocalAPIErrorBody.Code.invalidArgument)
            #expect(refused.errorBody?.message.contains("request id 5") == true)
            // Another id attaches; the connection goes on.
            app.send(Self.attach("two", app: "reuser", id: 6))
            #expect(try await Self.answer(to: 6, on: app).kind == .reply)
        }

        /// A client that sends realtime items (answered at once, on the loop) and then shuts
        /// its write side gets every reply before the daemon closes the connection.
        @Test func aClientThatHalfClosesAfterRealtimeSendsGetsEveryReply() async throws {
            try await Self.withPairedServer { a, server in
                let app = try RawSocket(path: server.socketPath, receiveTimeout: 5)
                let count: UInt32 = 300
                var wire: [UInt8] = []
                for id in 1...count {
                    let (_, encoded) = try RouterFixtures.envelope("rt \(id)", sequence: UInt64(id))
                    var frame = ByteBuffer()
                    LocalAPIFrameEncoder.write(Self.binary(0x0101, id: id, [1, 0] + encoded), to: &frame)
                    wire += Array(frame.readableBytesView)
                }
                app.send(wire)
                app.shutdownWrite()
                var replied: [UInt32] = []
                while let frame = try await app.readFrame() {
                    #expect(frame.kind == .reply, "request \(frame.requestID): \(frame.errorBody?.description ?? "")")
                    replied.append(frame.requestID)
                }
                #expect(replied == Array(1...count), "\(replied.count) of \(count) replies before the close")
                #expect(try await app.closesSoon(), "the daemon kept the half-closed connection open")
                // Answered on the loop (a realtime send to a peer with no datagram path yet falls
                // back to the outbox there and then): every one went through the realtime route.
                let counters = await a.router.counterValues()
                #expect((counters["delivery.realtime.sent"] ?? 0) + (counters["delivery.realtime.fallbacks"] ?? 0) == UInt64(count))
            }
        }

        @Test func attachSendAckSnapshotAndQueueThroughTheSocket() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let (a, b) = try await bed.pair()
            let serverA = try await Self.startServer(a, bed: bed), serverB = try await Self.startServer(b, bed: bed)
            let servers = ServerCleanup([serverA, serverB])
            defer { Task { await servers.shutdown() } }
            let appA = try RawSocket(path: serverA.socketPath), appB = try RawSocket(path: serverB.socketPath)

            appB.send(Self.attach("demo", app: "test", id: 7))
            let attach = try Self.json(MeshAttachReply.self, try await appB.readFrame())
            #expect(attach.localDeviceID == b.id && attach.peers.map(\.deviceID) == [a.id])

            let (envelope, encoded) = try RouterFixtures.envelope("hello", sequence: 1)
            appA.send(Self.binary(0x0101, id: 1, [2, 0] + encoded))
            let sent = try Self.json(MeshSendReply.self, try await appA.readFrame())
            #expect(sent.eventID == envelope.metadata.eventID && sent.outcome == .queued && sent.peers == 1)

            let event = try #require(try await appB.readFrame())
            #expect(event.kind == .event && event.operation.rawValue == 0x0180 && event.requestID == 7)
            let body = Array(event.body.readableBytesView)
            #expect(body[0] == 0)
            let inboxID = body[1...8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            #expect(inboxID != 0)
            let fromLength = Int(body[9])
            #expect(String(decoding: body[10..<(10 + fromLength)], as: UTF8.self) == a.id)
            #expect(body[10 + fromLength] == 2)
            #expect(try SessionWireCodec.decodeEnvelope(Array(body[(11 + fromLength)...])) == envelope)
            appB.send(.request(LocalAPIOperation(rawValue: 0x0109), id: 8, json: #"{"ids":[\#(inboxID)]}"#))
            #expect(try Self.json(MeshInboxAckReply.self, try await appB.readFrame()).acknowledged == 1)

            let (snapshot, snapshotBytes) = try RouterFixtures.snapshot(revision: 3, state: #"{"page":3}"#)
            appA.send(Self.binary(0x0102, id: 2, [0] + snapshotBytes))
            let published = try Self.json(MeshSnapshotPublishReply.self, try await appA.readFrame())
            #expect(published.revision == 3 && published.stored)
            let pushed = try #require(try await appB.readFrame())
            #expect(pushed.operation.rawValue == 0x0181)
            appB.send(.request(LocalAPIOperation(rawValue: 0x0104), id: 9, json: #"{"featureID":"demo","peer":"\#(a.deviceID.short)"}"#))
            let latest = try #require(try await appB.readFrame())
            #expect(latest.kind == .reply && latest.flags.contains(.binaryBody))
            let latestBytes = Array(latest.body.readableBytesView)
            #expect(try SessionWireCodec.decodeSnapshot(Array(latestBytes[(1 + Int(latestBytes[0]))...])) == snapshot)
            appB.send(.request(LocalAPIOperation(rawValue: 0x0104), id: 10, json: #"{"featureID":"nothing"}"#))
            #expect(try await appB.readFrame()?.errorBody?.code == "not-found")

            appA.send(.request(LocalAPIOperation(rawValue: 0x010A), id: 3))
            #expect(try Self.json(MeshQueueReply.self, try await appA.readFrame()).items.count <= 1)
            appA.send(.request(LocalAPIOperation(rawValue: 0x010B), id: 4, json: #"{"id":999999}"#))
            #expect(try await appA.readFrame()?.errorBody?.code == "not-found")
            appA.send(.request(LocalAPIOperation(rawValue: 0x0002), id: 5))
            let status = try Self.json(DaemonStatus.self, try await appA.readFrame())
            #expect(status.counters["delivery.reliable.enqueued"] == 1 && status.counters["pending.dropped"] == 0)
            await servers.shutdown()
            await bed.shutdown()
        }

        @Test func malformedDataRequestsGetAnErrorAndOthersKeepWorking() async throws {
            try await Self.withPairedServer { _, server in
                let bad = try RawSocket(path: server.socketPath), good = try RawSocket(path: server.socketPath)
                bad.send(Self.binary(0x0101, id: 1, [9, 0, 1, 2, 3]))
                #expect(try await bad.readFrame()?.errorBody?.code == "invalid-argument")
                bad.send(Self.binary(0x0101, id: 2, [1, 200, 1]))
                #expect(try await bad.readFrame()?.errorBody?.code == "bad-request")
                #expect(try await bad.closesSoon())
                good.send(.request(LocalAPIOperation(rawValue: 0x0101), id: 3, json: "{}"))
                #expect(try await good.readFrame()?.errorBody?.code == "unsupported-body")
                good.send(.request(.inboxAck, id: 5, json: #"{"ids":[7,-1]}"#))
                #expect(try await good.readFrame()?.errorBody?.code == "invalid-argument")
                good.send(.request(.queueCancel, id: 6, json: #"{"id":18446744073709551615}"#))
                #expect(try await good.readFrame()?.errorBody?.code == "invalid-argument")
                good.send(.request(LocalAPIOperation(rawValue: 0x0108), id: 4, json: "{}"))
                #expect(try Self.json(MeshSessionsReply.self, try await good.readFrame()).sessions.isEmpty)
            }
        }
    }
}

/// Shuts local API servers down once (servers run on the process-wide singleton group).
final class ServerCleanup: @unchecked Sendable {
    private let lock = NSLock()
    private var servers: [LocalAPIServer]
    init(_ servers: [LocalAPIServer]) { self.servers = servers }
    func shutdown() async {
        let taken = lock.withLock { defer { servers = [] }; return servers }
        for server in taken { await server.shutdown() }
    }
}

extension DeliveryIntegration {
    @Suite("Feature allow-list")
    struct FeatureAllowListTests {
        @Test func entriesParseAndDecide() throws {
            let list = try FeatureAllowList(parsing: ["1000:demo", "1001:*"])
            #expect(list.allows(uid: 1000, feature: "demo") && !list.allows(uid: 1000, feature: "chat"))
            #expect(list.allows(uid: 1001, feature: "anything") && list.allows(uid: 0, feature: "demo"))
            #expect(!list.allows(uid: 1002, feature: "demo") && !list.allows(uid: nil, feature: "demo"))
            #expect(throws: ConfigurationError.self) { try FeatureAllowList(parsing: ["demo"]) }
            #expect(throws: ConfigurationError.self) { try FeatureAllowList(parsing: ["x:demo"]) }
        }

        @Test func theConfigFileReadsIt() throws {
            let file = try ConfigFile(parsing: #"feature_allow = ["1000:demo", "1000:chat"]"#, fileName: "meshd.toml")
            #expect(file.featureAllowList == FeatureAllowList(entries: [1000: ["demo", "chat"]]))
        }

        @Test func aUidWithoutAnEntryIsRefused() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let a = try await bed.start(name: "alice")
            let dispatcher = LocalAPIDispatcher(controlPlane: a.node, defaultPairingLifetime: 60, router: a.router,
                                                featureAllowList: FeatureAllowList(entries: [1000: ["demo"]]))
            let request = LocalAPIRequest.snapshotLatest(featureID: "demo", peer: nil, sessionID: nil)
            let refused = await dispatcher.perform(request, credentials: PeerCredentials(pid: 1, uid: 1001, gid: 1001))
            #expect(refused.failureCode == "feature-not-allowed")
            let allowed = await dispatcher.perform(request, credentials: PeerCredentials(pid: 1, uid: 1000, gid: 1000))
            #expect(allowed.failureCode == "not-found")
            await bed.shutdown()
        }
    }
}

extension Result where Failure == LocalAPIErrorBody {
    var failureCode: String? { if case .failure(let body) = self { body.code } else { nil } }
}
