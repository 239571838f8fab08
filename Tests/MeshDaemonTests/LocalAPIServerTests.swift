import Foundation
import Logging
import MeshDaemon
import MeshLocalAPI
import NIOCore
import NIOPosix
import SessionMeshClient
import Testing

@Suite("Local API server over a real socket")
struct LocalAPIServerTests {
    @Test func everyControlOperationRoundTripsThroughMeshClient() async throws {
        try await withTestServer { test in
            let client = try await MeshClient.connect(socketPath: test.socketPath)

            let hello = try await client.hello(client: "tests")
            #expect(hello.protocolVersion == 1)
            #expect(hello.operations.contains("pair.join"))
            #expect(hello.uid == getuid())

            #expect(try await client.status() == (await test.controlPlane.status()))
            #expect(try await client.peers() == (await test.controlPlane.peers()))

            let invitation = try await client.createPairingCode(validFor: 60)
            #expect(invitation == PairingInvitation(code: FakeControlPlane.code, expires: 1_700_000_060))
            _ = try await client.createPairingCode()
            #expect(await test.controlPlane.createdLifetimes == [60, 300])

            let joined = try await client.joinPairing(code: FakeControlPlane.code, address: "127.0.0.1:47001")
            #expect(joined.verification == "4821 0375")

            try await client.unpair(deviceID: "AAAAAAA")
            #expect(await test.controlPlane.unpaired == ["AAAAAAA"])

            let report = try await client.ping(deviceID: "AAAAAAA", count: 200)
            #expect(report.paths.map(\.path) == [.datagram, .stream])
            #expect(report.paths.allSatisfy { $0.sent == 200 && $0.p99Microseconds == 120 })
            await client.close()
        }
    }

