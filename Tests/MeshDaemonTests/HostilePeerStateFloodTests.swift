import Foundation
import MeshCrypto
import SessionMesh
import Testing
@testable import MeshDaemon

extension DeliveryIntegration {
    /// A paired peer announcing 40 000 sessions, snapshots and timer anchors, each of a new
    /// session ID (`MESH_HOSTILE_STATE_MESSAGES` sets the count; 80 times the limit already; at
    /// 100 000 the wait below, which counts every message, does not end on a 2-core machine, most
    /// likely because a channel close during the long flood loses messages): the victim stores each kind up
    /// to the peer's limit and refuses (counts) the rest; its memory and database stay within
    /// bounds. And the peer's rows never replace the victim's own session row or anchor.
    @Suite("Hostile paired peer: stored state") struct HostilePeerStateFloodTests {
        static let limits = PeerStateLimits(slotsPerPeer: 500, slotBytesPerPeer: 1 << 20, sessionsPerPeer: 500, anchorsPerPeer: 500)

        @Test func aPeerGrowingSessionsSnapshotsAndAnchorsHitsItsLimits() async throws {
            let count = Int(ProcessInfo.processInfo.environment["MESH_HOSTILE_STATE_MESSAGES"] ?? "") ?? 40_000
            let log = CountingLogHandler()
            var storeOptions = DeliveryStoreOptions(maxDatabaseBytes: 64 << 20, peerState: Self.limits)
            storeOptions.verification = .quick
            try await HostilePairedPeerTests.withHostilePeer(log: log, storeOptions: storeOptions) { victim, hostile in
                let victimID = victim.node.deviceID, feature = HostilePairedPeerTests.feature
                // The victim's own session and anchor, which the peer will try to overwrite.
                let own = UUID()
                try await victim.router.announceSession(sessionID: own, featureID: feature, owner: "victim", status: "running")
                let anchor = SessionTimerAnchor(startedAt: Date(timeIntervalSince1970: 1_800_000_000))
                #expect(try await victim.router.setAnchor(sessionID: own, featureID: feature, revision: 1, anchor: anchor))

                let baseline = residentBytes()
                var peak = baseline
                let clock = ContinuousClock(), started = clock.now
                var sent = 0, index = 0
                let updatedAt = Date(timeIntervalSince1970: 1_800_000_000)
                func message(_ kind: Int, _ session: UUID) throws -> [UInt8] {
                    switch kind {
                    case 0:
                        let record = SessionRecord(sessionID: session, featureID: feature, owner: "h", status: "running",
                                                   updatedAt: updatedAt, revision: 1, sourcePeer: nil)
                        return DeliveryMessage.session(DeliverySessionRecord(record)).encode()
                    case 1:
                        let (_, bytes) = try RouterFixtures.snapshot(revision: 1, state: "s", feature: feature, session: session)
                        return DeliveryMessage.snapshotPush(bytes).encode()
                    default:
                        return DeliveryMessage.anchor(DeliveryAnchorRecord(sessionID: session, featureID: feature, revision: 1,
                                                                           anchor: anchor)).encode()
                    }
                }
                while index < count {
                    var burst: [(ChannelMessage, PingPath)] = []
                    for _ in 0..<128 where index < count {
                        let session = UUID()
                        for kind in 0..<3 { burst.append((.application(try message(kind, session)), .stream)) }
                        index += 1
                    }
                    sent += try await HostilePairedPeerTests.send(burst, from: hostile.node, to: victimID)
                    if index % 4096 < 128 { peak = max(peak, residentBytes()) }
                }
                // The peer's rows for the victim's own session: a close and a newer anchor.
                let hijack = SessionRecord(sessionID: own, featureID: feature, owner: "h", status: "closed", updatedAt: updatedAt,
                                           revision: 99, sourcePeer: nil)
                let foreignAnchor = DeliveryAnchorRecord(sessionID: own, featureID: feature, revision: 99,
                                                         anchor: SessionTimerAnchor(startedAt: Date(timeIntervalSince1970: 5)))
                sent += try await HostilePairedPeerTests.send([
                    (.application(DeliveryMessage.session(DeliverySessionRecord(hijack)).encode()), .stream),
                    (.application(DeliveryMessage.anchor(foreignAnchor).encode()), .stream),
                ], from: hostile.node, to: victimID)
                // 120 000 store writes: about 70 s on a loaded 2-core machine (the point is the
                // bounds below, not the speed), so the wait leaves room.
                try await waitUntil("the victim handled every message", timeout: 300) {
                    let values = await HostilePairedPeerTests.counters(victim)
                    peak = max(peak, residentBytes())
                    return values["delivery.sessions.received", default: 0] >= UInt64(count + 1)
                        && values["delivery.snapshots.received", default: 0] >= UInt64(count)
                        && values["delivery.anchors.received", default: 0] >= UInt64(count + 1)
                }
                let elapsed = clock.now - started
                let values = await HostilePairedPeerTests.counters(victim)
                let store = victim.store, key = hostile.node.deviceID.description
                let slots = try store.slots.listInbound(peer: key).count
                let rows = try store.sessions.list(featureID: feature).filter { $0.sourcePeer == key }.count
                let anchors = try store.sessions.listTimerAnchors().filter { $0.sourcePeer == key }.count
                let databaseBytes = try store.databaseSize()
                print("""
                    hostile stored state: \(count) sessions, snapshots and anchors (\(sent) messages) in \(elapsed); \
                    stored slots \(slots), sessions \(rows), anchors \(anchors); refused snapshots \
                    \(values["delivery.snapshots.refused", default: 0]), sessions \(values["delivery.sessions.refused", default: 0]), \
                    anchors \(values["delivery.anchors.over_limit", default: 0]); not owned \
                    \(values["delivery.sessions.not_owned", default: 0]); resident \(baseline >> 20) → peak \(peak >> 20) MiB; \
                    database \(databaseBytes >> 10) KiB
                    """)
                #expect(slots == 500 && rows == 500 && anchors == 500)
                #expect(values["delivery.snapshots.refused"] == UInt64(count - 500))
                #expect(values["delivery.sessions.refused"] == UInt64(count - 500))
                #expect(values["delivery.anchors.over_limit"] == UInt64(count - 500 + 1), "the last anchor is over the limit too")
                #expect(values["delivery.sessions.not_owned"] == 1)
                #expect(try store.sessions.record(featureID: feature, id: own)?.status == "running", "the victim's row stays")
                #expect(try store.sessions.timerAnchor(featureID: feature, sessionID: own)?.revision == 1, "the victim's anchor stays")
                #expect(databaseBytes < 16 << 20, "the database stays small: \(databaseBytes) bytes")
                #expect(peak - baseline < 256 << 20, "resident memory grew by \((peak - baseline) >> 20) MiB")
            }
        }
    }
}
