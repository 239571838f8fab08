#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import MeshDaemon
import Testing

/// The store on a real full disk (docs/STORE.md, "A WAL larger than the reserve"): a 3 MiB tmpfs
/// in a private mount namespace. SQLite resolves `/proc/PID/root` links, so a store in this
/// process cannot reach a tmpfs of another namespace: the test runs this test binary again inside
/// one (`unshare` + `mount`; root needed), with the tmpfs in `MESH_FULL_DISK_DIR`, and checks
/// what that run reports. Bounded: the inner run is killed after 120 s.
///
/// B's pattern in the process test: items arrive in batches (`storingWhatFits`) until the disk is
/// full, then an app takes 5 at a time (hand-out record, ack) while the sender's retries refill
/// every byte the acks free.
@Suite("Store on a full disk", .enabled(if: TmpfsNamespace.canRun))
struct StoreFullDiskTests {
    @Test func anAppDrainsAFullInboxWhileTheSenderRefillsIt() throws {
        guard let dir = ProcessInfo.processInfo.environment["MESH_FULL_DISK_DIR"] else {
            try runInsideATmpfs(test: "StoreFullDiskTests/anAppDrainsAFullInboxWhileTheSenderRefillsIt")
            return
        }
        let store = try DeliveryStore.open(path: dir + "/delivery.sqlite")
        defer { store.close() }
        let filler = [UInt8](repeating: 0x79, count: 3_000)
        var next = 1
        func disk() -> String {
            var v = statvfs()
            _ = statvfs(dir, &v)
            let files = ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).sorted().map { name in
                "\(name)=\(((try? FileManager.default.attributesOfItem(atPath: dir + "/" + name))?[.size] as? Int) ?? -1)"
            }
            return "free \(Int(v.f_bavail) * Int(v.f_frsize)) \(files)"
        }
        /// Receives batches of 30 until `count` items are stored or the disk refuses.
        func receive(upTo count: Int) -> Int {
            var stored = 0
            while stored < count {
                let batch = (0..<30).map {
                    InboxItem(eventID: UUID(), featureID: "demo", kind: 2, senderSequence: UInt64(next + $0), payload: filler)
                }
                guard let receipts = try? store.inbox.receive(from: "A", items: batch, at: Date(), storingWhatFits: true),
                      !receipts.isEmpty else { break }
                next += receipts.count
                stored += receipts.count
            }
            return stored
        }
        let filled = receive(upTo: 2_000)
        print("full-disk store figure: \(filled) items stored before the disk was full; \(disk())")
        #expect(filled > 0 && filled < 2_000, "the disk fills up")
        var delivered = 0, recordFailures = 0, ackFailures = 0
        for _ in 0..<400 {
            let pending = try store.inbox.pending(featureID: "demo", limit: 5)
            if pending.isEmpty { break }
            do { try store.inbox.markDelivered(ids: pending.map(\.id)) } catch { recordFailures += 1; _ = receive(upTo: 3); continue }
            do { delivered += try store.inbox.acknowledge(ids: pending.map(\.id)) } catch { ackFailures += 1 }
            _ = receive(upTo: 6)
        }
        print("full-disk store figure: delivered \(delivered), hand-out records failed \(recordFailures), acks failed "
              + "\(ackFailures), reserve \(store.spaceReserve()); \(disk())")
        #expect(recordFailures == 0 && ackFailures == 0)
        #expect(delivered == 2_000, "the app keeps draining the inbox")
    }

    /// Runs `test` of this binary in a private mount namespace on a fresh 3 MiB tmpfs and
    /// expects it to pass.
    private func runInsideATmpfs(test: String) throws {
        let mountPoint = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: mountPoint) }
        let process = Process()
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        process.arguments = ["--mount", "--propagation", "private", "/bin/sh", "-c",
                             "mount -t tmpfs -o size=3m,mode=0700 tmpfs \"$0\" && MESH_FULL_DISK_DIR=\"$0\" exec \"$1\" "
                                 + "--testing-library swift-testing --filter \"$2\"",
                             mountPoint, CommandLine.arguments[0], test]
        process.standardOutput = output
        process.standardError = output
        try process.run()
        // The child's end of the pipe stays open until it exits: read to the end, bounded.
        let text = PipeReader.readToEnd(output.fileHandleForReading, timeout: 120)
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        let report = String(decoding: text, as: UTF8.self)
        for line in report.split(separator: "\n") where line.contains("full-disk store figure") { print(line) }
        #expect(process.terminationStatus == 0 && report.contains("passed"), "inside the tmpfs: \(report.suffix(3_000))")
    }
}
