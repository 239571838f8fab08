import Foundation
import Testing

/// `meshctl pair` against real meshd processes: the code typed on standard input, the warning
/// for a code given as an argument, and `--replace` for a device that is already paired.
@Suite("meshctl pair with real daemons", .serialized,
       .enabled(if: ChildProcess.executable("meshd") != nil && ChildProcess.executable("meshctl") != nil, "meshd/meshctl are not built"))
struct PairProcessTests {
    @Test func codeOnStandardInputPairsAndPairingAgainNeedsReplace() async throws {
        let a = try await DaemonProcess(name: "alpha")
        let b = try await DaemonProcess(name: "beta")
        defer { a.stopNow(); b.stopNow() }
        let idA = try await a.deviceID(), idB = try await b.deviceID()

        // The code typed on stdin: pairs, and no warning about the process list.
        let first = try await a.pair(with: b)
        #expect((first.inviter["paired"] as? [String: Any])?["deviceID"] as? String == idB)
        #expect(!first.joiner.contains("warning"), "\(first.joiner)")
        _ = try await a.waitForChannel(idB, timeout: 5)

        // Again, code given as an argument, without --replace: one warning line; the inviter
        // refuses the already paired device and says how to replace it.
        let waiter = try ChildProcess("meshctl", ["--socket", a.socketPath, "pair", "--json"])
        defer { waiter.terminate(); waiter.process.waitUntilExit() }
        let codeLine = try #require(try await waiter.readLine(timeout: 10))
        let code = try #require((try JSONSerialization.jsonObject(with: Data(codeLine.utf8)) as? [String: Any])?["code"] as? String)
        let refused = try await b.meshctl(["pair", code, "--address", a.listen])
        #expect(refused.status == 1, "\(refused.output)")
        let warnings = refused.output.split(separator: "\n").filter { $0.contains("warning") }
        #expect(warnings.count == 1 && warnings.first?.contains("process list") == true, "\(refused.output)")
        #expect(refused.output.contains("--replace"), "\(refused.output)")
        let told = try #require(try await waiter.readLine(timeout: 10))
        #expect(told.contains(#""code":"already-paired""#), "\(told)")
        #expect(told.contains("--replace"), "\(told)")

        // With --replace on both sides the pairing is replaced and the channel comes back.
        let replaced = try await a.pair(with: b, replace: true)
        #expect((replaced.inviter["paired"] as? [String: Any])?["deviceID"] as? String == idB)
        _ = try await a.waitForChannel(idB, timeout: 5)
        _ = try await b.waitForChannel(idA, timeout: 5)
        #expect(try await a.peers().count == 1)
    }

    @Test func anEmptyStandardInputIsAClearUsageError() async throws {
        let a = try await DaemonProcess(name: "alpha")
        defer { a.stopNow() }
        let result = try await a.meshctl(["pair", "-", "--address", "127.0.0.1:9"], stdin: "")
        #expect(result.status == 2, "\(result.output)")
        #expect(result.output.contains("no code on standard input"), "\(result.output)")
    }
}
