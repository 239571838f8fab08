import Foundation
import MeshLocalAPI
import SessionMesh

/// The mutable part of a `DaemonSessionSyncTransport`, behind its lock.
struct TransportState: Sendable {
    enum Phase: Sendable {
        case idle
        case starting
        case attached(MeshClient)
        case stopped
    }

    var phase: Phase = .idle
    var pending: PendingDeliveryQueue<PendingEnvelope, PendingSnapshot>
    var waiters: [CheckedContinuation<MeshClient, any Error>] = []
    var localDeviceID: String?
    /// Inbox ids of envelopes held for the first `receiveEnvelopes()` stream, by event id.
    var unackedInbox: [UUID: UInt64] = [:]
    var snapshotCache = PeerSnapshotCache()
    var ackQueue: [UInt64] = []
    var ackFlushing = false
    var client: MeshClient?
    /// The transport's running tasks (event pump with its reconnect loop, ack flusher), by id:
    /// `stop()` cancels and awaits them, and none starts once the phase is `stopped`.
    var tasks: [UInt64: Task<Void, Never>] = [:]
    var nextTaskID: UInt64 = 0
}

extension DaemonSessionSyncTransport {
    /// Connects to the daemon, attaches the features, primes the snapshot cache from the
    /// daemon's inbound slots and sends what waited, in arrival order. Throws `MeshClientError`
    /// when the daemon cannot be reached, and `transport-busy` when already started or stopped.
    /// After the connection ended the transport reconnects by itself (`reconnectPolicy`); with
    /// no policy, `start()` may be called again once it is detached.
    public func start() async throws {
        let mayStart: Bool = state.withLock { state in
            switch state.phase {
            case .idle: state.phase = .starting; return true
            case .starting, .attached, .stopped: return false
            }
        }
        guard mayStart else {
            throw MeshClientError(kind: .invalidArgument, code: "transport-busy",
                                  message: "the transport is already started or was stopped; create a new one")
        }
        do {
            try await connectAndAttach()
        } catch {
            giveUpStarting(error)
            throw error
        }
    }

    /// Starting failed for good: the transport is detached again (unless stopped meanwhile) and
    /// the reliable sends waiting for the attach fail with `error`.
    private func giveUpStarting(_ error: any Error) {
        let waiters: [CheckedContinuation<MeshClient, any Error>] = state.withLock { state in
            if case .starting = state.phase { state.phase = .idle }
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(throwing: error) }
    }

    /// One connection attempt: connect, attach, prime the cache, drain the buffer. On failure
    /// the half-made connection is closed and the phase left as it was (`starting`).
    func connectAndAttach() async throws {
        var opened: MeshClient?
        do {
            let client = try await MeshClient.connect(socketPath: socketPath, eventBufferLimits: eventBufferLimits)
            opened = client
            let stopped: Bool = state.withLock { state in
                if case .stopped = state.phase { return true }
                state.client = client
                return false
            }
            if stopped { throw Self.stoppedError }
            let attachment = try await client.attach(features: features, sessionID: sessionID, app: localPeer.id)
            state.withLock { $0.localDeviceID = attachment.localDeviceID }
            for feature in features {
                if let latest = try await client.latestSnapshot(featureID: feature, sessionID: sessionID) {
                    state.withLock { _ = $0.snapshotCache.accept(peer: latest.peer, snapshot: latest.snapshot) }
                }
            }
            let events = attachment.events
            // Stopped meanwhile: no pump starts, and the connection is closed below.
            guard spawn({ await self.pump(events, client: client) }) else { throw Self.stoppedError }
            try await drainPending(client, peers: Set(attachment.peers.map(\.deviceID)))
            acknowledge([])
        } catch {
            state.withLock { state in
                if let client = state.client, client === opened { state.client = nil }
            }
            await opened?.close()
            throw error
        }
    }

    /// Detaches for good: closes the connection, fails waiting sends, ends every stream, and
    /// cancels and awaits the transport's tasks (event pump, reconnect backoff, acks). When it
    /// returns, nothing of the transport runs any more and nothing more is delivered.
    public func stop() async {
        let (client, waiters): (MeshClient?, [CheckedContinuation<MeshClient, any Error>]) = state.withLock { state in
            state.phase = .stopped
            defer { state.waiters.removeAll(); state.client = nil }
            return (state.client, state.waiters)
        }
        for waiter in waiters { waiter.resume(throwing: Self.stoppedError) }
        await client?.close()
        // Ended streams also release a pump waiting for a full subscriber to read.
        envelopes.finish()
        snapshots.finish()
        requests.finish()
        reachability.finish()
        events.finish()
        await stopTasks()
    }

    static let stoppedError = MeshClientError(kind: .connectionClosed, code: "transport-stopped",
                                              message: "the transport was stopped before the send could reach meshd")

    /// Maps an envelope's mode onto what `send` accepts.
    static func envelopeMode(_ mode: SessionDeliveryMode) -> SessionDeliveryMode {
        switch mode {
        case .realtimeBestEffort, .reliableEventually, .acknowledgement: mode
        case .latestSnapshot: .reliableEventually
        case .snapshotRequest: .acknowledgement
        }
    }

