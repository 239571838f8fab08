import Foundation
import MeshCore
import MeshLocalAPI
import SessionMesh

/// `SessionSyncTransport` over the local `meshd`: what a Swift app hands its `SessionSyncEngine`.
///
/// Create it (no I/O), give it to the engine, then `start()` it: it connects, attaches to its
/// features and becomes live. Until then, and whenever it is not attached:
/// - realtime and acknowledgement envelopes and snapshots wait in a `PendingDeliveryQueue`
///   (envelopes FIFO capped at `pendingCapacity`, oldest dropped and counted in
///   `droppedBeforeAttachCount`; snapshots collapsed per feature and target), sent in arrival
///   order once attached (consecutive envelopes of one mode and target as one batch);
/// - reliable envelopes and snapshot requests wait for the attach (they are never dropped); they
///   throw if `start()` fails or `stop()` is called first.
///
/// Mode mapping: `.realtimeBestEffort`, `.reliableEventually` and `.acknowledgement` envelopes go
/// to `send` as they are; an envelope sent as `.latestSnapshot` is sent reliably, one sent as
/// `.snapshotRequest` as an acknowledgement. Every snapshot goes through the daemon's
/// latest-state slot (`snapshot.publish`), whatever its mode.
///
/// Receiving: reliable envelopes are acknowledged to the daemon (`inbox.ack`) once handed to the
/// `receiveEnvelopes()` streams; envelopes that arrive before anyone called
/// `receiveEnvelopes()` are held (not acked) and handed to the first stream. An envelope the
/// daemon marks as a redelivery may repeat one already seen; the engine's `eventID` dedup
/// absorbs it.
///
/// Reconnecting: when the connection to meshd ends (the daemon restarted, its socket closed),
/// the transport goes back to buffering as before `start()` and reconnects by itself with
/// `reconnectPolicy` (jittered exponential backoff), re-attaching and re-priming the snapshot
/// cache; items the app had not acked come again, marked as redeliveries. Pass `nil` to turn
/// this off and call `start()` again yourself. `isAttached` tells which state it is in. The
/// backoff waits on `clock` (real time by default; a test passes a clock it advances itself).
///
/// Stopping: `stop()` closes the connection, ends every stream and cancels and awaits the
/// transport's own tasks (the event pump, a reconnect in progress, the ack flusher): once it
/// returns, nothing of the transport runs any more and nothing more is delivered.
///
/// `latestPeerSnapshot(featureID:)` is synchronous: it reads a cache filled at `start()` from
/// the daemon's persisted inbound slots (`snapshot.latest`, so it works while the peer is off)
/// and kept current by `snapshot` events. Per (peer, feature) a lower revision never replaces a
/// higher one; across peers the most recently accepted snapshot wins. It is nil before
/// `start()` returns, and after a restart of the app until `start()` primes it again.
public final class DaemonSessionSyncTransport: SessionSyncTransport, Sendable {
    /// This device as the engine sees it.
    public let localPeer: SessionPeer
    /// Every mode; payloads up to `maximumPayloadBytes`.
    public let capabilities: SessionTransportCapabilities
    /// The daemon's socket.
    public let socketPath: String
    /// The features attached (at least one).
    public let features: [String]
    /// The session narrowing the attach, if any.
    public let sessionID: UUID?
    /// How the transport reconnects after its connection ended; nil: it does not.
    public let reconnectPolicy: DaemonReconnectPolicy?
    /// What the reconnect backoff waits on.
    let clock: any Clock<Duration>

    /// Payload limit: the local API's 1 MiB frame minus room for metadata.
    public static let maximumPayloadBytes = LocalAPIWireFormat.defaultMaximumBodyLength - 8192

    let state: Locked<TransportState>
    /// How many events each `receive…()` stream, and the attachment's stream, hold before the
    /// transport stops reading from meshd (see `MeshEventBufferLimits`).
    public let eventBufferLimits: MeshEventBufferLimits

    let envelopes: MulticastStream<AnySessionSyncEnvelope>
    let snapshots: MulticastStream<AnySessionSyncSnapshot>
    let requests: MulticastStream<SessionSnapshotRequest>
    let reachability: MulticastStream<SessionPeerReachability>
    let events: MulticastStream<MeshClientEvent>

    /// Creates a transport; nothing happens until `start()`.
    ///
    /// - Parameters:
    ///   - socketPath: the daemon's socket.
    ///   - localPeer: this app install as the engine knows it (its `id` is `sourcePeerID`).
    ///   - features: features to attach (events of other features are not received).
    ///   - sessionID: narrow session-scoped events to one session.
    ///   - pendingCapacity: envelopes held before attach (oldest dropped past it).
    ///   - reconnect: how to come back after the connection to meshd ended; nil: stay detached
    ///     until the app calls `start()` again.
    ///   - eventBufferLimits: events each `receive…()` stream holds unread; while one is full
    ///     the transport stops reading from meshd, which then sheds realtime events.
    ///   - clock: what the reconnect backoff waits on (real time by default).
    public init(socketPath: String, localPeer: SessionPeer, features: [String], sessionID: UUID? = nil,
                pendingCapacity: Int = 200, reconnect: DaemonReconnectPolicy? = DaemonReconnectPolicy(),
                eventBufferLimits: MeshEventBufferLimits = .default, clock: any Clock<Duration> = ContinuousClock()) {
        self.socketPath = socketPath
        self.clock = clock
        self.eventBufferLimits = eventBufferLimits
        self.envelopes = MulticastStream(holdsBacklog: true, limits: eventBufferLimits)
        self.snapshots = MulticastStream(limits: eventBufferLimits)
        self.requests = MulticastStream(limits: eventBufferLimits)
        self.reachability = MulticastStream(limits: eventBufferLimits)
        self.events = MulticastStream(limits: eventBufferLimits)
        self.reconnectPolicy = reconnect
        self.localPeer = localPeer
        self.features = features
        self.sessionID = sessionID
        self.capabilities = SessionTransportCapabilities(
            supportsRealtime: true, supportsDurableQueue: true, supportsLatestStateReplacement: true,
            supportsSnapshotRequests: true, maximumPayloadBytes: Self.maximumPayloadBytes)
        self.state = Locked(TransportState(pending: PendingDeliveryQueue(envelopeCapacity: pendingCapacity)))
    }

