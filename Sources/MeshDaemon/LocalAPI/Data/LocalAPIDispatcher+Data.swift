import Foundation
import MeshLocalAPI
import NIOCore
import SessionMesh

extension LocalAPIDispatcher {
    /// The reply to a data operation, or nil when `request` is a control operation.
    func dataReply(to request: LocalAPIRequest, context: LocalAPIRequestContext) async throws -> ByteBuffer? {
        switch request {
        case .hello, .status, .peers, .pairCreate, .pairWait, .pairCancel, .pairJoin, .unpair, .ping:
            return nil
        default:
            break
        }
        guard let router else { throw MeshError.deliveryUnavailable }
        let uid = context.credentials?.uid
        if let list = featureAllowList {
            for feature in request.features where !list.allows(uid: uid, feature: feature) {
                throw MeshError.featureNotAllowed(feature, uid: uid)
            }
        }
        // Rows and items of features this uid may not use are invisible to it: `sessions` and
        // `queue` leave them out, `queue.cancel` and `inbox.ack` treat them as unknown ids.
        var permits: (@Sendable (String) -> Bool)?
        if let list = featureAllowList { permits = { feature in list.allows(uid: uid, feature: feature) } }
        if let permits, let sessionID = request.namedSession {
            try await Self.checkSessionLane(sessionID, router: router, uid: uid, permits: permits)
        }
        switch request {
        case .attach(let features, let sessionID, let app):
            guard let connection = context.connection, let reservation = context.attach else {
                throw MeshError.invalidArgument("attach needs a socket connection")
            }
            let requestID = context.requestID
            switch reservation {
            case .reserved: break
            case .full: throw MeshError.tooManyAttachments(LocalAPIConnectionState.maximumAttachments)
            case .requestIDInUse:
                throw MeshError.invalidArgument("request id \(requestID) already belongs to an attachment on this connection; "
                                                   + "its events carry that id, so each attach needs an id of its own")
            }
            let sink = connection.makeSink(requestID: requestID)
            let result = await router.attach(features: features, sessionID: sessionID, app: app, sink: sink)
            if !connection.attached(result.attachmentID) { await router.detach(result.attachmentID) }
            return try LocalAPIJSON.encode(MeshAttachReply(
                attachmentID: result.attachmentID, localDeviceID: result.localDeviceID,
                peers: result.peers.map { MeshAttachedPeer(deviceID: $0.deviceID, name: $0.name, reachable: $0.reachable) }))
        case .send(let mode, let target, let metadata, let encoded):
            let outcome = try await router.send(metadata: metadata, encoded: encoded, mode: mode, to: target,
                                                  owner: context.credentials?.uid)
            return LocalAPIDispatcher.sendReplyBody(eventID: metadata.eventID, outcome: outcome)
        case .snapshotPublish(let target, let snapshot, let encoded):
            let stored = try await router.publishSnapshot(snapshot, encoded: encoded, to: target,
                                                         owner: context.credentials?.uid)
            // `revision` is the slot's revision after the call: the snapshot's when stored, else the higher one kept.
            let kept = stored ? snapshot.revision
                : try await router.outboundRevision(featureID: snapshot.metadata.featureID, sessionID: snapshot.metadata.sessionID) ?? snapshot.revision
            return try LocalAPIJSON.encode(MeshSnapshotPublishReply(revision: kept, stored: stored))
        case .snapshotRequest(let sessionID, let featureID, let peer):
            try await router.requestSnapshot(sessionID: sessionID, featureID: featureID, peer: peer)
            return try LocalAPIJSON.encode(EmptyBody())
        case .snapshotLatest(let featureID, let peer, let sessionID):
            guard let found = try await router.latestSnapshot(featureID: featureID, peer: peer, sessionID: sessionID) else {
                throw MeshError.notFound("no snapshot of feature \(featureID) was received\(peer.map { " from \($0)" } ?? "")")
            }
            var bytes: [UInt8] = []
            LocalAPIEventFrames.append(found.peer, to: &bytes)
            return ByteBuffer(bytes: bytes + found.encoded)
        case .anchorSet(let sessionID, let featureID, let revision, let anchor):
            let stored = try await router.setAnchor(sessionID: sessionID, featureID: featureID, revision: revision, anchor: anchor,
                                                    ownerUID: context.credentials?.uid)
            return try LocalAPIJSON.encode(MeshAnchorSetReply(stored: stored))
        case .sessionAnnounce(let sessionID, let featureID, let owner, let status):
            try await router.announceSession(sessionID: sessionID, featureID: featureID, owner: owner, status: status,
                                             ownerUID: context.credentials?.uid)
            return try LocalAPIJSON.encode(EmptyBody())
        case .sessionClose(let sessionID, let featureID):
            let result = try await router.closeSession(sessionID: sessionID, featureID: featureID,
                                                       ownerUID: context.credentials?.uid)
            return try LocalAPIJSON.encode(MeshSessionCloseReply(delivered: result.delivered, queued: result.queued))
        case .sessions(let featureID):
            let rows = try await router.sessions(featureID: featureID).filter { permits?($0.featureID) ?? true }
            return try LocalAPIJSON.encode(MeshSessionsReply(sessions: rows.map(MeshSessionRecord.init)))
        case .inboxAck(let ids):
            let acknowledged = try await router.acknowledgeInbox(ids: ids, permitting: permits)
            return try LocalAPIJSON.encode(MeshInboxAckReply(acknowledged: acknowledged))
        case .queue:
            let items = try await router.queue().filter { permits?($0.summary.featureID) ?? true }.map { entry in
                MeshQueueItem(id: UInt64(clamping: entry.summary.id.rawValue), peer: entry.summary.peer,
                              featureID: entry.summary.featureID, eventID: entry.summary.eventID,
                              ageSeconds: entry.ageSeconds, attempts: entry.attempts, size: entry.summary.size)
            }
            return try LocalAPIJSON.encode(MeshQueueReply(items: items))
        case .inbox:
            let items = try await router.inboxItems(limit: MeshInboxReply.maximumItems)
                .filter { permits?($0.featureID) ?? true }.map { entry in
                    MeshInboxItem(id: UInt64(clamping: entry.id.rawValue), peer: entry.peer, featureID: entry.featureID,
                                  eventID: entry.eventID, ageSeconds: entry.ageSeconds, deliveries: entry.deliveries,
                                  size: entry.size)
                }
            return try LocalAPIJSON.encode(MeshInboxReply(items: items))
        case .queueCancel(let id):
            try await router.cancelQueued(id: id, permitting: permits)
            return try LocalAPIJSON.encode(EmptyBody())
        case .watermarkSet(let sessionID, let featureID, let peer, let sequence):
            try await router.setWatermark(sessionID: sessionID, featureID: featureID, peer: peer, sequence: sequence)
            return try LocalAPIJSON.encode(EmptyBody())
        default:
            return nil
        }
    }
}