    /// The client once attached; waits for `start()` to finish.
    func attachedClient() async throws -> MeshClient {
        try await withCheckedThrowingContinuation { continuation in
            let ready: Result<MeshClient, any Error>? = state.withLock { state in
                switch state.phase {
                case .attached(let client): return .success(client)
                case .stopped: return .failure(Self.stoppedError)
                case .idle, .starting:
                    state.waiters.append(continuation)
                    return nil
                }
            }
            if let ready { continuation.resume(with: ready) }
        }
    }

    /// Routes the attachment's events to the transport's streams until the connection ends.
    /// Waits while a subscriber's stream is full, so the client stops reading the socket.
    private func pump(_ stream: AsyncStream<MeshClientEvent>, client: MeshClient) async {
        for await event in stream {
            switch event {
            case .envelope(let received):
                let eventID = received.envelope.metadata.eventID
                if received.inboxID != 0 { state.withLock { $0.unackedInbox[eventID] = received.inboxID } }
                if await envelopes.yield(received.envelope), received.inboxID != 0,
                   let id = state.withLock({ $0.unackedInbox.removeValue(forKey: eventID) }) {
                    acknowledge([id])
                }
            case .snapshot(let received):
                state.withLock { _ = $0.snapshotCache.accept(peer: received.from, snapshot: received.snapshot) }
                await snapshots.yield(received.snapshot)
            case .snapshotRequest(let received):
                await requests.yield(received.request)
            case .reachability(let change):
                await reachability.yield(Self.reachability(change))
            case .anchor, .session, .watermark, .eventsDropped, .undecodable:
                break
            }
            await events.yield(event)
        }
        // The connection ended: buffer again, and reconnect when the policy says so.
        let reconnect: Bool = state.withLock { state in
            guard case .attached(let attached) = state.phase, attached === client else { return false }
            state.client = nil
            guard reconnectPolicy != nil else {
                state.phase = .idle
                return false
            }
            state.phase = .starting
            return true
        }
        await client.close()
        if reconnect { await reconnectLoop() }
    }

    /// Retries `connectAndAttach()` with jittered exponential backoff, waited on `clock`, until
    /// it succeeds, the transport is stopped (which cancels the wait), or the policy's attempts
    /// are spent (then waiting reliable sends fail with the last error and the transport is
    /// detached; `start()` may be called again).
    private func reconnectLoop() async {
        guard let policy = reconnectPolicy else { return }
        var delay = max(0.001, policy.initialDelay)
        var attempt = 0
        var generator = SystemRandomNumberGenerator()
        while true {
            attempt += 1
            let jittered = delay * Double.random(in: 0.8...1.2, using: &generator)
            do {
                try await clock.sleep(for: .seconds(jittered))
            } catch {
                return
            }
            if isStopped { return }
            do {
                try await connectAndAttach()
                return
            } catch {
                if isStopped { return }
                if let limit = policy.maximumAttempts, attempt >= limit {
                    giveUpStarting(error)
                    return
                }
                delay = min(delay * 2, max(policy.maximumDelay, policy.initialDelay))
            }
        }
    }

    private var isStopped: Bool {
        state.withLock { if case .stopped = $0.phase { true } else { false } }
    }

    /// Acks inbox ids in batches, one `inbox.ack` in flight at a time (one of the transport's
    /// tasks).
    func acknowledge(_ ids: [UInt64]) {
        state.withLock { state in
            state.ackQueue.append(contentsOf: ids)
            guard !state.ackQueue.isEmpty, !state.ackFlushing, let client = state.client else { return }
            state.ackFlushing = track(&state) { await self.flushAcks(client) }
        }
    }

    /// Sends the queued acks until the queue stays empty or the transport stops.
    private func flushAcks(_ client: MeshClient) async {
        while true {
            let batch: [UInt64] = state.withLock { state in
                let batch = Task.isCancelled ? [] : state.ackQueue
                state.ackQueue.removeAll()
                if batch.isEmpty { state.ackFlushing = false }
                return batch
            }
            if batch.isEmpty { return }
            // A failed ack (connection gone) is harmless: the daemon redelivers the item on
            // the next attach, marked as a redelivery, and the engine dedups it.
            _ = try? await client.ackInbox(batch)
        }
    }

    /// The transport protocol's form of a reachability event.
    static func reachability(_ event: MeshReachabilityEvent) -> SessionPeerReachability {
        let reason: SessionPeerReachability.Reason = switch event.reason {
        case .channelActive: .channelActivated
        case .channelDown: .channelClosed
        case .leaseExpired: .leaseExpired
        case .appAttached, .appDetached: .appAttachmentChanged
        case .deviceAdded: .deviceAdded
        case .deviceRemoved: .deviceRemoved
        }
        let peer = SessionPeer(id: event.peer, deviceClass: .unknown, appInstanceID: event.peer, topology: .localNetwork)
        return SessionPeerReachability(peer: peer, isReachable: event.reachable, reason: reason, featureID: event.featureID)
    }
}
