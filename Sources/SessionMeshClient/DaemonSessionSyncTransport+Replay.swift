import Foundation
import MeshLocalAPI
import SessionMesh

/// Sending what waited in the pre-attach buffer once attached.
extension DaemonSessionSyncTransport {
    /// Sends everything buffered, in arrival order, until the buffer stays empty; then the
    /// transport counts as attached. `peers`: the full device IDs the attach reply listed.
    ///
    /// Consecutive envelopes of one mode and target go as one batch (`send(envelopes:mode:to:)`:
    /// one write, one wake-up for all the replies) instead of one round trip each; snapshots go
    /// one at a time, between them, where they were buffered. The first failure stops the replay
    /// and is thrown, as before (what is left in the drained buffer is not sent).
    func drainPending(_ client: MeshClient, peers: Set<String>) async throws {
        while true {
            let (items, waiters): ([PendingDeliveryQueue<PendingEnvelope, PendingSnapshot>.Item], [CheckedContinuation<MeshClient, any Error>]) =
                state.withLock { state in
                    if case .stopped = state.phase { return ([], []) }
                    let items = state.pending.drain()
                    guard items.isEmpty else { return (items, []) }
                    state.phase = .attached(client)
                    defer { state.waiters.removeAll() }
                    return ([], state.waiters)
                }
            if items.isEmpty {
                if state.withLock({ if case .stopped = $0.phase { true } else { false } }) { throw Self.stoppedError }
                for waiter in waiters { waiter.resume(returning: client) }
                return
            }
            var index = 0
            while index < items.count {
                switch items[index] {
                case .snapshot(let pending):
                    try await client.publishSnapshot(pending.snapshot, to: pending.target)
                    index += 1
                case .envelope(let first):
                    var run = [first.envelope]
                    index += 1
                    while index < items.count, case .envelope(let next) = items[index], next.mode == first.mode,
                          next.target == first.target {
                        run.append(next.envelope)
                        index += 1
                    }
                    try await replay(run, mode: first.mode, to: first.target, client, peers: peers)
                }
            }
        }
    }

    /// Sends a run of buffered envelopes of one mode and target, in order, and throws the first
    /// failure in that order — the error a one-by-one replay would have stopped at (the run's
    /// later envelopes were written with it and are handled by the daemon regardless).
    ///
    /// One by one instead, each after the previous reply, when the daemon might reorder a batch:
    /// it handles non-reliable sends in arrival order on its immediate path, which takes every
    /// peer (no target) or a full device ID; a short ID is resolved asynchronously. Also when the
    /// batch is refused before anything was written (an envelope that cannot be encoded), so the
    /// envelopes before that one still go out, as before.
    private func replay(_ run: [AnySessionSyncEnvelope], mode: SessionDeliveryMode, to target: String?,
                        _ client: MeshClient, peers: Set<String>) async throws {
        if run.count > 1, target.map({ peers.contains($0) }) ?? true {
            let results: [Result<MeshSendReply, MeshClientError>]?
            do {
                results = try await client.send(envelopes: run, mode: mode, to: target)
            } catch let error as MeshClientError where error.kind == .invalidArgument {
                results = nil    // nothing of the run was written: one by one below
            }
            if let results {
                for result in results { _ = try result.get() }
                return
            }
        }
        for envelope in run { try await client.send(envelope: envelope, mode: mode, to: target) }
    }
}
