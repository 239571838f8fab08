import Foundation
import MeshLocalAPI
import NIOCore
import SessionMesh

extension MeshClient {
    /// Subscribes this connection to `features` (`attach`) and returns the daemon's answer with
    /// the stream of events.
    ///
    /// Pending inbox items of those features arrive right after, as `.envelope` events; ack
    /// each with `ackInbox(_:)` once processed, or it comes again (marked as a redelivery) on the
    /// next attach. Several attaches on one connection add up; each has its own stream.
    public func attach(features: [String], sessionID: UUID? = nil, app: String? = nil) async throws -> MeshAttachment {
        let body = MeshAttachRequest(features: features, sessionID: sessionID, app: app)
        try checked { () throws(LocalAPIErrorBody) in try body.validate() }
        let stream = LocalAPIEventStream(eventBufferLimits)
        // A stream that ends while the connection lives (the attach failed or was cancelled, the
        // reader stopped or let go of it) leaves the handler, so attaching and cancelling again
        // and again does not grow it, and a full stream nobody reads never keeps the socket shut.
        // The callbacks hold the channel, not the client: an app may keep only the attachment.
        let channel = self.channel
        stream.setCallbacks(onRoom: { Self.resumeEvents(on: channel) },
                            onTermination: { [weak stream] in
                                if let stream { Self.forgetEvents(stream, on: channel) }
                            })
        let events = stream.makeStream()
        let reply = try await attachRequest(body, events: stream) { stream.finish() }
        return MeshAttachment(attachmentID: reply.attachmentID, localDeviceID: reply.localDeviceID, peers: reply.peers, events: events)
    }

    /// Sends `attach` with `events` registered for the events that carry its request id, and
    /// reads the reply. When either fails, `abandon` ends `events` before the error is thrown.
    func attachRequest(_ body: MeshAttachRequest, events: LocalAPIEventStream,
                       abandon: () -> Void) async throws -> MeshAttachReply {
        do {
            let frame = try await request(.attach, body: try LocalAPIJSON.encode(body), flags: [], events: events)
            return try decode(MeshAttachReply.self, frame)
        } catch {
            abandon()
            throw error
        }
    }

    /// Sends an envelope (`send`) to `peer` (full or short device ID) or to every paired device.
    ///
    /// `mode`: `.realtimeBestEffort` (datagram now, durable fallback), `.reliableEventually`
    /// (returns once durably in the outbox of every target; `queue-full` when the queue is at its
    /// limit) or `.acknowledgement`. Snapshots go through `publishSnapshot(_:to:)`.
    @discardableResult
    public func send(envelope: AnySessionSyncEnvelope, mode: SessionDeliveryMode, to peer: String? = nil) async throws -> MeshSendReply {
        let reply = try await send(.send, body: try Self.sendBody(envelope, mode: mode, to: peer), flags: .binaryBody)
        return try Self.sendReply(reply).get()
    }

    /// The binary body of a `send` request; `.invalidArgument` when it cannot be sent.
    static func sendBody(_ envelope: AnySessionSyncEnvelope, mode: SessionDeliveryMode, to peer: String?) throws(MeshClientError) -> ByteBuffer {
        try checked { () throws(LocalAPIErrorBody) in try MeshSendRequest(mode: mode, target: peer ?? "", envelope: envelope).encode() }
    }

    /// Publishes a snapshot into the outbound latest-state slot (`snapshot.publish`); pushed to
    /// `peer` (or every paired device) now and on each channel activation. A lower revision than
    /// the slot's is not stored (`stored == false`).
    @discardableResult
    public func publishSnapshot(_ snapshot: AnySessionSyncSnapshot, to peer: String? = nil) async throws -> MeshSnapshotPublishReply {
        let body = try checked { () throws(LocalAPIErrorBody) in try MeshSnapshotPublishRequest(target: peer ?? "", snapshot: snapshot).encode() }
        return try decode(MeshSnapshotPublishReply.self, try await send(.snapshotPublish, body: body, flags: .binaryBody))
    }

    /// Asks `peer` (or every paired device) for a snapshot of a session (`snapshot.request`). The
    /// answer arrives as a `.snapshot` event on an attachment of `featureID`.
    public func requestSnapshot(sessionID: UUID, featureID: String, from peer: String? = nil) async throws {
        _ = try await call(.snapshotRequest, MeshSnapshotAskRequest(sessionID: sessionID, featureID: featureID, peer: peer), as: EmptyBody.self)
    }

    /// The newest snapshot received from `peer` (or from any peer) for a feature, from the
    /// daemon's persisted inbound slot (`snapshot.latest`); nil when there is none. Readable
    /// while the peer is off and after restarts.
    public func latestSnapshot(featureID: String, peer: String? = nil, sessionID: UUID? = nil) async throws -> MeshSnapshotLatestReply? {
        let frame: LocalAPIFrame
        do {
            frame = try await send(.snapshotLatest, body: try LocalAPIJSON.encode(MeshSnapshotLatestRequest(featureID: featureID, peer: peer, sessionID: sessionID)))
        } catch let error as MeshClientError where error.kind == .daemon && error.code == LocalAPIDataError.notFound {
            return nil
        }
        guard frame.flags.contains(.binaryBody) else {
            throw MeshClientError.protocolViolation("snapshot.latest replied without a binary body")
        }
        do {
            return try MeshSnapshotLatestReply.decode(frame.body)
        } catch {
            throw MeshClientError.protocolViolation(error.message)
        }
    }

