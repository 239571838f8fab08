import Foundation
import SessionMesh
@testable import MeshCrypto
@testable import MeshDaemon

// The `router` harness's storage bursts (step 11, see router.swift): a paired peer announcing
// very many distinct sessions, pushing snapshots of very many sessions, or sending timer anchors
// for them. One record is the template (a delivery message of the kind the step picks; a fixed
// one when it is not), and the N messages derived from it differ in their session ID. They go
// through the path of step 0 (`InboundConsumer.handle`, then `storeInboxBacklog`).
//
// Property: nothing crashes or grows past libFuzzer's limits, and the directory holds no
// session row from the peer that the peer did not announce (never more rows than distinct
// (feature, session) pairs it announced). The per-peer storage limits (`inbound_max_*`,
// `DeliveryStoreOptions.peerState`) add that those counts stop at the limit: a burst is long
// enough to reach it, and what is over it is refused and counted, never stored.

/// What the peer announced in this input: the (feature, session) pairs of its session
/// messages, to check the directory against.
struct FuzzAnnounced {
    private(set) var sessions: Set<String> = []

    static func key(_ sessionID: UUID, _ featureID: String) -> String { "\(featureID)/\(sessionID.uuidString)" }

    /// Notes a delivery message the peer sent (step 0/1 or a burst).
    mutating func note(_ bytes: [UInt8]) {
        guard case .session(let record)? = try? DeliveryMessage(decoding: bytes) else { return }
        sessions.insert(Self.key(record.sessionID, record.featureID))
    }
}

enum FuzzStorageBurst {
    /// The `index`th session ID of a burst: the template's first 12 bytes, then `index`.
    static func session(_ template: UUID, _ index: Int) -> UUID {
        let t = template.uuid, n = UInt32(truncatingIfNeeded: index)
        return UUID(uuid: (t.0, t.1, t.2, t.3, t.4, t.5, t.6, t.7, t.8, t.9, t.10, t.11,
                           UInt8(n >> 24), UInt8(truncatingIfNeeded: n >> 16), UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n)))
    }

    /// `count` messages of `kind` (0: session announcements, 1: snapshot pushes, 2: timer
    /// anchors) derived from `template`, their sessions numbered from `first`.
    static func messages(kind: UInt8, count: Int, first: Int, template: [UInt8], wallMicros: Int64) -> [[UInt8]] {
        let decoded = try? DeliveryMessage(decoding: template)
        switch kind % 3 {
        case 0:
            var record = DeliverySessionRecord(sessionID: FuzzSeeds.session, featureID: "a", owner: "peer", status: "open",
                                               updatedAtMicros: wallMicros, revision: 1)
            if case .session(let given)? = decoded { record = given }
            let base = record.sessionID
            return (0..<count).map { index in
                record.sessionID = session(base, first + index)
                return DeliveryMessage.session(record).encode()
            }
        case 1:
            var snapshot: AnySessionSyncSnapshot? = (try? FuzzSeeds.snapshot()).flatMap { SnapshotSlots.decode($0) }
            if case .snapshotPush(let bytes)? = decoded, let given = SnapshotSlots.decode(bytes) { snapshot = given }
            guard var snapshot else { fuzzFailure("the fixed snapshot") }
            let base = snapshot.metadata.sessionID
            return (0..<count).compactMap { index in
                snapshot.metadata.sessionID = session(base, first + index)
                return (try? SessionWireCodec.encode(snapshot)).map { DeliveryMessage.snapshotPush($0).encode() }
            }
        default:
            var record = DeliveryAnchorRecord(sessionID: FuzzSeeds.session, featureID: "a", revision: 1,
                                              anchor: SessionTimerAnchor(startedAt: Date(timeIntervalSince1970: 1_750_000_000),
                                                                         accumulatedElapsedBeforeAnchor: 1, pauseStartedAt: nil,
                                                                         isPaused: false, expectedEndAt: nil, stepStartedAt: nil))
            if case .anchor(let given)? = decoded { record = given }
            let base = record.sessionID
            return (0..<count).map { index in
                record.sessionID = session(base, first + index)
                return DeliveryMessage.anchor(record).encode()
            }
        }
    }
}

extension DeliveryRouter {
    /// Checks the directory against what `peer` announced (see the top of this file).
    func fuzzCheckSessions(from peer: DeviceID, announced: FuzzAnnounced) async {
        guard let rows = try? await sessions(featureID: nil) else { return }
        let source = peer.description
        var fromPeer = 0
        for row in rows where row.sourcePeer == source {
            fromPeer += 1
            guard announced.sessions.contains(FuzzAnnounced.key(row.sessionID, row.featureID)) else {
                fuzzFailure("a session row from the peer it never announced: \(row.featureID) \(row.sessionID)")
            }
        }
        if fromPeer > announced.sessions.count {
            fuzzFailure("\(fromPeer) session rows from the peer, \(announced.sessions.count) announced")
        }
    }
}
