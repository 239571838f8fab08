import Foundation
import MeshDaemon

/// `mesh-bench store`: commit rates of the durable store on this machine's disk.
///
/// Prints single-item enqueue+ack (one commit each, so one fsync each with synchronous=FULL),
/// group-committed batches, inbox receive+deliver+ack, the raw fsync rate of the same folder
/// for scale, and the database size.
enum StoreBenchmark {
    struct Settings {
        var directory: String?
        var synchronous: DeliveryStoreOptions.Synchronous = .full
        var singleItems = 5_000
        var batchItems = 200_000
        var batchSize = 100
        var payloadBytes = 128
        var senders = 64
    }

    static func run(arguments: [String]) {
        guard let settings = parse(arguments) else {
            print("""
                usage: mesh-bench store [--dir PATH] [--sync full|normal] [--single N] [--items N] [--batch N] [--payload BYTES]
                  --dir      folder for the database (default: a fresh folder under the temporary directory)
                  --sync     synchronous mode (default full)
                  --single   messages for the one-commit-per-message runs (default 5000)
                  --items    items for the group-commit runs (default 200000)
                  --batch    items per transaction in group-commit runs (default 100)
                  --payload  payload bytes per item (default 128)
                  --senders  concurrent senders for the StoreGroupCommitter runs (default 64)
                """)
            exit(2)
        }
        do {
            try measure(settings)
        } catch {
            FileHandle.standardError.write(Data("mesh-bench store: \(error)\n".utf8))
            exit(1)
        }
    }

    private static func parse(_ arguments: [String]) -> Settings? {
        var settings = Settings()
        var iterator = arguments.makeIterator()
        while let flag = iterator.next() {
            guard let value = iterator.next() else { return nil }
            switch flag {
            case "--dir": settings.directory = value
            case "--sync": guard let mode = DeliveryStoreOptions.Synchronous(rawValue: value) else { return nil }
                settings.synchronous = mode
            case "--single": guard let n = Int(value), n > 0 else { return nil }; settings.singleItems = n
            case "--items": guard let n = Int(value), n > 0 else { return nil }; settings.batchItems = n
            case "--batch": guard let n = Int(value), n > 0 else { return nil }; settings.batchSize = n
            case "--payload": guard let n = Int(value), n >= 0 else { return nil }; settings.payloadBytes = n
            case "--senders": guard let n = Int(value), n > 0 else { return nil }; settings.senders = n
            default: return nil
            }
        }
        return settings
    }

