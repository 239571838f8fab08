#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshLocalAPI
import SessionMesh
import SessionMeshClient
import Testing

/// A daemon whose file system fills up: its state folder is a 3 MiB tmpfs mounted in a
/// private mount namespace that only that `meshd` enters (`unshare` + `nsenter`; root needed).
@Suite("a full disk under meshd", .serialized,
       .enabled(if: TmpfsNamespace.canRun && ChildProcess.executable("meshd") != nil && ChildProcess.executable("meshctl") != nil,
                "needs root, unshare, nsenter and a built meshd/meshctl"))
struct ProcessDiskFullTests {
    /// B down, A sends reliable items of 3 000 bytes until its disk is full: the send that does
    /// not fit fails with `queue-full` saying the disk is full, the ones before stay queued.
    /// B back: they all arrive, in order, once — and A's outbox drains, which needs deletes on
    /// the full disk (before the space reserve, they failed too, so the queue stayed full for
    /// good and every later send was refused). Then a new send fits again and arrives.
    @Test func deliveredItemsLeaveTheQueueOfAFullDiskAndSendsWorkAgain() async throws {
        let disk = try TmpfsNamespace(size: "3m")
        defer { disk.stop() }
        let pair = try await DaemonPair.start(extraA: disk.stateArguments, launcherA: disk.launcher)
        defer { pair.stopNow() }
        try await pair.b.kill9()

        let client = try await MeshClient.connect(socketPath: pair.a.socketPath)
        let filler = String(repeating: "x", count: 3_000)
        var accepted = 0
        var refusal: MeshClientError?
        for sequence in 1...2_000 {
            do {
                let reply = try await client.send(envelope: ProcessFixtures.envelope(UInt64(sequence), payload: "\(sequence) \(filler)"),
                                                  mode: .reliableEventually)
                #expect(reply.outcome == .queued)
                accepted = sequence
            } catch let error as MeshClientError {
                refusal = error
                break
            }
        }
        let refused = try #require(refusal, "2 000 items of 3 kB fitted on a 3 MiB disk")
        print("disk-full figure: \(accepted) items queued before the disk was full; refusal: \(refused.message)")
        #expect(accepted >= 5, "a 3 MiB disk held only \(accepted) items")
        #expect(refused.code == "queue-full")
        #expect(refused.message.contains("disk full"), "\(refused.message)")
        #expect(try await queuedCount(pair.a) == accepted)

        try await pair.b.restart()
        let watch = try WatchProcess(pair.b, feature: "demo")
        defer { watch.stopNow() }
        let envelopes = try await watch.envelopes(accepted, timeout: 30)
        #expect(envelopes.compactMap { $0["sequence"] as? Int } == Array(1...accepted))
        #expect(envelopes.allSatisfy { ($0["payload"] as? String)?.hasSuffix(filler) == true })

        var remaining = -1
        try? await waitUntil("A's outbox drains on its full disk", timeout: 15) {
            remaining = try await queuedCount(pair.a)
            return remaining == 0
        }
        #expect(remaining == 0, "\(remaining) delivered items stayed in A's outbox")
        let counters = try #require(try await pair.a.status()["counters"] as? [String: Any])
        #expect((counters["store.space_reserve.releases"] as? Int ?? 0) >= 1, "\(counters)")
        #expect(counters["store.space_reserve.held"] as? Int == 1, "the reserve is taken back once the WAL is checkpointed")

        let again = try await client.send(envelope: ProcessFixtures.envelope(UInt64(accepted + 1), payload: "after the full disk"),
                                          mode: .reliableEventually)
        #expect(again.outcome == .sent || again.outcome == .queued)
        let late = try await watch.next(type: "envelope", timeout: 15)
        #expect(late["payload"] as? String == "after the full disk")
        let extra = try? await watch.next(type: "envelope", timeout: 1.5)
        #expect(extra == nil, "nothing arrives twice")
        await client.close()
    }

