import Foundation
import SessionMeshClient
import Testing

/// A `--socket` that names the wrong kind of thing says what is wrong with it, instead of
/// "no socket file" for a path too long to connect to, or "nothing is listening" for a file.
@Suite("MeshClient connect errors")
struct MeshClientConnectTests {
    static func unreachableMessage(_ path: String) async -> String? {
        do {
            let client = try await MeshClient.connect(socketPath: path)
            await client.close()
            return nil
        } catch let error as MeshClientError where error.kind == .unreachable {
            return error.message
        } catch {
            return "unexpected \(error)"
        }
    }

    @Test func aPathTooLongForAUnixSocketSaysSo() async {
        let path = "/tmp/" + String(repeating: "x", count: 150) + "/meshd.sock"
        let message = await Self.unreachableMessage(path)
        #expect(message?.contains("longer than the 107 a Unix socket path may have") == true, "\(message ?? "connected")")
    }

    @Test func aFileOrFolderThatIsNotASocketSaysSo() async throws {
        let folder = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/meshd.log"
        try Data("log".utf8).write(to: URL(fileURLWithPath: file))
        for path in [file, folder] {
            let message = await Self.unreachableMessage(path)
            #expect(message?.contains("the path exists but is not a socket") == true, "\(path): \(message ?? "connected")")
        }
    }
}
