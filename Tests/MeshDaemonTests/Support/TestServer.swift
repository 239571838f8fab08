import Foundation
import Logging
import MeshDaemon
import MeshLocalAPI
import NIOPosix

/// A real `LocalAPIServer` on a socket in a fresh temporary folder, served by a
/// `FakeControlPlane`.
struct TestServer {
    let directory: String
    let socketPath: String
    let controlPlane: FakeControlPlane
    let server: LocalAPIServer

    static func start(limits: LocalAPIServer.Limits = LocalAPIServer.Limits(), mode: UInt16 = 0o600,
                      logger: Logger = Logger(label: "test")) async throws -> TestServer {
        let directory = try TemporaryFolder.make()
        let socketPath = directory + "/api.sock"
        let controlPlane = FakeControlPlane()
        let server = try await LocalAPIServer.start(
            socketPath: socketPath, mode: mode,
            dispatcher: LocalAPIDispatcher(controlPlane: controlPlane, defaultPairingLifetime: 300,
                                           maximumBodyLength: limits.maximumBodyLength),
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton, logger: logger, limits: limits)
        return TestServer(directory: directory, socketPath: socketPath, controlPlane: controlPlane, server: server)
    }

    func stop() async {
        await server.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Short temporary folders (socket paths must stay under 108 bytes).
enum TemporaryFolder {
    static func make() throws -> String {
        let path = "/tmp/smt-" + UUID().uuidString.prefix(12).lowercased()
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        return path
    }
}

/// Runs `body` with a started `TestServer` and always stops it (and removes its folder) after.
func withTestServer(limits: LocalAPIServer.Limits = LocalAPIServer.Limits(), logger: Logger = Logger(label: "test"),
                    _ body: (TestServer) async throws -> Void) async throws {
    let test = try await TestServer.start(limits: limits, logger: logger)
    do {
        try await body(test)
    } catch {
        await test.stop()
        throw error
    }
    await test.stop()
}
