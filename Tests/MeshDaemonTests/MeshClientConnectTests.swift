import Foundation
import SessionMeshClient
import Testing

/// A `--socket` that names the wrong kind of thing says what is wrong with it, instead of
/// "no socket file" for a path too long to connect to, or "nothing is listening" for a file; a
/// socket this user may not reach says "permission denied", also when a folder on the way is
/// what keeps the user out.
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

    /// `meshctl` run as user `nobody` against a socket of root's: the message names the folder
    /// that keeps it out (before: "no socket file", while the daemon was running), or the
    /// socket's mode. Needs root and `setpriv` to switch users.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
                   && ChildProcess.executable("meshctl") != nil, "needs root, setpriv and meshctl"))
    func anotherUserIsToldPermissionDeniedNamingTheFolderOrTheSocket() async throws {
        try await withTestServer { test in
            func meshctlAsNobody() async throws -> (status: Int32, output: String) {
                try await DaemonProcess.run("/usr/bin/setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups",
                                                                 try #require(ChildProcess.executable("meshctl")),
                                                                 "--socket", test.socketPath, "status"])
            }
            #expect(chmod(test.directory, 0o700) == 0)
            let folder = try await meshctlAsNobody()
            #expect(folder.status == 3, "\(folder)")
            #expect(folder.output.contains("cannot reach meshd: permission denied: this user may not enter the folder \(test.directory) that holds the socket"),
                    "\(folder.output)")

            #expect(chmod(test.directory, 0o755) == 0)
            let socket = try await meshctlAsNobody()
            #expect(socket.status == 3, "\(socket)")
            #expect(socket.output.contains("permission denied (the socket's mode or owner keeps this user out)"), "\(socket.output)")
        }
    }
}
