#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import MeshLocalAPI
import Testing
@testable import MeshDaemon

/// The local API's repeatable warnings cost one line per kind and interval under a flood, and a
/// summary says how many were held back.
@Suite("local API warnings under a flood")
struct LocalAPIWarningFloodTests {
    /// Stepped by hand: 10 000 refusals in one interval are one line, and the tick after the
    /// interval writes one summary with the other 9 999.
    @Test func aFloodInOneIntervalIsOneLineAndOneSummary() {
        let log = RecordingLogHandler()
        let clock = Locked<UInt64>(0)
        let warnings = LocalAPIWarnings(logger: log.logger("test"), intervalSeconds: 10, now: { clock.withLock { $0 } })
        for i in 0..<10_000 {
            clock.withLock { $0 = UInt64(i) * 100_000 }  // 10 000 in 1 s
            warnings.warn(.refusedPerUID, metadata: ["client.uid": "1000"])
        }
        warnings.summarise()
        #expect(log.lines.count == 1, "nothing to summarise before the interval passed")
        clock.withLock { $0 = 10_000_000_000 }
        warnings.summarise()
        warnings.summarise()
        #expect(log.lines.map(\.message) == ["local API connection refused: too many open for this uid",
                                             "more local API connections refused for their uid (warnings held back)"])
        #expect(log.lines.map { $0.metadata["suppressed"] } == ["0", "9999"])
        #expect(log.lines.first?.metadata["client.uid"] == "1000")
        print("10 000 refusals in 1 s (stepped clock): \(log.lines.count) log lines, summary suppressed=9999")
    }

    /// Kinds are limited apart: a flood of one does not hide the first of another.
    @Test func eachKindHasItsOwnLimit() {
        let log = RecordingLogHandler()
        let warnings = LocalAPIWarnings(logger: log.logger("test"), intervalSeconds: 10, now: { 0 })
        for _ in 0..<100 { warnings.warn(.refused) }
        warnings.warn(.timedOut)
        warnings.warn(.queueLimit)
        #expect(log.lines.map(\.message) == ["local API connection refused: too many open",
                                             "local API connection timed out; closing",
                                             "local API client exceeded the request queue limit; closing"])
    }

    /// A real server: one uid opens connections past its limit as fast as it can for about a
    /// second (the flood measured 6 526 lines in 3 s before); the log gets one line.
    @Test func refusedConnectionsFromOneUIDFloodNoLog() async throws {
        let log = RecordingLogHandler()
        var limits = LocalAPIServer.Limits()
        limits.maximumConnectionsPerUID = 2
        try await withTestServer(limits: limits, logger: log.logger("test")) { test in
            let held = try [RawSocket(path: test.socketPath), RawSocket(path: test.socketPath)]
            for socket in held { socket.send(LocalAPIFrame(kind: .request, operation: .hello, requestID: 1, body: .init())) }
            for socket in held { #expect(try await socket.readFrame()?.kind == .reply) }
            let start = ContinuousClock.now
            var attempts = 0
            while ContinuousClock.now - start < .seconds(1), attempts < 20_000 {
                _ = try? RawSocket(path: test.socketPath)
                attempts += 1
            }
            let elapsed = ContinuousClock.now - start
            let refused = UInt64(attempts)
            try await pollUntil { test.server.counters.value(.connectionsRefusedPerUID) == refused }
            let lines = log.lines.filter { $0.level >= .warning }
            print("\(attempts) refused connections of one uid in \(elapsed): \(lines.count) warning line(s)")
            #expect(attempts > 100, "the flood made \(attempts) attempts")
            #expect(lines.count == 1, "\(lines.map(\.message))")
            #expect(lines.first?.metadata["client.uid"] == "\(geteuid())")
        }
    }

    /// The server's tick writes the summary of what it held back once the interval passed,
    /// without another refusal to trigger it.
    @Test func theServersTickSummarisesTheHeldBackWarnings() async throws {
        let log = RecordingLogHandler()
        var limits = LocalAPIServer.Limits()
        limits.maximumConnectionsPerUID = 1
        limits.warningInterval = 0.2
        try await withTestServer(limits: limits, logger: log.logger("test")) { test in
            let held = try RawSocket(path: test.socketPath)
            held.send(LocalAPIFrame.request(.hello, id: 1))
            #expect(try await held.readFrame()?.kind == .reply)
            for _ in 0..<50 { _ = try? RawSocket(path: test.socketPath) }
            try await pollUntil { test.server.counters.value(.connectionsRefusedPerUID) == 50 }
            // Each warning stands for itself and the `suppressed` before it; a summary for its `suppressed`.
            func accounted() -> Int {
                log.lines.filter { $0.level >= .warning }.reduce(0) { sum, line in
                    sum + (Int(line.metadata["suppressed"] ?? "0") ?? 0) + (line.message.hasPrefix("more ") ? 0 : 1)
                }
            }
            try await waitUntil("the summary accounts for all 50 refusals", timeout: 10) { accounted() == 50 }
            let lines = log.lines.filter { $0.level >= .warning }
            print("50 refused connections, warning interval 0.2 s: \(lines.count) lines, accounting for \(accounted())")
            #expect(lines.contains { $0.message == "more local API connections refused for their uid (warnings held back)" })
            #expect(lines.count <= 4, "\(lines.map { "\($0.message) \($0.metadata)" })")
        }
    }
}

/// Keeps the lines loggers write (message, level, metadata), for tests of what is logged.
/// Each `Logger` gets its own handler value (its metadata is its own, as with swift-log's
/// handlers: connections set theirs on different loops); the lines are shared, under a lock.
final class RecordingLogHandler: @unchecked Sendable {
    struct Line: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
    }

    private let lock = NSLock()
    private var recorded: [Line] = []

    /// The lines so far, oldest first.
    var lines: [Line] { lock.withLock { recorded } }

    fileprivate func record(_ line: Line) { lock.withLock { recorded.append(line) } }

    /// A logger whose lines (notice and above) end up here.
    func logger(_ label: String) -> Logger { Logger(label: label, factory: { _ in Handler(recorder: self) }) }

    private struct Handler: LogHandler {
        let recorder: RecordingLogHandler
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .notice

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String,
                 file: String, function: String, line: UInt) {
            let fields = self.metadata.merging(metadata ?? [:]) { _, new in new }.mapValues { "\($0)" }
            recorder.record(Line(level: level, message: "\(message)", metadata: fields))
        }
    }
}