extension LocalAPIDispatcher {
    /// Refuses (`feature-not-allowed`) an operation naming a session ID that has a directory
    /// row or a timer anchor of a feature this uid may not use. The rows are keyed by (feature,
    /// session), so the operation could not reach them anyway; refusing it as well keeps a uid
    /// from writing rows of its feature under a session another feature holds.
    static func checkSessionLane(_ sessionID: UUID, router: DeliveryRouter, uid: UInt32?,
                                 permits: @Sendable (String) -> Bool) async throws {
        for feature in try await router.sessionFeatures(sessionID: sessionID) where !permits(feature) {
            throw MeshError(.featureNotAllowed, "uid \(uid.map(String.init) ?? "unknown") may not use session "
                                + "\(sessionID.uuidString.lowercased()): it belongs to a feature this uid is not allowed; "
                                + "see feature_allow in the daemon's config")
        }
    }
}

extension LocalAPIRequest {
    /// The session a session-scoped write names (announce, close, anchor, watermark), if any.
    var namedSession: UUID? {
        switch self {
        case .sessionAnnounce(let sessionID, _, _, _), .sessionClose(let sessionID, _), .anchorSet(let sessionID, _, _, _),
             .watermarkSet(let sessionID, _, _, _):
            sessionID
        default:
            nil
        }
    }
}
