import Foundation
import MeshCrypto
import SessionMesh
import Testing
@testable import MeshDaemon

/// One paired peer stops reading its connection while the victim's writes to it pile up in
/// NIO; the victim's apps publish a snapshot, announce a session, set an anchor and watermarks.
/// Each request returns at once, and the honest peer gets each update in the usual time.
extension DeliveryIntegration {
    @Suite("A peer that does not read holds up no other", .serialized)
    struct SlowPeerFanOutTests {
        static let feature = "demo"

        /// A victim (node + router) whose connection to a peer that does not read is closed only
        /// after a minute (so the test sees its writes queue, not the close).
        static func startVictim(_ bed: DeliveryTestBed) async throws -> RunningDaemon {
            let folder = bed.nodes.temporaryFolder()
            var configuration = bed.nodes.configuration(name: "victim", stateDirectory: folder)
            configuration.channelTuning.outboundStallKeepalives = 600
            let running = try await bed.nodes.start(configuration)
            var storeOptions = DeliveryStoreOptions()
            storeOptions.synchronous = .normal
            let store = try DeliveryRouter.openStore(stateDirectory: folder, options: storeOptions)
            let router = DeliveryRouter(node: running.node, store: store, options: DeliveryTestBed.options(),
                                        logger: NodeTestBed.logger("victim.delivery"))
            let task = Task { try await router.run() }
            return RunningDaemon(running: running, router: router, store: store, routerTask: task)
        }

        /// Floods the victim with stream pings from `hostile`, which reads nothing, until the
        /// victim's connection to it holds more than its reply limit (replies dropped); returns
        /// the pings sent.
        static func fillConnection(of victim: RunningDaemon, from hostile: RunningNode) async throws -> Int {
            let victimID = victim.deviceID, hostileID = hostile.node.deviceID
            #expect(await hostile.node.holdStreamReads(from: victimID, receiveBuffer: 4096))
            #expect(await victim.node.shrinkSendBuffer(to: hostileID, bytes: 4096))
            var pings = 0
            try await waitUntil("the victim's connection to the hostile peer over its reply limit", timeout: 60) {
                let burst = (0..<2048).map { (ChannelMessage.pingRequest(id: UInt32(truncatingIfNeeded: pings + $0)), PingPath.stream) }
                let (sent, last) = await hostile.node.sendSealed(burst, to: victimID)
                pings += sent
                if let last { try? await last.get() }
                return (await victim.node.status().counters["stream.replies_dropped"] ?? 0) > 0
            }
            return pings
        }

        @Test func aPeerThatDoesNotReadHoldsUpNoRequestAndNoOtherPeer() async throws {
            let bed = DeliveryTestBed()
            let victim = try await Self.startVictim(bed)
            do {
                let hostile = try await bed.nodes.start(name: "hostile")
                let honest = try await bed.start(name: "honest")
                let honestApp = CollectingSink()
                _ = await honest.router.attach(features: [Self.feature], sink: honestApp)
                _ = try await bed.nodes.pair(victim.running, hostile)
                _ = try await bed.nodes.pair(victim.running, honest.running)
                let hostileID = hostile.node.deviceID
                try await waitUntil("channels active", timeout: 15) {
                    let peers = await victim.node.activePeers()
                    return peers.contains(hostileID) && peers.contains(honest.deviceID)
                }
                try await waitUntil("the honest peer's channel active", timeout: 15) { await honest.node.isActive(victim.deviceID) }
                let pings = try await Self.fillConnection(of: victim, from: hostile)
                let stuckConnection = await victim.node.connectionID(of: hostileID)
                let queuedBefore = await victim.node.status().counters["stream.outbound_queued_bytes"] ?? 0

                // Each request of the victim's app, timed, and given up after 5 s (a request
                // that waited for the stuck peer's write would hang there).
                let clock = ContinuousClock()
                var times: [(String, Duration)] = []
                func timed<T: Sendable>(_ name: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T? {
                    let start = clock.now
                    let result = try await withDeadline(5, body)
                    times.append((name, clock.now - start))
                    if result == nil { Issue.record("\(name) did not return within 5 s while a peer does not read") }
                    return result
                }
                let session = UUID(), router = victim.router, owner = victim.id, hostileKey = hostileID.description
                let honestKey = honest.id
                let (snapshot, encoded) = try RouterFixtures.snapshot(revision: 1, state: "{\"page\":1}", session: session)
                let anchor = SessionTimerAnchor(startedAt: Date(timeIntervalSince1970: 1_700_000_000), accumulatedElapsedBeforeAnchor: 0)
                let requested = clock.now
                _ = try await timed("session.announce") {
                    try await router.announceSession(sessionID: session, featureID: Self.feature, owner: owner, status: "open")
                }
                let published = try await timed("snapshot.publish") {
                    try await router.publishSnapshot(snapshot, encoded: encoded, to: nil)
                }
                let anchored = try await timed("anchor.set") {
                    try await router.setAnchor(sessionID: session, featureID: Self.feature, revision: 1, anchor: anchor)
                }
                #expect(published == true && anchored == true)
                _ = try await timed("watermark.set (stuck peer)") {
                    try await router.setWatermark(sessionID: session, featureID: Self.feature, peer: hostileKey, sequence: 7)
                }
                _ = try await timed("watermark.set (honest peer)") {
                    try await router.setWatermark(sessionID: session, featureID: Self.feature, peer: honestKey, sequence: 7)
                }

                // The honest peer gets every update in the usual time.
                try await waitUntil("the honest peer got the session, snapshot, anchor and watermark", timeout: 5) {
                    let events = honestApp.all
                    return events.contains { if case .session(let record, _) = $0 { record.sessionID == session } else { false } }
                        && events.contains { if case .snapshot = $0 { true } else { false } }
                        && events.contains { if case .anchor(_, let id, _, _, _) = $0 { id == session } else { false } }
                        && events.contains { if case .watermark(_, let id, _, let sequence) = $0 { id == session && sequence == 7 } else { false } }
                }
                let arrived = clock.now - requested
                let counters = await victim.node.status().counters
                print("""
                    slow peer fan-out: \(pings) pings to fill the stuck connection (\(queuedBefore >> 10) KiB queued, \
                    \(counters["stream.replies_dropped"] ?? 0) replies dropped); \
                    \(times.map { "\($0.0) \($0.1.formatted(.units(allowed: [.milliseconds], fractionalPart: .show(length: 1))))" }.joined(separator: ", ")); \
                    the honest peer had all four updates \(arrived.formatted(.units(allowed: [.milliseconds]))) after the first request
                    """)
                for (name, time) in times {
                    #expect(time < .milliseconds(100), "\(name) took \(time) while a peer does not read")
                }
                #expect(arrived < .seconds(2))
                // The stuck channel was not closed to get there: its writes queue behind its
                // replies, bounded by its budget.
                #expect(await victim.node.connectionID(of: hostileID) == stuckConnection)
                #expect(queuedBefore > UInt64(ChannelTuning().outboundReplyBytes))
                #expect((counters["stream.outbound_queued_bytes"] ?? 0) < UInt64(ChannelTuning().outboundBytes))
            } catch {
                await victim.stop()
                await bed.shutdown()
                throw error
            }
            await victim.stop()
            await bed.shutdown()
        }
    }
}
