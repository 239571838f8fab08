import Foundation
import MeshCore
import SessionMesh

/// How a session's directory row changes (docs/DELIVERY.md, "Sessions and anchors"): every
/// change of this device's row raises its revision, a closed session is never announced again,
/// and a stored row from a peer is reported as announced, updated or closed.
struct SessionDirectoryRow: Sendable, Equatable {
    /// The stored row of the session, if any.
    var existing: SessionRecord?

    /// The row an app's `session.announce` stores (this device's, one revision up). Throws
    /// `invalid-argument` for the status `closed` and `session-closed` for a closed session.
    func announce(sessionID: UUID, featureID: String, owner: String, status: String,
                  at: Date) throws(MeshError) -> (record: SessionRecord, change: SessionChange) {
        try Self.checkAnnounced(status: status)
        if existing?.status == "closed" { throw MeshError.sessionClosed(sessionID.uuidString) }
        let record = SessionRecord(sessionID: sessionID, featureID: featureID, owner: owner, status: status,
                                   updatedAt: at, revision: try nextRevision(), sourcePeer: nil)
        return (record, existing == nil ? .announced : .updated)
    }

    /// `session.announce` cannot close a session: `invalid-argument` for the status `closed`.
    static func checkAnnounced(status: String) throws(MeshError) {
        guard status != "closed" else {
            throw MeshError.invalidArgument("session.announce: use session.close to close a session")
        }
    }

    /// The row `session.close` stores: closed, one revision up, the owner kept (`localOwner`
    /// for a session not in the directory).
    func close(sessionID: UUID, featureID: String, localOwner: String, at: Date) throws(MeshError) -> SessionRecord {
        SessionRecord(sessionID: sessionID, featureID: featureID, owner: existing?.owner ?? localOwner,
                      status: "closed", updatedAt: at, revision: try nextRevision(), sourcePeer: nil)
    }

    /// What the apps are told of a peer's row that replaced `existing` in the store.
    func change(to record: SessionRecord) -> SessionChange {
        record.status == "closed" ? .closed : existing == nil ? .announced : .updated
    }

    private func nextRevision() throws(MeshError) -> UInt64 {
        let (next, overflow) = (existing?.revision ?? 0).addingReportingOverflow(1)
        guard !overflow else { throw MeshError.invalidArgument("the session's revision is at its maximum") }
        return next
    }
}

/// What closing a session sends: the closed row, a closing envelope (queued reliably for every
/// paired device) and a closing snapshot for the outbound slot, one revision above the slot's.
struct SessionClosing: Sendable {
    var record: SessionRecord
    var item: DeliveryItem
    var snapshot: AnySessionSyncSnapshot
    var encodedSnapshot: [UInt8]

    init(sessionID: UUID, featureID: String, existing: SessionRecord?, slotRevision: UInt64?, localDevice: String,
         at: Date, eventID: UUID) throws(MeshError) {
        record = try SessionDirectoryRow(existing: existing).close(sessionID: sessionID, featureID: featureID,
                                                                  localOwner: localDevice, at: at)
        let metadata = SessionSyncMetadata(sessionID: sessionID, featureID: featureID, sourcePeerID: localDevice,
                                           eventID: eventID, sequence: 0, causalTimestamp: at, payloadType: DeliveryRouter.sessionClosedPayloadType)
        let (revision, overflow) = (slotRevision ?? 0).addingReportingOverflow(1)
        guard !overflow else { throw MeshError.invalidArgument("the session's snapshot revision is at its maximum") }
        snapshot = AnySessionSyncSnapshot(metadata: metadata, revision: revision, state: Data())
        do {
            let envelope = try SessionWireCodec.encode(AnySessionSyncEnvelope(metadata: metadata, payload: Data()))
            encodedSnapshot = try SessionWireCodec.encode(snapshot)
            item = DeliveryItem(eventID: eventID, kind: DeliveryItem.Kind.reliableEnvelope.rawValue,
                                featureID: featureID, sessionID: sessionID, payload: envelope)
        } catch {
            throw MeshError.invalidArgument("session.close: \(error)")
        }
    }
}

extension DeliveryAnchorRecord {
    /// Whether an app can use the anchor: its accumulated time is finite and not negative (an
    /// app must never compute a negative elapsed time from it).
    var isUsable: Bool {
        anchor.accumulatedElapsedBeforeAnchor.isFinite && anchor.accumulatedElapsedBeforeAnchor >= 0
    }

    /// The anchor with its instants rewritten from the peer's clock into this one, given the
    /// estimated offset (peer minus local, ns; none: 0).
    func inLocalClock(offsetNanoseconds: Int64?) -> DeliveryAnchorRecord {
        var local = self
        local.anchor = anchor.shifted(by: -(Double(offsetNanoseconds ?? 0) / 1e9))
        return local
    }
}

/// What a peer gets on every activation, after the drained pre-activation items, in this
/// order: this device's own sessions, its outbound snapshot slots and the stored timer anchors
/// (an undecodable one left out); then (`WatermarkBook.sentMessages`) the watermarks its apps
/// set for the peer's events.
struct ActivationResend: Sendable {
    var messages: [DeliveryMessage] = []

    init(slots: [SnapshotSlot], sessions: [SessionRecord], anchors: [TimerAnchorRecord]) {
        for session in sessions where session.sourcePeer == nil {
            messages.append(.session(DeliverySessionRecord(session)))
        }
        for slot in slots { messages.append(.snapshotPush(slot.bytes)) }
        for stored in anchors {
            if let record = try? DeliveryAnchorRecord(stored: stored.bytes) { messages.append(.anchor(record)) }
        }
    }
}