    /// Envelopes dropped from the pre-attach buffer because it was full.
    public var droppedBeforeAttachCount: Int { state.withLock { $0.pending.droppedEnvelopeCount } }

    /// True while connected and attached (sends go straight to meshd); false before `start()`,
    /// while reconnecting and after `stop()`.
    public var isAttached: Bool {
        state.withLock { if case .attached = $0.phase { true } else { false } }
    }

    /// The daemon's device ID once attached.
    public var localDeviceID: String? { state.withLock { $0.localDeviceID } }

    // MARK: - SessionSyncTransport

    /// Sends an envelope; see the type's notes for buffering and mode mapping.
    public func send(_ envelope: AnySessionSyncEnvelope, mode: SessionDeliveryMode, to peer: SessionPeer?) async throws {
        let wireMode = Self.envelopeMode(mode)
        let target = peer?.id
        if wireMode == .reliableEventually {
            let client = try await attachedClient()
            try await client.send(envelope: envelope, mode: wireMode, to: target)
            return
        }
        let client: MeshClient? = state.withLock { state in
            if case .attached(let client) = state.phase, state.pending.isEmpty { return client }
            state.pending.enqueue(envelope: PendingEnvelope(envelope: envelope, mode: wireMode, target: target))
            return nil
        }
        if let client { try await client.send(envelope: envelope, mode: wireMode, to: target) }
    }

    /// Publishes a snapshot into the daemon's latest-state slot (buffered before attach).
    public func sendSnapshot(_ snapshot: AnySessionSyncSnapshot, mode: SessionDeliveryMode, to peer: SessionPeer?) async throws {
        let target = peer?.id
        let client: MeshClient? = state.withLock { state in
            if case .attached(let client) = state.phase, state.pending.isEmpty { return client }
            state.pending.enqueue(snapshot: PendingSnapshot(snapshot: snapshot, target: target),
                                  forKey: snapshot.metadata.featureID + "\u{0}" + (target ?? ""))
            return nil
        }
        if let client { try await client.publishSnapshot(snapshot, to: target) }
    }

    /// Asks `peer` (or every peer) for a snapshot of `sessionID`, once per attached feature.
    public func requestSnapshot(sessionID: UUID, from peer: SessionPeer?) async throws {
        let client = try await attachedClient()
        for feature in features {
            try await client.requestSnapshot(sessionID: sessionID, featureID: feature, from: peer?.id)
        }
    }

    /// Reliable envelopes received and not yet handed to a `receiveEnvelopes()` stream (held,
    /// unacknowledged, for the first stream). For tests.
    var heldInboxCount: Int { state.withLock { $0.unackedInbox.count } }

    /// A fresh stream of envelopes from peers (the first one also gets those held before it).
    public func receiveEnvelopes() -> AsyncStream<AnySessionSyncEnvelope> {
        let (stream, backlog) = envelopes.subscribeTakingBacklog()
        let ids = state.withLock { state in backlog.compactMap { state.unackedInbox.removeValue(forKey: $0.metadata.eventID) } }
        if !ids.isEmpty { acknowledge(ids) }
        return stream
    }

    /// A fresh stream of snapshots from peers.
    public func receiveSnapshots() -> AsyncStream<AnySessionSyncSnapshot> { snapshots.subscribe() }

    /// A fresh stream of snapshot requests from peers' apps.
    public func receiveSnapshotRequests() -> AsyncStream<SessionSnapshotRequest> { requests.subscribe() }

    /// A fresh stream of reachability changes (peer-level and feature-level).
    public func reachabilityChanges() -> AsyncStream<SessionPeerReachability> { reachability.subscribe() }

    /// Every event of the attachment as the client library reads it (anchors, session changes,
    /// watermarks, drops), for what the transport protocol does not carry.
    public func receiveEvents() -> AsyncStream<MeshClientEvent> { events.subscribe() }

    /// The cached newest peer snapshot of `featureID`; see the type's notes.
    public func latestPeerSnapshot(featureID: String) -> AnySessionSyncSnapshot? {
        state.withLock { $0.snapshotCache.latest(featureID: featureID) }
    }
}

/// An envelope waiting for the attach.
struct PendingEnvelope: Sendable {
    var envelope: AnySessionSyncEnvelope
    var mode: SessionDeliveryMode
    var target: String?
}

/// A snapshot waiting for the attach.
struct PendingSnapshot: Sendable {
    var snapshot: AnySessionSyncSnapshot
    var target: String?
}
