import Foundation
import MeshLocalAPI
import NIOCore
import SessionMesh
@testable import SessionMeshClient
import Testing

/// How `DaemonSessionSyncTransport` sends its pre-attach buffer once attached: runs of one mode
/// and target as batches, in arrival order, stopping at the first failure.
@Suite("DaemonSessionSyncTransport replay")
struct DaemonTransportReplayTests {
    static let me = SessionPeer(id: "app-a", deviceClass: .desktop, appInstanceID: "1")
    /// A full device ID the scripted daemon's attach reply lists.
    static let peer = SessionPeer(id: "PEERDEV-7654321", deviceClass: .unknown, appInstanceID: "x")
    /// A short ID of it: the daemon would resolve it asynchronously.
    static let shortPeer = SessionPeer(id: "PEERDEV", deviceClass: .unknown, appInstanceID: "x")

    /// A daemon that answers `send` requests only in groups: nothing until the next group's size
    /// has arrived, then all of them (so a replay that waits for each reply before the next send
    /// gets stuck at a group of more than one). Sends with a sequence in `failing` get
    /// `unknown-peer`. Everything else as `StandardResponder`.
    final class GroupedSends: @unchecked Sendable {
        private let lock = NSLock()
        private var groups: [Int]
        private var held: [LocalAPIFrame] = []
        private let failing: Set<UInt64>

        init(groups: [Int], failing: Set<UInt64> = []) {
            self.groups = groups
            self.failing = failing
        }

        func respond(_ request: LocalAPIFrame) -> [LocalAPIFrame] {
            guard request.operation == .send else { return StandardResponder()(request) }
            let release: [LocalAPIFrame] = lock.withLock {
                guard let size = groups.first else { return [request] }
                held.append(request)
                guard held.count == size else { return [] }
                groups.removeFirst()
                defer { held = [] }
                return held
            }
            return release.flatMap { frame -> [LocalAPIFrame] in
                let sequence = (try? MeshSendRequest.decode(frame.body))?.envelope.metadata.sequence ?? 0
                return failing.contains(sequence) ? [.error(to: frame, code: "unknown-peer", message: "no such device")]
                                                  : StandardResponder()(frame)
            }
        }
    }

    /// Runs `start()` until it finishes; nil (the transport then stopped) when it made no progress
    /// for `seconds`: the daemon got no new request meanwhile (a replay waiting for a reply the
    /// daemon holds back makes none). A deadline on progress, so a loaded machine only slows it.
    static func start(_ transport: DaemonSessionSyncTransport, daemon: FakeDaemon,
                      stalledFor seconds: Double) async -> Result<Void, any Error>? {
        let outcome = Locked<Result<Void, any Error>?>(nil)
        let task = Task {
            do {
                try await transport.start()
                outcome.withLock { $0 = .success(()) }
            } catch {
                outcome.withLock { $0 = .failure(error) }
            }
        }
        if await eventually(stalledFor: seconds, progress: { daemon.requests.count }, { outcome.withLock { $0 != nil } }) {
            return outcome.withLock { $0 }
        }
        await transport.stop()
        await task.value
        return nil
    }

    @Test func runsOfOneModeAndTargetGoAsBatchesInArrivalOrder() async throws {
        // Runs: 3 realtime to all, 2 acks to a full ID, 2 realtime to a short ID (one by one),
        // a snapshot, 2 realtime to all.
        let sends = GroupedSends(groups: [3, 2, 1, 1, 2])
        let daemon = try await FakeDaemon.start(sends.respond)
        defer { Task { await daemon.stop() } }
        let transport = DaemonSessionSyncTransport(socketPath: daemon.socketPath, localPeer: Self.me, features: ["demo"],
                                                   reconnect: nil)
        for sequence in 1...3 { try await transport.send(Fixtures.envelope(sequence: UInt64(sequence)), mode: .realtimeBestEffort, to: nil) }
        for sequence in 4...5 { try await transport.send(Fixtures.envelope(sequence: UInt64(sequence)), mode: .acknowledgement, to: Self.peer) }
        for sequence in 6...7 { try await transport.send(Fixtures.envelope(sequence: UInt64(sequence)), mode: .realtimeBestEffort, to: Self.shortPeer) }
        try await transport.sendSnapshot(Fixtures.snapshot(revision: 1), mode: .latestSnapshot, to: nil)
        for sequence in 8...9 { try await transport.send(Fixtures.envelope(sequence: UInt64(sequence)), mode: .realtimeBestEffort, to: nil) }

        let started = await Self.start(transport, daemon: daemon, stalledFor: 10)
        #expect(started.map { (try? $0.get()) != nil } == true, "start() did not finish: the replay waited for replies one by one")
        #expect(transport.isAttached)
        let data = daemon.requests.filter { $0.operation == .send || $0.operation == .snapshotPublish }
        let order = data.map { frame -> String in
            if frame.operation == .snapshotPublish { return "snapshot" }
            let send = try? MeshSendRequest.decode(frame.body)
            return "\(send?.envelope.metadata.sequence ?? 0)\(send?.target.isEmpty == false ? "@" + (send?.target ?? "") : "")"
        }
        #expect(order == ["1", "2", "3", "4@PEERDEV-7654321", "5@PEERDEV-7654321", "6@PEERDEV", "7@PEERDEV", "snapshot", "8", "9"])
        await transport.stop()
    }

    @Test func theFirstFailureOfABatchStopsTheReplayWithItsError() async throws {
        let sends = GroupedSends(groups: [4], failing: [2, 3])
        let daemon = try await FakeDaemon.start(sends.respond)
        defer { Task { await daemon.stop() } }
        let transport = DaemonSessionSyncTransport(socketPath: daemon.socketPath, localPeer: Self.me, features: ["demo"],
                                                   reconnect: nil)
        for sequence in 1...4 { try await transport.send(Fixtures.envelope(sequence: UInt64(sequence)), mode: .realtimeBestEffort, to: nil) }
        try await transport.sendSnapshot(Fixtures.snapshot(revision: 1), mode: .latestSnapshot, to: nil)

        let started = try #require(await Self.start(transport, daemon: daemon, stalledFor: 10), "start() did not finish")
        guard case .failure(let error) = started else {
            Issue.record("start() succeeded although envelope 2 failed")
            return
        }
        #expect((error as? MeshClientError)?.code == "unknown-peer")
        #expect(!transport.isAttached)
        // Nothing after the failing batch went out (as before: the replay stopped there).
        #expect(!daemon.requests.contains { $0.operation == .snapshotPublish })
        await transport.stop()
    }
}