    /// B's disk fills up with items for an app that is not running: B refuses what does not
    /// fit (A keeps it queued and retries). The app starts: it gets what B stored — recording a
    /// hand-out is itself a write on the full disk — acks it, which frees room, and then the
    /// rest arrives, filling the disk again and again: every item once, in order, while the app
    /// stays attached (a hand-out that could not be recorded is offered again, not left for the
    /// app's next attach), and A's outbox drains. `meshctl watch` reads slower than B hands the
    /// stored items out, so some are shed and offered again: they still come in order.
    @Test func aFullDiskAtTheReceiverDrainsThroughItsAppAndTakesTheRest() async throws {
        let disk = try TmpfsNamespace(size: "3m")
        defer { disk.stop() }
        let pair = try await DaemonPair.start(extraB: disk.stateArguments, launcherB: disk.launcher)
        defer { pair.stopNow() }

        let client = try await MeshClient.connect(socketPath: pair.a.socketPath)
        let filler = String(repeating: "y", count: 3_000)
        let total = 700    // with the WAL bounded by the reserve, 400 items of 3 KB fit on the 3 MiB disk
        for sequence in 1...total {
            let reply = try await client.send(envelope: ProcessFixtures.envelope(UInt64(sequence), payload: "\(sequence) \(filler)"),
                                              mode: .reliableEventually)
            #expect(reply.outcome == .queued || reply.outcome == .sent)
        }
        await client.close()
        var counters: [String: Any] = [:]
        try await waitUntil("B refuses items for lack of room", timeout: 20) {
            counters = try await pair.b.status()["counters"] as? [String: Any] ?? [:]
            return (counters["delivery.inbox.refused"] as? Int ?? 0) > 0
        }
        let stored = counters["delivery.inbox.stored"] as? Int ?? -1
        #expect(stored > 0 && stored < total)

        let watch = try WatchProcess(pair.b, feature: "demo")
        defer { watch.stopNow() }
        let envelopes: [[String: Any]]
        do {
            envelopes = try await watch.envelopes(total, timeout: 120)
        } catch {
            // What each daemon saw, to tell a stall at the receiver from one at the sender.
            let b = try? await pair.b.status()["counters"] as? [String: Any]
            let a = try? await pair.a.status()["counters"] as? [String: Any]
            print("stalled: B's counters \(b?.filter { ($0.value as? Int) != 0 } ?? [:]); A's counters \(a?.filter { ($0.value as? Int) != 0 } ?? [:])")
            throw error
        }
        #expect(envelopes.compactMap { $0["sequence"] as? Int } == Array(1...total))
        #expect(envelopes.allSatisfy { ($0["payload"] as? String)?.hasSuffix(filler) == true })
        let extra = try? await watch.next(type: "envelope", timeout: 1.5)
        #expect(extra == nil, "nothing arrives twice")
        var remaining = -1
        try? await waitUntil("A's outbox drains", timeout: 15) {
            remaining = try await queuedCount(pair.a)
            return remaining == 0
        }
        #expect(remaining == 0, "\(remaining) items stayed in A's outbox")
        counters = try await pair.b.status()["counters"] as? [String: Any] ?? [:]
        print("disk-full figure: B stored \(stored) of \(total) items before its disk was full; refused "
              + "\(counters["delivery.inbox.refused"] ?? "?") items (then dropped \(counters["delivery.inbox.dropped_after_refusal"] ?? "?") "
              + "until A started over), reserve given up "
              + "\(counters["store.space_reserve.releases"] ?? "?") times, hand-outs offered again "
              + "\(counters["delivery.inbox.hand_out_retries"] ?? "?") times; the watch was a slow reader: "
              + "\(counters["api.events.shed"] ?? "?") events shed, \(counters["api.events.held_for_order"] ?? "?") held behind them")
    }

    private func queuedCount(_ daemon: DaemonProcess) async throws -> Int {
        let result = try await daemon.meshctl(["queue", "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any]
        return try #require(object?["items"] as? [Any], "\(result.output)").count
    }
}

/// A process holding a private mount namespace with a tmpfs of `size` on a temporary folder;
/// meshd joins it through `launcher` and keeps its state there (`stateArguments`). The namespace
/// (and the tmpfs) ends with its last process.
final class TmpfsNamespace: @unchecked Sendable {
    /// Root, `unshare` and `nsenter` are there.
    static let canRun = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare")
        && FileManager.default.isExecutableFile(atPath: "/usr/bin/nsenter")

    private let process = Process()
    private let output = Pipe()
    /// Where the tmpfs is mounted (inside the namespace; an empty folder outside).
    let mountPoint: String

    /// `--state-dir` on the tmpfs.
    var stateArguments: [String] { ["--state-dir", mountPoint + "/state"] }

    /// `nsenter` into the namespace, for `ChildProcess`/`DaemonProcess`.
    var launcher: [String] { ["/usr/bin/nsenter", "--target", "\(process.processIdentifier)", "--mount", "--"] }

    init(size: String) throws {
        mountPoint = try TemporaryFolder.make()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        process.arguments = ["--mount", "--propagation", "private", "/bin/sh", "-c",
                             "mount -t tmpfs -o size=\(size),mode=0700 tmpfs \"$0\" && echo ready && exec sleep 600", mountPoint]
        process.standardOutput = output
        process.standardError = output
        do {
            try process.run()
        } catch {
            try? FileManager.default.removeItem(atPath: mountPoint)
            throw error
        }
        let line = PipeReader.read(output.fileHandleForReading, timeout: 10).map { String(decoding: $0, as: UTF8.self) } ?? ""
        guard line.hasPrefix("ready") else {
            stop()
            throw DaemonProcessError("could not mount a tmpfs in a private mount namespace: \(line)")
        }
    }

    /// Ends the holder (after the processes that joined it have stopped) and removes the folder.
    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: mountPoint)
    }
}