    @Test func pairWaitEndsWithTheDeviceOrWithCancelOnTheSameConnection() async throws {
        try await withTestServer { test in
            let client = try await MeshClient.connect(socketPath: test.socketPath)
            let code = try await client.createPairingCode().code

            async let paired = client.awaitPairing(code: code)
            try await pollUntil { await test.controlPlane.waitingCount() == 1 }
            await test.controlPlane.completePairing(code: code)
            #expect(try await paired.name == "laptop")

            let cancelled = Task { try await client.awaitPairing(code: code) }
            try await pollUntil { await test.controlPlane.waitingCount() == 1 }
            try await client.cancelPairing(code: code)
            let outcome = await cancelled.result
            #expect(throws: MeshClientError(kind: .daemon, code: "pairing-cancelled", message: "the pairing code was cancelled")) {
                try outcome.get()
            }
            #expect(await test.controlPlane.cancelledCodes == [code])
            await client.close()
        }
    }

    @Test func shutdownWaitsForTheRequestsStillBeingPerformed() async throws {
        let test = try await TestServer.start()
        let client = try await MeshClient.connect(socketPath: test.socketPath)
        let code = try await client.createPairingCode().code
        await test.controlPlane.ignoreCancelledPairingWaits()
        let waiting = Task { try await client.awaitPairing(code: code) }
        try await pollUntil { await test.controlPlane.waitingCount() == 1 }

        let order = OrderLog()
        let shutdown = Task {
            await test.server.shutdown()
            await order.append("server stopped")
        }
        // The client's wait ends when the server closes its connection ...
        await #expect(throws: (any Error).self) { try await waiting.value }
        // ... but this pairing wait does not end on cancellation: its request still runs, and
        // the server waits for it.
        await order.append("request ended")
        await test.controlPlane.completePairing(code: code)
        await shutdown.value
        #expect(await order.entries == ["request ended", "server stopped"])
        #expect(!FileManager.default.fileExists(atPath: test.socketPath))
        await client.close()
        try? FileManager.default.removeItem(atPath: test.directory)
    }

    @Test func daemonErrorsSurfaceWithTheirCodeAndMessage() async throws {
        try await withTestServer { test in
            let client = try await MeshClient.connect(socketPath: test.socketPath)
            await #expect {
                try await client.ping(deviceID: "nobody", count: 3)
            } throws: { error in
                guard let error = error as? MeshClientError else { return false }
                return error.kind == .daemon && error.code == "unknown-peer"
                    && error.message == "no paired device matches 'nobody'; see `meshctl peers`"
            }
            await #expect {
                try await client.joinPairing(code: "WRONG", address: "127.0.0.1:1")
            } throws: { error in
                (error as? MeshClientError)?.code == "pairing-failed"
            }
            #expect(try await client.status().name == "fake")
            await client.close()
        }
    }

    @Test func callsOnAClosedClientFailAtOnce() async throws {
        try await withTestServer { test in
            let client = try await MeshClient.connect(socketPath: test.socketPath)
            await client.close()
            await #expect {
                _ = try await client.status()
            } throws: { error in
                (error as? MeshClientError)?.kind == .connectionClosed
            }
        }
    }

    @Test func aMissingSocketSaysIsMeshdRunning() async throws {
        await #expect {
            _ = try await MeshClient.connect(socketPath: "/tmp/smt-does-not-exist/meshd.sock")
        } throws: { error in
            guard let error = error as? MeshClientError else { return false }
            return error.kind == .unreachable
                && error.message.contains("is meshd running? socket /tmp/smt-does-not-exist/meshd.sock")
        }
    }

    @Test func theSocketHasModeSixHundredAndIsRemovedOnShutdown() async throws {
        let test = try await TestServer.start()
        let attributes = try FileManager.default.attributesOfItem(atPath: test.socketPath)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(!FileManager.default.fileExists(atPath: test.socketPath + ".new"))
        await test.server.shutdown()
        #expect(!FileManager.default.fileExists(atPath: test.socketPath))
        try? FileManager.default.removeItem(atPath: test.directory)
    }

    @Test func aSecondServerOnALiveSocketIsRefusedButAStaleSocketIsReplaced() async throws {
        let test = try await TestServer.start()
        await #expect {
            _ = try await LocalAPIServer.start(
                socketPath: test.socketPath, mode: 0o600,
                dispatcher: LocalAPIDispatcher(controlPlane: FakeControlPlane(), defaultPairingLifetime: 300),
                eventLoopGroup: MultiThreadedEventLoopGroup.singleton, logger: Logger(label: "test"))
        } throws: { error in
            (error as? LocalAPIServerError)?.isAnotherDaemonLive == true
        }
        // The first server still serves.
        let client = try await MeshClient.connect(socketPath: test.socketPath)
        #expect(try await client.status().name == "fake")
        await client.close()

        // A socket file nobody listens on (a crashed daemon's) is replaced.
        let stale = test.directory + "/stale.sock"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(stale.utf8)) }
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        close(fd)
        #expect(FileManager.default.fileExists(atPath: stale))
        let second = try await LocalAPIServer.start(
            socketPath: stale, mode: 0o600,
            dispatcher: LocalAPIDispatcher(controlPlane: FakeControlPlane(), defaultPairingLifetime: 300),
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton, logger: Logger(label: "test"))
        let staleClient = try await MeshClient.connect(socketPath: stale)
        #expect(try await staleClient.status().name == "fake")
        await staleClient.close()
        await second.shutdown()
        await test.stop()
    }

    @Test func aMissingParentFolderIsCreatedPrivate() async throws {
        let directory = try TemporaryFolder.make()
        let path = directory + "/run/sessionmesh/meshd.sock"
        let server = try await LocalAPIServer.start(
            socketPath: path, mode: 0o660,
            dispatcher: LocalAPIDispatcher(controlPlane: FakeControlPlane(), defaultPairingLifetime: 300),
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton, logger: Logger(label: "test"))
        let folder = try FileManager.default.attributesOfItem(atPath: directory + "/run/sessionmesh")
        #expect((folder[.posixPermissions] as? Int) == 0o700)
        #expect((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) == 0o660)
        await server.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// What happened, in order.
private actor OrderLog {
    private(set) var entries: [String] = []
    func append(_ entry: String) { entries.append(entry) }
}

/// Waits (≤ 5 s) until `condition` holds; records an issue when it never did.
func pollUntil(_ condition: @Sendable () async -> Bool) async throws {
    if (try? await waitUntil("condition", timeout: 5) { await condition() }) == nil {
        Issue.record("condition not met within 5 s")
    }
}
