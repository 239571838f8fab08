import Foundation
import Testing
@testable import MeshDaemon

/// kill -9 during enqueues: every enqueue that returned is still there, in order, once.
///
/// The test binary spawns itself running only `storeCrashChild`, which enqueues in a loop
/// (single items and group-committed batches) and prints each success; the parent SIGKILLs it
/// at a random moment, reopens the store and checks it. Seed: `MESH_PROPERTY_SEED_BASE`.
@Suite("DeliveryStore crash safety")
struct StoreCrashTests {
    static let childVariable = "MESH_STORE_CRASH_CHILD"
    static let peer = "crash-peer"
    static let rounds = 6

    @Test func killedWhileEnqueueingLosesNothingConfirmedAndDuplicatesNothing() async throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["MESH_PROPERTY_SEED_BASE"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64(UInt32.max))
        print("StoreCrashTests seed: \(seed) (rerun with MESH_PROPERTY_SEED_BASE=\(seed))")
        var generator = SeededGenerator(seed: seed)
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")

        var nextIndex = 0
        var acknowledgedThrough = -1
        var confirmed = Set<Int>()
        var verified = Set<Int>()  // present after an earlier kill, confirmed or not
        for round in 0..<Self.rounds {
            let output = CrashChildOutput()
            let child = Process()
            child.executableURL = URL(fileURLWithPath: executable)
            child.arguments = ["--testing-library", "swift-testing", "--filter", "storeCrashChild"]
            child.environment = environment.merging([
                Self.childVariable: dir.path(), "MESH_STORE_CRASH_START": String(nextIndex),
                "MESH_STORE_CRASH_SEED": String(seed &+ UInt64(round)),
            ]) { $1 }
            let pipe = Pipe()
            child.standardOutput = pipe
            child.standardError = FileHandle.nullDevice
            try child.run()
            let reading = DispatchGroup()
            reading.enter()
            Thread.detachNewThread {
                let handle = pipe.fileHandleForReading
                while let chunk = PipeReader.read(handle, timeout: 120), !chunk.isEmpty { output.append(chunk) }
                reading.leave()
            }

            // Kill at a random moment: once the child confirmed a random number of enqueues (it
            // goes on enqueueing while the kill is on its way), awaited as its output arrives.
            let target = Int.random(in: 1...400, using: &generator)
            _ = await output.changed.until(60) {
                output.confirmedRanges().reduce(0) { $0 + $1.count } >= target || !child.isRunning
            }
            kill(child.processIdentifier, SIGKILL)
            try await blocking {
                child.waitUntilExit()
                // The reader thread sees end of file once the killed child's pipe closes.
                _ = reading.wait(timeout: .now() + 5)
            }
            #expect(child.terminationReason == .uncaughtSignal, "round \(round): the child ended by itself")

            let ranges = output.confirmedRanges()
            #expect(!ranges.isEmpty, "round \(round): the child confirmed no enqueue")
            for range in ranges { confirmed.formUnion(range) }

            let store = try DeliveryStore.open(path: dir.path(), options: DeliveryStoreOptions(verification: .full))
            #expect(try store.integrityCheck() == ["ok"])
            let entries = try store.outbox.pending(peer: Self.peer, limit: 1_000_000)
            let indices = entries.map { payloadIndex($0.item.payload) }
            #expect(zip(indices, indices.dropFirst()).allSatisfy { $0 < $1 }, "round \(round): out of order or duplicated")
            #expect(zip(entries, entries.dropFirst()).allSatisfy { $0.sequence < $1.sequence })
            let present = Set(indices)
            let lost = confirmed.filter { $0 > acknowledgedThrough && !present.contains($0) }
            #expect(lost.isEmpty, "round \(round): confirmed enqueues lost: \(lost.sorted().prefix(10))")
            // Items committed but not yet confirmed when the kill came: at most the one in-flight batch.
            let lastConfirmed = ranges.map(\.upperBound).max() ?? -1
            let unconfirmed = indices.filter { !confirmed.contains($0) && !verified.contains($0) }
            #expect(unconfirmed.allSatisfy { $0 > lastConfirmed && $0 <= lastConfirmed + 8 },
                    "round \(round): items nobody enqueued: \(unconfirmed.prefix(10))")
            #expect(try store.counts().outbox.items == entries.count)
            verified.formUnion(indices)
            print("StoreCrashTests round \(round): \(ranges.count) confirmed commits, \(entries.count) items queued")

            // Acknowledge a random prefix, as a peer would, so deletes are exercised too.
            if let cut = entries.dropLast(entries.count / 3).last {
                try store.outbox.acknowledge(peer: Self.peer, upTo: cut.sequence)
                acknowledgedThrough = payloadIndex(cut.item.payload)
            }
            nextIndex = (indices.last ?? nextIndex - 1) + 1
            nextIndex = max(nextIndex, (confirmed.max() ?? -1) + 1)
            store.close()
        }
    }

    /// The child side; runs only when spawned by the test above.
    @Test(.enabled(if: ProcessInfo.processInfo.environment[StoreCrashTests.childVariable] != nil))
    func storeCrashChild() throws {
        let environment = ProcessInfo.processInfo.environment
        let path = try #require(environment[Self.childVariable])
        var index = Int(environment["MESH_STORE_CRASH_START"] ?? "0") ?? 0
        var generator = SeededGenerator(seed: UInt64(environment["MESH_STORE_CRASH_SEED"] ?? "1") ?? 1)
        let store = try DeliveryStore.open(path: path)
        let start = ContinuousClock.now
        for _ in 0..<1_000_000 where ContinuousClock.now - start < .seconds(60) {
            let count = Int.random(in: 1...8, using: &generator)
            let items = (index..<index + count).map { makeOutboxItem($0, size: Int.random(in: 8...2_000, using: &generator)) }
            if count == 1 {
                try store.outbox.enqueue(peer: Self.peer, item: items[0])
            } else {
                try store.outbox.enqueue(peer: Self.peer, items: items)
            }
            // One write(2) per line: atomic on a pipe, so a kill never leaves half a line.
            FileHandle.standardOutput.write(Data("MESHCRASH OK \(index) \(index + count - 1)\n".utf8))
            index += count
        }
    }
}

/// Lines the crash child printed, collected from the pipe's reader thread.
final class CrashChildOutput: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()

    /// Notified on every chunk.
    let changed = ChangeSignal()

    func append(_ chunk: Data) {
        lock.lock()
        data.append(chunk)
        lock.unlock()
        changed.notify()
    }

    /// Index ranges whose enqueue returned success in the child.
    func confirmedRanges() -> [ClosedRange<Int>] {
        lock.lock()
        let text = String(decoding: data, as: UTF8.self)
        lock.unlock()
        return text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count == 4, parts[0] == "MESHCRASH", parts[1] == "OK",
                  let first = Int(parts[2]), let last = Int(parts[3]), first <= last else { return nil }
            return first...last
        }
    }
}
