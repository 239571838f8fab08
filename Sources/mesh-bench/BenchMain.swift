import Foundation
import MeshCore
import SessionMeshClient

/// What the async subcommands share: running to completion from the synchronous entry point,
/// and pairing two bench daemons.
enum BenchMain {
    /// Runs `body` as a task and waits for it; an error is printed as `mesh-bench NAME: …` and
    /// ends the process with status 1.
    static func runToCompletion(_ name: String, _ body: @escaping @Sendable () async throws -> Void) {
        let done = DispatchSemaphore(value: 0)
        let failure = Locked<String?>(nil)
        Task {
            do { try await body() } catch { failure.withLock { $0 = "\(error)" } }
            done.signal()
        }
        done.wait()
        if let message = failure.withLock({ $0 }) {
            FileHandle.standardError.write(Data("mesh-bench \(name): \(message)\n".utf8))
            exit(1)
        }
    }

    /// The meshd next to this mesh-bench (a build's products share a folder), checked to be
    /// executable, and that folder's name (the build: `release`, `debug`).
    static func meshdNextToBench() throws -> (path: String, build: String) {
        let folder = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let meshd = folder.appendingPathComponent("meshd").path
        guard FileManager.default.isExecutableFile(atPath: meshd) else { throw BenchError("no meshd next to mesh-bench (\(meshd)); build it first") }
        return (meshd, folder.lastPathComponent)
    }

    /// Pairs `a` and `b` by code and waits (≤ 5 s) until both see the channel active.
    static func pair(_ a: BenchDaemon, _ b: BenchDaemon) async throws {
        let inviter = try await MeshClient.connect(socketPath: a.socketPath)
        let joiner = try await MeshClient.connect(socketPath: b.socketPath)
        defer {
            Task {
                await inviter.close()
                await joiner.close()
            }
        }
        let listen = try await inviter.status().listen
        let invitation = try await inviter.createPairingCode(validFor: 60)
        async let invited = inviter.awaitPairing(code: invitation.code)
        _ = try await joiner.joinPairing(code: invitation.code, address: listen)
        _ = try await invited
        for _ in 0..<200 {
            let up = try await inviter.peers().allSatisfy { $0.channel.rawValue == "active" }
            let down = try await joiner.peers().allSatisfy { $0.channel.rawValue == "active" }
            if up && down { return }
            try await Task.sleep(for: .milliseconds(25))
        }
        throw BenchError("\(a.name) and \(b.name) paired but their channel did not become active within 5 s")
    }
}
