#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshLocalAPI
import NIOCore
import SessionMesh
import SessionMeshClient
import Testing
@testable import MeshDaemon

extension DeliveryIntegration {
    /// Two real `meshd` processes: the delivery router runs inside meshd, with its store in the
    /// state folder, and reliable items sent while the peer is stopped arrive once it is back.
    @Suite("meshd delivery", .serialized, .enabled(if: ChildProcess.executable("meshd") != nil, "meshd is not built"))
    struct DeliveryMeshdTests {
        final class Daemon: @unchecked Sendable {
            let directory: String
            let name: String
            var port = 0
            var process: ChildProcess?
            var socket: String { directory + "/meshd.sock" }

            init(directory: String, name: String) {
                self.directory = directory
                self.name = name
            }

            func start() async throws {
                process = try ChildProcess("meshd", ["--user", "--state-dir", directory + "/state", "--socket", socket,
                                                     "--listen", "127.0.0.1:\(port)", "--name", name, "--log-level", "error"])
                let listen = try await eventually("\(name) serving", timeout: 20) { () -> String? in
                    guard let client = try? await MeshClient.connect(socketPath: self.socket) else { return nil }
                    defer { Task { await client.close() } }
                    return try? await client.status().listen
                }
                port = Int(listen.split(separator: ":").last ?? "0") ?? 0
            }

            func stop() async throws {
                process?.terminate()
                _ = try await process?.exitStatus()
                process = nil
            }
        }

        @Test func reliableItemsSentWhileThePeerIsStoppedArriveOnce() async throws {
            let root = try TemporaryFolder.make()
            let a = Daemon(directory: root + "/a", name: "alice"), b = Daemon(directory: root + "/b", name: "bob")
            defer {
                a.process?.terminate()
                b.process?.terminate()
                try? FileManager.default.removeItem(atPath: root)
            }
            try await a.start()
            try await b.start()
            let clientA = try await MeshClient.connect(socketPath: a.socket), clientB = try await MeshClient.connect(socketPath: b.socket)
            let invitation = try await clientA.createPairingCode(validFor: 60)
            async let waited = clientA.awaitPairing(code: invitation.code)
            let joined = try await clientB.joinPairing(code: invitation.code, address: "127.0.0.1:\(a.port)")
            let aID = joined.deviceID, bID = try await waited.deviceID
            await clientA.close()
            await clientB.close()
            #expect(FileManager.default.fileExists(atPath: a.directory + "/state/delivery.sqlite"))

            try await b.stop()
            let appA = try RawSocket(path: a.socket)
            var sent: [UUID] = []
            for index in 1...3 {
                let (envelope, encoded) = try RouterFixtures.envelope("offline \(index)", sequence: UInt64(index))
                appA.send(LocalAPIDataTests.binary(0x0101, id: UInt32(index), [2, UInt8(bID.utf8.count)] + Array(bID.utf8) + encoded))
                let reply = try LocalAPIDataTests.json(MeshSendReply.self, try await appA.readFrame())
                #expect(reply.outcome == .queued)
                sent.append(envelope.metadata.eventID)
            }
            appA.send(.request(LocalAPIOperation(rawValue: 0x010A), id: 9))
            #expect(try LocalAPIDataTests.json(MeshQueueReply.self, try await appA.readFrame()).items.map(\.eventID) == sent)

            try await b.start()
            let appB = try RawSocket(path: b.socket, receiveTimeout: 15)
            appB.send(.request(LocalAPIOperation(rawValue: 0x0100), id: 1, json: #"{"features":["demo"]}"#))
            _ = try LocalAPIDataTests.json(MeshAttachReply.self, try await appB.readFrame())
            var received: [UUID] = []
            for _ in 0..<50 where received.count < 3 {
                let frame = try #require(try await appB.readFrame())
                guard frame.operation.rawValue == 0x0180 else { continue }  // reachability events may come first
                let body = Array(frame.body.readableBytesView)
                let fromLength = Int(body[9])
                #expect(String(decoding: body[10..<(10 + fromLength)], as: UTF8.self) == aID)
                received.append(try SessionWireCodec.decodeEnvelope(Array(body[(11 + fromLength)...])).metadata.eventID)
            }
            #expect(received == sent)
            try await a.stop()
            try await b.stop()
        }
    }
}
