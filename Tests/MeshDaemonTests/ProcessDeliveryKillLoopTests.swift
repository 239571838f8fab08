#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshLocalAPI
import SessionMesh
import SessionMeshClient
import Testing

/// The crash test of reliable delivery: `kill -9` of either daemon at random moments during a 5 000-message
/// reliable burst (each kill once the sending app has sent a random number of further messages). The receiving app (`meshctl watch --json --reconnect`, which acks what it
/// prints) must get every message, in per-sender order, none twice except those marked as
/// redeliveries. Seeded from MESH_PROPERTY_SEED_BASE (printed).
@Suite("reliable delivery under kill -9", .serialized,
       .enabled(if: ChildProcess.executable("meshd") != nil && ChildProcess.executable("meshctl") != nil,
                "meshd/meshctl are not built (run `swift build` first)"))
struct ProcessDeliveryKillLoopTests {
    static let messages = 5_000
    static let kills = 20
    /// Seconds without progress (no message sent, or none received) after which the burst or
    /// its reading counts as stuck: a restart of a killed daemon on a loaded machine takes a few
    /// seconds; a stuck delivery makes no progress at all. The test's time limit bounds the rest.
    static let stall: Double = 45

    @Test(.timeLimit(.minutes(4)))
    func everyMessageArrivesInOrderThroughTwentyKills() async throws {
        var rng = SeededGenerator(seed: SeededGenerator.seed(for: "everyMessageArrivesInOrderThroughTwentyKills"))
        let started = Date()
        let pair = try await DaemonPair.start()
        defer { pair.stopNow() }
        let watch = try WatchProcess(pair.b, feature: "burst", extra: ["--reconnect", "30"])
        defer { watch.stopNow() }
        try await watch.next(type: "attached", timeout: 10)

        // The kill plan, drawn up front so it reproduces from the seed: the victim, and how many
        // more messages the app sends before the kill.
        let plan: [(victimIsA: Bool, afterMessages: Int)] = (0..<Self.kills).map { _ in
            (Bool.random(using: &rng), Int.random(in: 60...300, using: &rng))
        }
        let envelopes = (1...Self.messages).map { ProcessFixtures.envelope(UInt64($0), feature: "burst", source: "burst-app") }

        // The app's output is read while the burst runs (as a live app would consume it), so the
        // watch keeps up and reattaches after every kill of B instead of stalling on a full pipe.
        let timeline = KillTimeline()
        let reader = Task { try await Self.collect(watch, messages: Self.messages, started: started, timeline: timeline) }
        defer { reader.cancel() }
        let progress = SenderProgress()
        let sender = Task {
            try await Self.send(envelopes, socketPath: pair.a.socketPath, stall: Self.stall, progress: progress)
        }
        var killed: [String] = []
        var target = 0
        for step in plan {
            target += step.afterMessages
            _ = await progress.changed.until(60) { progress.state.sent >= min(target, Self.messages) || progress.state.finished }
            let victim = step.victimIsA ? pair.a : pair.b
            timeline.add("kill -9 \(victim.name)")
            let failuresBefore = progress.state.retried
            try await victim.kill9()
            if step.victimIsA, !progress.state.finished {
                // A stays down until the app has seen it gone (a send failed).
                _ = await progress.changed.until(5) { progress.state.retried > failuresBefore || progress.state.finished }
            }
            try await victim.restart()
            timeline.add("\(victim.name) answers again")
            progress.daemonRestarted()
            killed.append(victim.name)
        }
        let resends = try await sender.value
        timeline.burstSent()
        print("process figure: \(killed.count) kill -9 (\(killed.filter { $0 == "alpha" }.count) of A, \(killed.filter { $0 == "beta" }.count) of B) "
              + "during the burst, \(resends) sends retried, burst sent after \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
        let seen = try await reader.value
        let (seenIDs, firstSeen, redeliveries, unmarkedDuplicates) = (seen.ids, seen.firstSeen, seen.redeliveries, seen.unmarkedDuplicates)
        print("process figure: app got \(seenIDs.count)/\(Self.messages) distinct messages, \(redeliveries) marked redeliveries, "
              + "\(unmarkedDuplicates) unmarked duplicates, \(seen.attaches) attaches, total \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
        for report in seen.duplicateReports.prefix(3) { print("unmarked duplicate, what the app printed in between:\n\(report)") }
        #expect(seenIDs.count == Self.messages, "every message arrives")
        #expect(firstSeen == Array(1...Self.messages), "in per-sender order (first \(firstSeen.first ?? 0), out of order at \(Self.firstDisorder(firstSeen).map(String.init) ?? "none"))")
        // The bug this used to show (about one run in three on a loaded machine): an item acked
        // while a replay ran was handed again from its deferred copy, unmarked. Fixed in the
        // router (acknowledged ids are never handed out again); DeliveryRedeliveryFuzzTests
        // reproduces that interleaving in-process.
        #expect(unmarkedDuplicates == 0, "none twice unless marked as a redelivery")
    }

    /// Sends every envelope reliably, one after the other (so the outbox order is the sequence
    /// order); when the daemon dies mid-send, waits for its restart, reconnects and sends the
    /// same envelope again (same event ID: the receiver dedups). Returns how many sends were retried.
    /// Throws when no message was sent for `stall` seconds (a deadline on progress, not on the
    /// burst's total time, which a loaded machine stretches).
    static func send(_ envelopes: [AnySessionSyncEnvelope], socketPath: String, stall: Double,
                     progress: SenderProgress) async throws -> Int {
        var client: MeshClient?
        var index = 0
        var lastProgress = Date()
        defer { progress.update { $0.finished = true } }
        while index < envelopes.count {
            guard Date().timeIntervalSince(lastProgress) < stall else {
                throw DaemonProcessError("burst stuck: no message sent for \(Int(stall)) s (\(index) sent)")
            }
            let restarts = progress.state.restarts
            do {
                if client == nil { client = try await MeshClient.connect(socketPath: socketPath) }
                try await client?.send(envelope: envelopes[index], mode: .reliableEventually)
                index += 1
                lastProgress = Date()
                progress.update { $0.sent = index }
            } catch let error as MeshClientError where error.kind != .daemon || error.code == "not-running" {
                await client?.close()
                client = nil
                progress.update { $0.retried += 1 }
                // The daemon is down: try again once the test restarted it (bounded).
                _ = await progress.changed.until(10) { progress.state.restarts > restarts }
            }
        }
        await client?.close()
        return progress.state.retried
    }

    /// What the app printed, as the test counts it.
    struct AppOutput {
        var ids = Set<String>()
        var firstSeen: [Int] = []
        var redeliveries = 0
        var unmarkedDuplicates = 0
        var attaches = 0
        var duplicateReports: [String] = []
    }

    /// Reads the watch's lines until every event ID was seen, or no new one came for `stall`
    /// seconds (counted from the later of the last new ID and the last kill or restart: while the
    /// burst runs, the kills pause delivery), or 200 s in all (within the test's time limit).
    static func collect(_ watch: WatchProcess, messages: Int, started: Date, timeline: KillTimeline) async throws -> AppOutput {
        var output = AppOutput()
        var lines: [String] = []
        var firstLine: [String: Int] = [:]
        var lastNew = Date()
        func deadline() -> Date {
            let lastEvent = timeline.events.last.map { Date(timeIntervalSince1970: $0.time) } ?? started
            return min(max(lastNew, lastEvent).addingTimeInterval(stall), started.addingTimeInterval(200))
        }
        while output.ids.count < messages, Date() < deadline(), !Task.isCancelled {
            guard let record = try await watch.next(timeout: min(1, deadline().timeIntervalSinceNow)) else {
                if watch.process.isRunning { continue } else { break }
            }
            lines.append(summary(record))
            if record["type"] as? String == "attached" { output.attaches += 1 }
            guard record["type"] as? String == "envelope", let eventID = record["eventID"] as? String,
                  let sequence = record["sequence"] as? Int else { continue }
            let redelivery = record["redelivery"] as? Bool ?? false
            if redelivery { output.redeliveries += 1 }
            if output.ids.insert(eventID).inserted {
                lastNew = Date()
                output.firstSeen.append(sequence)
                firstLine[eventID] = lines.count - 1
            } else if !redelivery {
                output.unmarkedDuplicates += 1
                output.duplicateReports.append(context(lines, from: firstLine[eventID] ?? 0, timeline: timeline.events))
            }
        }
        return output
    }

    /// One short line per printed record: time, type and the fields that matter here.
    static func summary(_ record: [String: Any]) -> String {
        let time = String(format: "%.3f", record["time"] as? Double ?? 0)
        let type = record["type"] as? String ?? "?"
        guard type == "envelope" else { return "\(time) \(type) \(record["dropped"].map { "dropped \($0)" } ?? "")" }
        return "\(time) envelope seq \(record["sequence"] ?? "?") inbox \(record["inboxID"] ?? "?")"
            + "\((record["redelivery"] as? Bool ?? false) ? " REDELIVERY" : "")"
    }

    /// The printed lines from the first copy of a duplicate to the second (at most 40, the middle
    /// elided), with the kills and restarts that happened meanwhile.
    static func context(_ lines: [String], from first: Int, timeline: [(time: Double, what: String)]) -> String {
        let span = Array(lines[first...])
        let shown = span.count <= 40 ? span : Array(span.prefix(20)) + ["… \(span.count - 40) lines …"] + Array(span.suffix(20))
        let start = Double(span.first?.split(separator: " ").first ?? "") ?? 0
        let end = Double(span.last?.split(separator: " ").first ?? "") ?? 0
        let events = timeline.filter { $0.time >= start - 1 && $0.time <= end }.map { String(format: "%.3f ", $0.time) + $0.what }
        let notable = span.filter { !$0.contains(" envelope ") || $0.contains("REDELIVERY") }.prefix(30)
        return (shown + ["kills meanwhile:"] + events + ["non-envelope or redelivery lines meanwhile:"] + notable)
            .map { "  " + $0 }.joined(separator: "\n")
    }

    static func firstDisorder(_ sequence: [Int]) -> Int? {
        for (index, value) in sequence.enumerated() where value != index + 1 { return index }
        return nil
    }
}

/// When the test killed and restarted which daemon, and when the burst was sent (read by the
/// collecting task while the kill loop writes).
final class KillTimeline: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [(time: Double, what: String)] = []
    private var sentAt: Date?

    func add(_ what: String) { lock.withLock { entries.append((Date().timeIntervalSince1970, what)) } }
    func burstSent() { lock.withLock { sentAt = Date() } }
    var events: [(time: Double, what: String)] { lock.withLock { entries } }
    var burstSentAt: Date? { lock.withLock { sentAt } }
}

/// How far the sending app got, shared with the kill loop, which awaits it.
final class SenderProgress: @unchecked Sendable {
    struct State {
        var sent = 0
        var retried = 0
        var restarts = 0
        var finished = false
    }
    private let lock = NSLock()
    private var current = State()
    let changed = ChangeSignal()

    var state: State { lock.withLock { current } }

    func update(_ change: (inout State) -> Void) {
        lock.withLock { change(&current) }
        changed.notify()
    }

    func daemonRestarted() { update { $0.restarts += 1 } }
}
