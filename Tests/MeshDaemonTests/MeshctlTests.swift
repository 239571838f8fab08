import Foundation
import MeshLocalAPI
import Testing

/// `meshctl` as a user runs it, against a real server with a fake control plane.
@Suite("meshctl", .enabled(if: ChildProcess.executable("meshctl") != nil, "meshctl is not built"))
struct MeshctlTests {
    @Test func pairJSONPrintsTheCodeFirstAndThePairedDeviceLast() async throws {
        try await withTestServer { test in
            let meshctl = try ChildProcess("meshctl", ["--socket", test.socketPath, "pair", "--json", "--expires", "60"])
            let first = try #require(try await meshctl.readLine())
            #expect(first == #"{"code":"K7Q2-9XWM","expires":1700000060}"#)
            try await pollUntil { await test.controlPlane.waitingCount() == 1 }
            await test.controlPlane.completePairing(code: FakeControlPlane.code)
            let last = try #require(try await meshctl.readLine())
            #expect(last == #"{"paired":{"deviceID":"AAAAAAA-BBBBBBB-CCCCCCC-DDDDDDD","name":"laptop","verification":"4821 0375"}}"#)
            #expect(try await meshctl.exitStatus() == 0)
        }
    }

    @Test func ctrlCCancelsTheCodeAndExits130() async throws {
        try await withTestServer { test in
            let meshctl = try ChildProcess("meshctl", ["--socket", test.socketPath, "pair", "--json"])
            _ = try #require(try await meshctl.readLine())
            try await pollUntil { await test.controlPlane.waitingCount() == 1 }
            meshctl.interrupt()
            let last = try #require(try await meshctl.readLine())
            #expect(last.hasPrefix(#"{"error":{"code":"cancelled""#))
            #expect(try await meshctl.exitStatus() == 130)
            #expect(await test.controlPlane.cancelledCodes == [FakeControlPlane.code])
        }
    }

    @Test func joinPrintsThePeerAndItsVerificationString() async throws {
        try await withTestServer { test in
            let meshctl = try ChildProcess("meshctl", ["--socket", test.socketPath, "pair", FakeControlPlane.code, "--address", "127.0.0.1:47001"])
            var lines: [String] = []
            while let line = try await meshctl.readLine() { lines.append(line) }
            #expect(lines.first == "Paired with laptop")
            #expect(lines.contains { $0.contains("AAAAAAA-BBBBBBB-CCCCCCC-DDDDDDD") })
            #expect(lines.contains { $0.contains("4821 0375") })
            #expect(try await meshctl.exitStatus() == 0)
        }
    }

    @Test func peersJSONIsAnArrayWithTheDocumentedKeys() async throws {
        try await withTestServer { test in
            let meshctl = try ChildProcess("meshctl", ["--socket", test.socketPath, "peers", "--json"])
            var text = ""
            while let line = try await meshctl.readLine() { text += line }
            #expect(try await meshctl.exitStatus() == 0)
            let peers = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]])
            #expect(peers.first?["deviceID"] as? String == FakeControlPlane.peerID)
            #expect(peers.first?["channel"] as? String == "active")
            #expect(peers.first?["name"] as? String == "laptop")
        }
    }

    @Test func exitCodesTellUsageDaemonErrorsAndUnreachableApart() async throws {
        try await withTestServer { test in
            let usage = try ChildProcess("meshctl", ["--socket", test.socketPath, "ping", "X", "--count", "0"])
            #expect(try await usage.exitStatus() == 2)
            let daemonError = try ChildProcess("meshctl", ["--socket", test.socketPath, "unpair", "nobody"])
            #expect(try await daemonError.exitStatus() == 1)
            let unreachable = try ChildProcess("meshctl", ["--socket", test.directory + "/none.sock", "status"])
            #expect(try await unreachable.exitStatus() == 3)
            let ok = try ChildProcess("meshctl", ["--socket", test.socketPath, "ping", "AAAAAAA", "--count", "3"])
            var lines: [String] = []
            while let line = try await ok.readLine() { lines.append(line) }
            #expect(try await ok.exitStatus() == 0)
            #expect(lines.first?.hasPrefix("PATH") == true)
            #expect(lines.contains { $0.hasPrefix("datagram") && $0.contains("55 µs") && $0.contains("120 µs") })
        }
    }
}