    /// Sets a session's timer anchor (`anchor.set`), in this device's clock; the daemon forwards
    /// it and peers receive it rewritten into theirs. Returns false when a higher revision was
    /// already stored.
    @discardableResult
    public func setTimerAnchor(_ anchor: SessionTimerAnchor, sessionID: UUID, featureID: String, revision: UInt64) async throws -> Bool {
        let body = MeshAnchorSetRequest(sessionID: sessionID, featureID: featureID, revision: revision, anchor: MeshTimerAnchorBody(anchor))
        try checked { () throws(LocalAPIErrorBody) in try body.anchor.validate(operation: .anchorSet) }
        return try await call(.anchorSet, body, as: MeshAnchorSetReply.self).stored
    }

    /// Adds or updates a session in the replicated directory (`session.announce`).
    public func announceSession(sessionID: UUID, featureID: String, owner: String, status: String = "running") async throws {
        _ = try await call(.sessionAnnounce, MeshSessionAnnounceRequest(sessionID: sessionID, featureID: featureID, owner: owner, status: status),
                           as: EmptyBody.self)
    }

    /// Closes a session (`session.close`): returns only after the closing envelope and closing
    /// snapshot were delivered to the reachable peers (`delivered`) or durably queued for the
    /// others (`queued`). A closed session is never revived by a stale slot.
    @discardableResult
    public func closeSession(sessionID: UUID, featureID: String) async throws -> MeshSessionCloseReply {
        try await call(.sessionClose, MeshSessionCloseRequest(sessionID: sessionID, featureID: featureID), as: MeshSessionCloseReply.self)
    }

    /// The session directory, local and replicated (`sessions`), optionally of one feature.
    public func sessions(featureID: String? = nil) async throws -> [MeshSessionRecord] {
        try await call(.sessions, MeshSessionsRequest(featureID: featureID), as: MeshSessionsReply.self).sessions
    }

    /// Acknowledges inbox items (`inbox.ack`) by the `inboxID`s of their envelope events; the
    /// daemon deletes them. Returns how many were still there. Ids of 0 are skipped; more than
    /// `MeshInboxAckRequest.maximumIDs` ids go in several requests, one after the other.
    @discardableResult
    public func ackInbox(_ ids: [UInt64]) async throws -> Int {
        let ids = ids.filter { $0 != 0 }
        var acknowledged = 0
        for start in stride(from: 0, to: ids.count, by: MeshInboxAckRequest.maximumIDs) {
            let body = MeshInboxAckRequest(ids: Array(ids[start..<min(start + MeshInboxAckRequest.maximumIDs, ids.count)]))
            try checked { () throws(LocalAPIErrorBody) in try body.validate() }
            acknowledged += try await call(.inboxAck, body, as: MeshInboxAckReply.self).acknowledged
        }
        return acknowledged
    }

    /// Outstanding outbound transfers (`queue`), per peer in FIFO order.
    public func queue() async throws -> [MeshQueueItem] {
        try await call(.queue, EmptyBody(), as: MeshQueueReply.self).items
    }

    /// The received items waiting for an app, oldest first (at most 1000; `inbox`). Drop one with
    /// ``ackInbox(_:)``.
    public func inbox() async throws -> [MeshInboxItem] {
        try await call(.inbox, EmptyBody(), as: MeshInboxReply.self).items
    }

    /// Cancels one outstanding transfer by its `MeshQueueItem.id` (`queue.cancel`). Throws the
    /// daemon's `not-found` when it is no longer queued (delivered or cancelled).
    public func cancelQueued(id: UInt64) async throws {
        let body = MeshQueueCancelRequest(id: id)
        try checked { () throws(LocalAPIErrorBody) in try body.validate() }
        _ = try await call(.queueCancel, body, as: EmptyBody.self)
    }

    /// Tells `peer` that this app processed its events of a session up to `sequence`
    /// (`watermark.set`): the delivery watermark, monotonic and separate from reachability.
    public func setWatermark(sessionID: UUID, featureID: String, peer: String, sequence: UInt64) async throws {
        _ = try await call(.watermarkSet, MeshWatermarkBody(sessionID: sessionID, featureID: featureID, peer: peer, sequence: sequence),
                           as: EmptyBody.self)
    }
}

/// Runs a local check or encoding, turning its `LocalAPIErrorBody` into `MeshClientError.invalidArgument`.
func checked<T>(_ body: () throws(LocalAPIErrorBody) -> T) throws(MeshClientError) -> T {
    do {
        return try body()
    } catch {
        throw MeshClientError.invalidArgument(error)
    }
}
