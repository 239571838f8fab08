#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

/// The Python client in scripts/ speaks the documented protocol to the real server.
@Suite("Python client")
struct PythonClientTests {
    static let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("scripts/mesh_local_api.py").path

    static let python: String? = ["/usr/bin/python3", "/usr/local/bin/python3"].first { FileManager.default.isExecutableFile(atPath: $0) }

    private func run(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let python = try #require(Self.python)
        return try await DaemonProcess.run(python, [Self.script] + arguments, timeout: 30)
    }

    @Test(.enabled(if: python != nil, "python3 is not installed"))
    func thePythonClientRoundTripsOperationsAndErrors() async throws {
        try await withTestServer { test in

            let status = try await run(["--socket", test.socketPath, "status"])
            #expect(status.status == 0, "\(status.output)")
            let decoded = try JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [String: Any]
            #expect(decoded?["name"] as? String == "fake")

            let peers = try await run(["--socket", test.socketPath, "peers"])
            #expect(peers.output.contains("\"channel\": \"active\""))

            let ping = try await run(["--socket", test.socketPath, "ping", #"{"deviceID": "AAAAAAA", "count": 5}"#])
            #expect(ping.status == 0)
            #expect(ping.output.contains("\"p99Microseconds\": 120"))

            let failed = try await run(["--socket", test.socketPath, "unpair", #"{"deviceID": "nobody"}"#])
            #expect(failed.status == 1)
            #expect(failed.output.contains("\"code\": \"unknown-peer\""))

            let missing = try await run(["--socket", test.directory + "/none.sock", "status"])
            #expect(missing.status == 3)

            // A body that is not JSON is a usage error with a sentence, not a Python traceback.
            let badBody = try await run(["--socket", test.socketPath, "ping", "{deviceID"])
            #expect(badBody.status == 2)
            #expect(badBody.output.hasPrefix("the request body is not valid JSON") && !badBody.output.contains("Traceback"), "\(badBody.output)")
        }
    }
}
