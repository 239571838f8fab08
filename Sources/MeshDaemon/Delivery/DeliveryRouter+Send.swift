import Foundation
import Logging
import MeshCrypto
import MeshCore
import SessionMesh

/// The send operation (realtime: datagram + ack, falling back to the outbox; reliable) and
/// `meshctl queue`: the work is the sender's (`DeliverySender`).
extension DeliveryRouter {
    /// Sends an envelope (`encoded` with `SessionWireCodec`) to `target` (nil/empty = every paired
    /// device). `mode` is the local API mode byte: 1 realtime, 2 reliable, 5 acknowledgement.
    ///
    /// Reliable returns once the item is durably in the outbox of every target, or throws
    /// `queue-full` (nothing queued for any target is lost). `owner`: the local uid whose app
    /// sends (the local API passes the connection's); its outbox rows count toward that uid's
    /// share (`uid_max_outbox_*`). Nil (tests, the simulator, the daemon) counts toward none.
    public func send(_ envelope: AnySessionSyncEnvelope, encoded: [UInt8], mode: UInt8,
                     to target: String?, owner: UInt32? = nil) async throws -> DeliverySendOutcome {
        try await send(metadata: envelope.metadata, encoded: encoded, mode: mode, to: target, owner: owner)
    }

    /// `send(_:encoded:mode:to:)` with only the envelope's metadata (all the router reads of it
    /// besides the encoded bytes), as the local API has it.
    public func send(metadata: SessionSyncMetadata, encoded: [UInt8], mode: UInt8,
                     to target: String?, owner: UInt32? = nil) async throws -> DeliverySendOutcome {
        let peers = try await targets(target)
        return try await sender.send(self, metadata: metadata, encoded: encoded, mode: mode, to: peers, owner: owner)
    }

    /// A non-reliable send done at once, without suspending, when the target is known without
    /// asking the node (nil/empty/"all", or a full device ID): the local API's fast path, run
    /// on the router's loop. Nil: take the asynchronous `send` (same outcome, just slower).
    ///
    /// `atOnce`: a datagram that nothing queued in this loop turn waits before leaves now,
    /// instead of at the end of the turn (the caller knows no other send follows at once).
    func sendImmediately(_ metadata: SessionSyncMetadata, encoded: [UInt8], mode: UInt8,
                         to target: String?, atOnce: Bool = false, owner: UInt32? = nil) -> DeliverySendOutcome? {
        sender.sendImmediately(self, metadata, encoded: encoded, mode: mode, to: target, atOnce: atOnce, owner: owner)
    }

    /// A reliable send started at once, without a task, when the target is known without asking
    /// the node (as `sendImmediately`): `reply` runs on the router's loop once the item is
    /// durable for every target (`queued`), or with the error `send` would throw. False: take
    /// the asynchronous `send` (same outcome), also when no device is paired. `reply` never runs
    /// before this returns. Must be called on the router's loop.
    func enqueueReliableNow(_ metadata: SessionSyncMetadata, encoded: [UInt8], to target: String?, owner: UInt32? = nil,
                            reply: @escaping (Result<DeliverySendOutcome, MeshError>) -> Void) -> Bool {
        sender.enqueueReliableNow(self, metadata, encoded: encoded, to: target, owner: owner, reply: reply)
    }

    /// Sends the realtime datagrams this loop turn's sends queued (packed per peer) now: the
    /// local API calls it when a read burst is done.
    func flushRealtimeNow() {
        sender.flushRealtimeNow(self)
    }

    /// Outstanding transfers for `meshctl queue`, with attempts of this run added.
    public func queue() async throws -> [(summary: OutboxSummary, attempts: Int, ageSeconds: Double)] {
        try await sender.queue(self)
    }

    /// Cancels one outstanding transfer; throws `not-found` when no such item is queued, or
    /// when `permits` is given and does not accept the item's feature.
    public func cancelQueued(id: Int64, permitting permits: (@Sendable (String) -> Bool)? = nil) async throws {
        try await sender.outboxRows.cancel(id: id, permitting: permits)
    }

    /// Counts a store failure and logs it (a full disk fails every write: one line per 10 s,
    /// with how many were held back).
    func noteStoreError(_ error: any Error, _ message: Logger.Message) {
        counters.storeErrors &+= 1
        guard let suppressed = storeErrorWarning.admit(now: now()) else { return }
        logger.error(message, metadata: ["error": "\(error)", "suppressed": "\(suppressed)"])
    }
}
