import Foundation
import MeshCrypto
import SessionMesh
import SessionMeshClient
import Testing
@testable import MeshDaemon

/// A paired peer floods a real `meshd` with stream ping requests and never reads what comes
/// back. The daemon's memory stays bounded (its replies are dropped and counted once the
/// connection holds its reply limit), the channel is closed as not reading with the reason in
/// `meshctl peers`, memory comes back afterwards, and an honest peer keeps getting the reliable
/// items the daemon's app sends it throughout.
///
/// The daemon runs as a child process so its resident set is measured alone; the hostile and
/// honest peers are in-process nodes paired with it by code.
@Suite("meshd under a flood of pings from a peer that does not read", .serialized,
       .enabled(if: ChildProcess.executable("meshd") != nil && ChildProcess.executable("meshctl") != nil,
                "meshd/meshctl are not built (run `swift build` first)"))
struct ProcessOutboundFloodTests {
    static let feature = "demo"

    static func counters(_ daemon: DaemonProcess) async throws -> [String: UInt64] {
        ((try await daemon.status()["counters"] as? [String: Any]) ?? [:]).mapValues { ($0 as? NSNumber)?.uint64Value ?? 0 }
    }

    /// Pairs `node` with the daemon by a code of the daemon's (`meshctl pair --json`).
    static func pair(_ node: MeshNode, with daemon: DaemonProcess) async throws {
        let waiter = try ChildProcess("meshctl", ["--socket", daemon.socketPath, "pair", "--json"])
        defer { waiter.terminate(); waiter.process.waitUntilExit() }
        guard let first = try await waiter.readLine(timeout: 10),
              let line = try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any],
              let code = line["code"] as? String
        else { throw DaemonProcessError("pair --json printed no code line") }
        _ = try await node.joinPairing(code: code, address: daemon.listen)
        _ = try await waiter.readLine(timeout: 10)
    }

    @Test("500 000 stream pings from a peer that does not read: bounded memory, replies dropped, channel closed, honest peer served")
    func pingFloodWithoutReading() async throws {
        let pingCount = Int(ProcessInfo.processInfo.environment["MESH_FLOOD_PINGS"] ?? "") ?? 500_000
        let victim = try await DaemonProcess(name: "victim")
        defer { victim.stopNow() }
        let bed = DeliveryTestBed()
        do {
            let victimID = try DeviceID.parse(try await victim.deviceID())
            let hostile = try await bed.nodes.start(name: "hostile")
            let honest = try await bed.start(name: "honest")
            let honestApp = CollectingSink()
            _ = await honest.router.attach(features: [Self.feature], sink: honestApp)
            try await Self.pair(hostile.node, with: victim)
            try await Self.pair(honest.node, with: victim)
            try await victim.waitForChannel(hostile.node.deviceID.description, timeout: 10)
            try await victim.waitForChannel(honest.id, timeout: 10)
            try await waitUntil("the in-process peers' channels active", timeout: 10) {
                let a = await hostile.node.isActive(victimID), b = await honest.node.isActive(victimID)
                return a && b
            }
            let app = try await MeshClient.connect(socketPath: victim.socketPath)
            defer { Task { await app.close() } }
            let pid = try #require(victim.pid)
            let baseline = residentBytes(of: pid)
            var peak = baseline
            let started = ContinuousClock.now

            // The flood: bursts of stream pings; after each burst, one reliable item from the
            // victim's app to the honest peer. When the victim closes the channel, the hostile
            // peer reconnects and goes on without reading (as an attacker would).
            var sent = 0, reconnects = 0, holding: UInt64?
            var itemIDs: [UUID] = []
            while sent < pingCount {
                if let connection = await hostile.node.connectionID(of: victimID), connection != holding {
                    #expect(await hostile.node.holdStreamReads(from: victimID))
                    holding = connection
                }
                let burst = (0..<4096).map { (ChannelMessage.pingRequest(id: UInt32(truncatingIfNeeded: sent + $0)), PingPath.stream) }
                let (count, last) = await hostile.node.sendSealed(burst, to: victimID)
                sent += count
                if let last { try? await last.get() }
                if count < burst.count {
                    reconnects += 1
                    try await waitUntil("the hostile peer's channel again", timeout: 15) { await hostile.node.isActive(victimID) }
                }
                if itemIDs.count < 100 {
                    let envelope = ProcessFixtures.envelope(UInt64(itemIDs.count + 1), feature: Self.feature)
                    _ = try await app.send(envelope: envelope, mode: .reliableEventually, to: honest.id)
                    itemIDs.append(envelope.metadata.eventID)
                }
                peak = max(peak, residentBytes(of: pid))
            }
            let flood = ContinuousClock.now - started
            let during = try await Self.counters(victim)

            // The channel is closed as not reading (after a few keepalive intervals over its
            // limit), with the reason in `meshctl peers`.
            try await waitUntil("the victim closed the hostile channel as not reading", timeout: 20) {
                (try await Self.counters(victim)["channels.closed_not_reading"] ?? 0) > 0
            }
            let peers = try await victim.peers()
            let reason = peers.first { ($0["deviceID"] as? String) == hostile.node.deviceID.description }?["lastCloseReason"] as? String
            // Memory comes back within seconds.
            let closedAt = ContinuousClock.now
            var after = residentBytes(of: pid)
            try? await waitUntil("memory given back", timeout: 10) {
                after = residentBytes(of: pid)
                return after - baseline < 4 << 20
            }
            let given = ContinuousClock.now - closedAt
            // The honest peer got every reliable item the app sent during the flood.
            try await waitUntil("the honest peer got the reliable items", timeout: 30) {
                Set(honestApp.envelopes.map(\.envelope.metadata.eventID)).isSuperset(of: itemIDs)
            }
            let final = try await Self.counters(victim)
            print("""
                process figure: \(sent) stream pings without reading in \(flood) (\(reconnects) reconnects); meshd resident \
                \(baseline >> 10) KiB before, peak \(peak >> 10) KiB (+\((peak - baseline) >> 10) KiB), \(after >> 10) KiB \
                \(given) after the close; replies dropped \(final["stream.replies_dropped"] ?? 0) (\(during["stream.replies_dropped"] ?? 0) \
                when the flood ended), channels closed as not reading \(final["channels.closed_not_reading"] ?? 0), outbound peak \
                \((final["stream.outbound_peak_bytes"] ?? 0) >> 10) KiB, memory releases \(final["memory.outbound_releases"] ?? 0); \
                the honest peer got \(itemIDs.count) reliable items; close reason: \(reason ?? "none")
                """)
            #expect(sent >= pingCount)
            #expect(peak - baseline < 16 << 20, "meshd grew by \((peak - baseline) >> 10) KiB")
            #expect((final["stream.replies_dropped"] ?? 0) > 0)
            #expect((final["stream.outbound_peak_bytes"] ?? 0) <= UInt64(ChannelTuning().outboundReplyBytes + (64 << 10)))
            #expect(reason?.contains("did not read") == true, "close reason: \(reason ?? "none")")
            #expect(after - baseline < 4 << 20, "meshd still holds \((after - baseline) >> 10) KiB more than before")
            #expect(Set(honestApp.envelopes.map(\.envelope.metadata.eventID)).isSuperset(of: itemIDs))
        } catch {
            await bed.shutdown()
            throw error
        }
        await bed.shutdown()
    }
}
