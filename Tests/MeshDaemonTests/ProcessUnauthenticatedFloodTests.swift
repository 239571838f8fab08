import Foundation
import Testing

/// A hostile host on the LAN (here 127.0.0.2) floods two real daemons with idle and garbage
/// connections; the daemons on 127.0.0.1 still pair by code and get their channel as fast as
/// without the flood, and the flooder never gets a byte back.
@Suite("meshd under a flood of unauthenticated connections", .serialized,
       .enabled(if: ChildProcess.executable("meshd") != nil && ChildProcess.executable("meshctl") != nil,
                "meshd/meshctl are not built (run `swift build` first)"))
struct ProcessUnauthenticatedFloodTests {
    /// Pairs a fresh pair of daemons; returns (seconds to pair, seconds from paired to both
    /// channels active). `flood` runs around the pairing when given.
    func pairAndConnect(label: String, flood seed: UInt64?) async throws -> (pair: Double, channel: Double, floods: [ConnectionFlood.Figures], counters: [String: UInt64]) {
        let a = try await DaemonProcess(name: "alpha-\(label)")
        let b = try await DaemonProcess(name: "beta-\(label)")
        defer { a.stopNow(); b.stopNow() }
        let idA = try await a.deviceID()
        let idB = try await b.deviceID()
        var floods: [ConnectionFlood] = []
        if let seed {
            for (n, daemon) in [a, b].enumerated() {
                let port = UInt16(daemon.listen.split(separator: ":").last.flatMap { Int($0) } ?? 0)
                let flood = ConnectionFlood(from: "127.0.0.2", to: port, seed: seed &+ UInt64(n))
                flood.start()
                floods.append(flood)
            }
            // Let the flood reach its steady state (every slot 127.0.0.2 may hold is held).
            try await Task.sleep(for: .seconds(1.5))
        }
        var figures: [ConnectionFlood.Figures] = []
        do {
            let started = Date()
            _ = try await a.pair(with: b)
            let paired = Date()
            try await a.waitForChannel(idB, timeout: 5)
            try await b.waitForChannel(idA, timeout: 5)
            let active = Date()
            var counters: [String: UInt64] = [:]
            for daemon in [a, b] {
                for (name, value) in (try await daemon.status()["counters"] as? [String: Any]) ?? [:] {
                    counters[name, default: 0] += (value as? NSNumber)?.uint64Value ?? 0
                }
            }
            for flood in floods { figures.append(await flood.stop()) }
            return (paired.timeIntervalSince(started), active.timeIntervalSince(paired), figures, counters)
        } catch {
            for flood in floods { _ = await flood.stop() }
            throw error
        }
    }

    @Test("two daemons on 127.0.0.1 pair by code and get their channel while 127.0.0.2 floods both")
    func pairUnderFlood() async throws {
        let seed = ProcessInfo.processInfo.environment["MESH_TEST_SEED"].flatMap(UInt64.init) ?? 0xF10D
        print("flood seed: \(seed) (MESH_TEST_SEED)")
        let quiet = try await pairAndConnect(label: "quiet", flood: nil)
        let flooded = try await pairAndConnect(label: "flooded", flood: seed)
        let connected = flooded.floods.map(\.connected).reduce(0, +)
        print(String(format: "process figure: pair %.0f ms + channel %.0f ms without a flood; pair %.0f ms + channel %.0f ms "
                     + "under a flood of %d connections from 127.0.0.2",
                     quiet.pair * 1000, quiet.channel * 1000, flooded.pair * 1000, flooded.channel * 1000, connected))
        print("flood counters: \(flooded.counters.filter { $0.key.hasPrefix("connections.") || $0.key.hasPrefix("handshakes.refused") })")
        // The flood was real: hundreds of connections, refused, timed out or evicted.
        #expect(connected >= 200, "the flood opened \(connected) connections")
        let turnedAway = ["connections.rate_limited", "connections.over_source_cap", "connections.timed_out", "connections.evicted",
                          "connections.bad_preamble"].map { flooded.counters[$0] ?? 0 }.reduce(0, +)
        #expect(turnedAway >= 100, "the daemons turned the flood away: \(flooded.counters)")
        #expect(flooded.floods.allSatisfy { $0.replyBytes == 0 }, "the flooder got no byte back")
        // As a user sees it: pairing and the channel take the usual time (ChannelProcessTests:
        // channel within 2 s of pairing), not the flood's 5 s slot time.
        #expect(flooded.channel <= 2, "channel \(flooded.channel) s after pairing under the flood")
        #expect(flooded.pair <= max(3, 3 * quiet.pair), "pairing took \(flooded.pair) s under the flood, \(quiet.pair) s without")
    }
}
