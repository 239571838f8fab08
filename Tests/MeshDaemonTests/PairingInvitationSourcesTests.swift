import Foundation
import Logging
import MeshCore
import MeshCrypto
import MeshDiscovery
import Testing
@testable import MeshDaemon

/// Who can burn a live code and how many guesses it gets (`PairingInvitationState` per source),
/// and which advertisers of a hint a joiner tries (`PairingByCode`).
@Suite("Pairing: sources and fake advertisers")
struct PairingInvitationSourcesTests {
    let alice = PairingFixture.identity("alice")

    @Test func oneSourceCannotInvalidateTheCodeAndAnotherStillPairs() throws {
        var invitation = PairingInvitationState(code: PairingCode.generate(), issuedAt: PairingFixture.start, lifetime: 300)
        for _ in 1 ... 2 {
            let attempt = try invitation.beginAttempt(at: PairingFixture.start, identity: alice, source: "198.18.0.3").attempt
            let counted = invitation.attemptFailed(attempt, reachedExchange: true)
            #expect(counted)
        }
        var refused = 0
        for _ in 1 ... 100 {
            #expect(throws: MeshError.pairingBusy) {
                _ = try invitation.beginAttempt(at: PairingFixture.start, identity: alice, source: "198.18.0.3")
            }
            refused += 1
        }
        #expect(invitation.state == .live && invitation.failedAttempts == 2)
        print("figure: one source: 2 guesses tested, the next \(refused) attempts refused, the code stays live")
        let real = try invitation.beginAttempt(at: PairingFixture.start, identity: alice, source: "198.18.0.4").attempt
        let paired = invitation.attemptSucceeded(real)
        #expect(paired)
    }

    @Test func attemptsThatNeverReachedTheExchangeCostNothing() throws {
        var invitation = PairingInvitationState(code: PairingCode.generate(), issuedAt: PairingFixture.start, lifetime: 300)
        for index in 1 ... 50 {
            let attempt = try invitation.beginAttempt(at: PairingFixture.start, identity: alice, source: "198.18.0.\(index % 5)").attempt
            let ended = invitation.attemptFailed(attempt, reachedExchange: false)
            #expect(ended)
        }
        #expect(invitation.failedAttempts == 0 && invitation.state == .live && invitation.isUsable(at: PairingFixture.start))
    }

    @Test func failuresFromThreeSourcesInvalidateAfterAtMostFiveGuesses() throws {
        var invitation = PairingInvitationState(code: PairingCode.generate(), issuedAt: PairingFixture.start, lifetime: 300)
        // An attacker with many sources, trying each as often as it may, concurrently too.
        var running: [PairingAttemptID] = []
        for source in 1 ... 10 {
            for _ in 1 ... 3 {
                if let responder = try? invitation.beginAttempt(at: PairingFixture.start, identity: alice, source: "198.18.0.\(source)") {
                    running.append(responder.attempt)
                }
            }
        }
        #expect(running.count == 6, "3 sources × 2 attempts may run at once")
        for attempt in running { invitation.attemptFailed(attempt) }
        #expect(invitation.state == .invalidated)
        // Sequentially: two sources spend their share, the third source's first failure ends it.
        var sequential = PairingInvitationState(code: PairingCode.generate(), issuedAt: PairingFixture.start, lifetime: 300)
        var guesses = 0
        for source in 1 ... 10 {
            while sequential.state == .live,
                  let responder = try? sequential.beginAttempt(at: PairingFixture.start, identity: alice, source: "198.18.1.\(source)") {
                sequential.attemptFailed(responder.attempt)
                guesses += 1
            }
        }
        #expect(guesses == 5 && sequential.state == .invalidated)
        print("figure: guesses tested before the code is invalidated: \(guesses) one after another, \(running.count) at once")
    }

    /// How a service advertising the hint answers a join.
    enum Fake { case refuses, unreachable, silent, guesses, real }

    /// Runs `PairingByCode.pair` over `services` (name, behaviour; one port each) with the
    /// generator seeded `seed`: the services joined in order, and the outcome.
    static func run(_ services: [(String, Fake)], seed: UInt64) async -> (joined: [String], error: MeshError?) {
        let list = services.enumerated().map { index, entry in
            DiscoveredService(instanceName: entry.0, source: .mdns, protocolVersion: 1, deviceIDHint: nil, pairingHint: "7K",
                              hostName: entry.0 + ".local",
                              addresses: [DiscoveredAddress(host: "198.18.0.50", port: UInt16(47000 + index), family: .ipv4)])
        }
        var joined: [String] = []
        do {
            _ = try await PairingByCode.pair(hint: "7K", logger: Logger(label: "test"), random: SeededGenerator(seed: seed),
                                             candidates: { tried in list.filter { !tried.contains($0.instanceName) } }) { endpoint in
                let (name, fake) = services[endpoint.port - 47000]
                joined.append(name)
                switch fake {
                case .refuses, .silent: throw MeshError(.pairingRefused, "the daemon ended the pairing")
                case .unreachable: throw MeshError.unreachable(endpoint.description, "connection refused")
                case .guesses: throw MeshError.pairingFailed
                case .real: return PairedDevice(deviceID: "real", name: name, verification: "0000 0000")
                }
            }
            return (joined, nil)
        } catch {
            return (joined, error as? MeshError)
        }
    }

    @Test func advertisersThatSortFirstCannotMakePairingByCodeFail() async {
        // Seven fakes whose names sort first and that never answer with a CPace share:
        // none counts as a guess, so the real inviter is reached, whatever the order.
        var fakes: [(String, Fake)] = (0 ..< 6).map { ("0-fake-\($0)", Fake.refuses) }
        fakes += [("0-fake-u", .unreachable)]
        let seed = SeededGenerator.seed(for: "advertisersThatSortFirst")
        for round in UInt64(0) ..< 20 {
            let (joined, error) = await Self.run(fakes + [("z-real", .real)], seed: seed &+ round)
            #expect(error == nil && joined.last == "z-real", "round \(round): \(joined)")
        }
        // Two fakes that do answer with a share (a guess each): at most two are tested; in
        // random order the real one is reached first in some runs, never all fail by name.
        var paired = 0
        for round in UInt64(0) ..< 40 {
            let (joined, error) = await Self.run([("0-a", .guesses), ("0-b", .guesses), ("z-real", .real)], seed: seed &+ round)
            #expect(joined.filter { $0 != "z-real" }.count <= 2)
            if error == nil { paired += 1 } else { #expect(error?.kind == .inviterAmbiguous) }
        }
        #expect(paired > 0 && paired < 40)
        print("figure: 2 guessing fakes sorting first: \(paired)/40 pairings by code still succeeded (random order)")
    }

    @Test func atMostTwoGuessesAndEightServicesPerJoin() async {
        let guessing: [(String, Fake)] = (0 ..< 5).map { ("g-\($0)", Fake.guesses) }
        let (joined, error) = await Self.run(guessing, seed: 1)
        #expect(joined.count == 2 && error?.kind == .inviterAmbiguous)
        let silent: [(String, Fake)] = (0 ..< 12).map { ("s-\($0)", Fake.silent) }
        let (contacted, error2) = await Self.run(silent, seed: 1)
        #expect(contacted.count == PairingByCode.maximumInvitersContacted && error2?.kind == .inviterAmbiguous)
        #expect(error2?.message.contains("12 services") == true)
    }
}
