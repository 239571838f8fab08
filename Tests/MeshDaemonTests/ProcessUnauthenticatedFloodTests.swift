import Foundation
import Testing

/// A hostile host on the LAN (here 127.0.0.2) floods two real daemons with idle and garbage
/// connections, among them pairing connections whose first message is missing, garbage, empty,
/// truncated or of a wrong version; the daemons on 127.0.0.1 still pair by code and get their
/// channel as fast as without the flood, the garbage costs the live code no attempt, and the
/// flooder never gets a byte back.
@Suite("meshd under a flood of unauthenticated connections", .serialized,
       .enabled(if: ChildProcess.executable("meshd") != nil && ChildProcess.executable("meshctl") != nil,
                "meshd/meshctl are not built (run `swift build` first)"))
struct ProcessUnauthenticatedFloodTests {
    struct Run {
        /// Seconds from starting `meshctl pair` to both sides paired, less the time the code
        /// was left live for the flood before the joiner typed it.
        var pair: Double
        /// Seconds from paired to both channels active.
        var channel: Double
        var floods: [ConnectionFlood.Figures]
        /// Both daemons' counters, summed.
        var counters: [String: UInt64]
        /// The inviter's `pairing.hellos_malformed` rise while its code was live, before the join.
        var malformedWhileLive: UInt64
        /// The device the inviter says it paired with, and the joiner's own device id.
        var pairedDeviceID: String?
        var joinerDeviceID: String
    }

    /// The inviter's failed attempts that end a code (`PairingInvitationState`'s default).
    static let attemptsPerCode: UInt64 = 3

    static func counters(_ daemon: DaemonProcess) async throws -> [String: UInt64] {
        ((try await daemon.status()["counters"] as? [String: Any]) ?? [:]).mapValues { ($0 as? NSNumber)?.uint64Value ?? 0 }
    }

    /// Pairs a fresh pair of daemons (alpha invites, beta joins). `flood` runs around the
    /// pairing when given; then the code stays live, before beta joins, until alpha turned
    /// away twice as many malformed first pairing messages as failed attempts end a code.
    func pairAndConnect(label: String, flood seed: UInt64?) async throws -> Run {
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
            // Let the flood reach its steady state: every slot 127.0.0.2 may hold is held, so
            // both daemons turn its further connections away.
            for daemon in [a, b] {
                try await waitUntil("\(daemon.name) turns the flood's extra connections away", timeout: 10) {
                    let counters = try await Self.counters(daemon)
                    return (counters["connections.over_source_cap"] ?? 0) + (counters["connections.rate_limited"] ?? 0) > 0
                }
            }
        }
        var figures: [ConnectionFlood.Figures] = []
        do {
            let started = Date()
            var waited = 0.0
            var malformedWhileLive: UInt64 = 0
            let result = try await a.pair(with: b, whileCodeIsLive: seed == nil ? nil : {
                let waitStarted = Date()
                let before = try await Self.counters(a)["pairing.hellos_malformed"] ?? 0
                // Bounded: the assertions below say what was missing.
                try? await waitUntil("the flood's malformed hellos", timeout: 15) {
                    malformedWhileLive = (try await Self.counters(a)["pairing.hellos_malformed"] ?? 0) - before
                    return malformedWhileLive >= 2 * Self.attemptsPerCode
                }
                waited = Date().timeIntervalSince(waitStarted)
            })
            let paired = Date()
            try await a.waitForChannel(idB, timeout: 5)
            try await b.waitForChannel(idA, timeout: 5)
            let active = Date()
            var counters: [String: UInt64] = [:]
            for daemon in [a, b] {
                for (name, value) in try await Self.counters(daemon) { counters[name, default: 0] += value }
            }
            for flood in floods { figures.append(await flood.stop()) }
            return Run(pair: paired.timeIntervalSince(started) - waited, channel: active.timeIntervalSince(paired),
                       floods: figures, counters: counters, malformedWhileLive: malformedWhileLive,
                       pairedDeviceID: (result.inviter["paired"] as? [String: Any])?["deviceID"] as? String, joinerDeviceID: idB)
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
        let pairingPreambles = flooded.floods.map(\.pairingPreambles).reduce(0, +)
        let malformedSent = flooded.floods.map(\.malformedHellos).reduce(0, +)
        print("pairing-kind flood connections: \(pairingPreambles), \(malformedSent) of them sent an empty, truncated or "
              + "wrong-version first message; the inviter turned away \(flooded.malformedWhileLive) malformed ones while its code "
              + "was live, before the join")
        print("flood counters: \(flooded.counters.filter { $0.key.hasPrefix("connections.") || $0.key.hasPrefix("handshakes.refused") || $0.key.hasPrefix("pairing.") })")
        // The flood was real: hundreds of connections, refused, timed out or evicted.
        #expect(connected >= 200, "the flood opened \(connected) connections")
        let turnedAway = ["connections.rate_limited", "connections.over_source_cap", "connections.timed_out", "connections.evicted",
                          "connections.bad_preamble"].map { flooded.counters[$0] ?? 0 }.reduce(0, +)
        #expect(turnedAway >= 100, "the daemons turned the flood away: \(flooded.counters)")
        #expect(flooded.floods.allSatisfy { $0.replyBytes == 0 }, "the flooder got no byte back")
        // Pairing-kind garbage reached the inviter while its code was live (more than the
        // failed attempts that end a code), and it charged the code nothing: the code still
        // paired the right device, and neither daemon counted a failed or refused attempt.
        #expect(flooded.malformedWhileLive >= 2 * Self.attemptsPerCode,
                "the inviter saw \(flooded.malformedWhileLive) malformed first pairing messages while its code was live")
        #expect((flooded.counters["pairing.hellos_malformed"] ?? 0) >= flooded.malformedWhileLive)
        #expect(flooded.pairedDeviceID == flooded.joinerDeviceID, "the inviter paired \(flooded.pairedDeviceID ?? "nothing")")
        #expect(flooded.counters["pairing.attempts_failed"] == 0, "failed attempts: \(flooded.counters)")
        #expect(flooded.counters["pairing.attempts_refused"] == 0, "refused attempts: \(flooded.counters)")
        #expect(flooded.counters["pairings.completed"] == 2, "each side stored one pairing: \(flooded.counters)")
        // As a user sees it: pairing and the channel take the usual time (ChannelProcessTests:
        // channel within 2 s of pairing), not the flood's 5 s slot time.
        #expect(flooded.channel <= 2, "channel \(flooded.channel) s after pairing under the flood")
        #expect(flooded.pair <= max(3, 3 * quiet.pair), "pairing took \(flooded.pair) s under the flood, \(quiet.pair) s without")
    }
}