    private static func measure(_ settings: Settings) throws {
        let folder = URL(fileURLWithPath: settings.directory ?? FileManager.default.temporaryDirectory.path)
            .appendingPathComponent("mesh-bench-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("store.sqlite").path
        let options = DeliveryStoreOptions(synchronous: settings.synchronous, maxOutboxItemsPerPeer: 10_000_000,
                                           maxOutboxBytesPerPeer: 1 << 40, maxOutboxItemsTotal: 10_000_000,
                                           maxOutboxBytesTotal: 1 << 40, maxInboxItems: 10_000_000, maxInboxBytes: 1 << 40)
        let store = try DeliveryStore.open(path: path, options: options)
        defer { store.close() }
        let payload = [UInt8](repeating: 0x5A, count: settings.payloadBytes)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        func item() -> OutboxItem { OutboxItem(eventID: UUID(), featureID: "bench", kind: 1, payload: payload, createdAt: now) }
        func received(_ n: Int) -> InboxItem {
            InboxItem(eventID: UUID(), featureID: "bench", kind: 1, senderSequence: UInt64(n), payload: payload)
        }

        print("store benchmark: \(path)")
        print("  synchronous=\(settings.synchronous.rawValue), payload \(settings.payloadBytes) B, batch \(settings.batchSize)")
        print(String(format: "  raw write+fdatasync of 4 KiB in this folder:  %10.0f /s", fsyncRate(folder: folder)))

        var seconds = try timed {
            for _ in 0..<settings.singleItems { try store.outbox.enqueue(peer: "p1", item: item()) }
        }
        report("outbox enqueue, 1 item per commit", settings.singleItems, seconds, unit: "commits/s")
        try store.outbox.acknowledge(peer: "p1", upTo: .max >> 1)

        seconds = try timed {
            for _ in 0..<settings.singleItems {
                let receipt = try store.outbox.enqueue(peer: "p2", item: item())
                try store.outbox.acknowledge(peer: "p2", upTo: receipt.sequence)
            }
        }
        report("outbox enqueue+ack, 2 commits per msg", settings.singleItems, seconds, unit: "msgs/s")

        let batches = max(1, settings.batchItems / settings.batchSize)
        seconds = try timed {
            for _ in 0..<batches {
                let receipts = try store.outbox.enqueue(peer: "p3", items: (0..<settings.batchSize).map { _ in item() })
                try store.outbox.acknowledge(peer: "p3", upTo: receipts.last?.sequence ?? 0)
            }
        }
        report("outbox enqueue+ack, group commit", batches * settings.batchSize, seconds, unit: "items/s")

        seconds = try timed {
            for n in 0..<settings.singleItems {
                let receipts = try store.inbox.receive(from: "p4", items: [received(n)], at: now)
                if case .stored(let id) = receipts[0] { try store.inbox.acknowledge(ids: [id]) }
            }
        }
        report("inbox receive+ack, 1 item per commit", settings.singleItems, seconds, unit: "msgs/s")

        seconds = try timed {
            for b in 0..<batches {
                let receipts = try store.inbox.receive(from: "p5", items: (0..<settings.batchSize).map { received(b * settings.batchSize + $0) }, at: now)
                let ids = receipts.compactMap { if case .stored(let id) = $0 { id } else { nil } }
                try store.inbox.markDelivered(ids: ids)
                try store.inbox.acknowledge(ids: ids)
            }
        }
        report("inbox receive+deliver+ack, group commit", batches * settings.batchSize, seconds, unit: "items/s")

        // Every message individually durable before its call returns, commits shared by concurrent callers.
        let committer = StoreGroupCommitter(store: store)
        let concurrentItems = max(settings.senders, settings.batchItems / 4)
        seconds = try concurrently(settings.senders, concurrentItems) { _ in
            _ = try await committer.enqueue(peer: "p6", item: OutboxItem(eventID: UUID(), featureID: "bench", kind: 1,
                                                                         payload: payload, createdAt: now))
        }
        report("outbox enqueue, \(settings.senders) senders, group commit", concurrentItems, seconds, unit: "msgs/s")
        seconds = try concurrently(settings.senders, concurrentItems) { n in
            _ = try await committer.receive(from: "p7", item: InboxItem(eventID: UUID(), featureID: "bench", kind: 1,
                                                                        senderSequence: UInt64(n), payload: payload), at: now)
        }
        report("inbox receive, \(settings.senders) senders, group commit", concurrentItems, seconds, unit: "msgs/s")
        committer.shutdown()

        let wal = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
        let counts = try store.counts()
        print("  database: \(try store.databaseSize() / 1024) KiB + WAL \(wal / 1024) KiB; " +
              "\(counts.outbox.items) queued, \(counts.seenEventIDs) event IDs remembered")
    }

    /// Runs `body(0..<total)` from `senders` concurrent tasks; returns the elapsed seconds.
    private static func concurrently(_ senders: Int, _ total: Int,
                                     _ body: @escaping @Sendable (Int) async throws -> Void) throws -> Double {
        let failure = FailureBox()
        let done = DispatchSemaphore(value: 0)
        let start = ContinuousClock.now
        Task {
            do {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for sender in 0..<senders {
                        group.addTask { for n in stride(from: sender, to: total, by: senders) { try await body(n) } }
                    }
                    try await group.waitForAll()
                }
            } catch {
                failure.record(error)
            }
            done.signal()
        }
        done.wait()
        if let error = failure.error { throw error }
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// The first error of a concurrent run.
    private final class FailureBox: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: (any Error)?
        var error: (any Error)? { lock.lock(); defer { lock.unlock() }; return stored }
        func record(_ error: any Error) { lock.lock(); stored = stored ?? error; lock.unlock() }
    }

    private static func timed(_ body: () throws -> Void) throws -> Double {
        let start = ContinuousClock.now
        try body()
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    private static func report(_ label: String, _ count: Int, _ seconds: Double, unit: String) {
        let padded = label.padding(toLength: 42, withPad: " ", startingAt: 0)
        print(String(format: "  %@ %10.0f %@  (%d in %.2f s)", padded, Double(count) / seconds, unit, count, seconds))
    }

    /// Rate of 4 KiB write + fdatasync in `folder`: the disk's floor for one durable commit.
    private static func fsyncRate(folder: URL) -> Double {
        let path = folder.appendingPathComponent("fsync-probe").path
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { return 0 }
        defer { close(fd); unlink(path) }
        let block = [UInt8](repeating: 1, count: 4096)
        var count = 0
        let start = ContinuousClock.now
        while ContinuousClock.now - start < .seconds(1) && count < 1_000_000 {
            _ = block.withUnsafeBytes { pwrite(fd, $0.baseAddress, 4096, off_t(count % 256) * 4096) }
            fdatasync(fd)
            count += 1
        }
        let elapsed = ContinuousClock.now - start
        return Double(count) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
}
