import Foundation
import MeshCrypto
import Testing
@testable import MeshDaemon

/// Every damaged message at every step ends the attempt with a `PairingError` — never a trap,
/// never a different error type, never a pairing.
@Suite struct PairingProtocolMalformedMessageTests {
    /// State machines positioned just before message `step` (1...4) is received, and the honest
    /// message for that step. Copies of the receivers are fresh attempts (value types).
    struct Position {
        var step: Int
        var joiner: PairingJoiner
        var responder: PairingResponder
        var message: [UInt8]
    }

    static func position(_ step: Int) throws -> Position {
        let code = PairingCode.generate()
        var joiner = try PairingJoiner(code: code, identity: PairingFixture.identity("joiner"))
        var responder = PairingResponder(code: code, identity: PairingFixture.identity("inviter"))
        let m1 = try joiner.start()
        if step == 1 { return Position(step: 1, joiner: joiner, responder: responder, message: m1) }
        guard case .send(let m2) = try responder.receive(m1) else { throw PairingFixture.Unexpected("no m2") }
        if step == 2 { return Position(step: 2, joiner: joiner, responder: responder, message: m2) }
        guard case .send(let m3) = try joiner.receive(m2) else { throw PairingFixture.Unexpected("no m3") }
        if step == 3 { return Position(step: 3, joiner: joiner, responder: responder, message: m3) }
        guard case .finished(_, let m4?) = try responder.receive(m3) else { throw PairingFixture.Unexpected("no m4") }
        return Position(step: 4, joiner: joiner, responder: responder, message: m4)
    }

    /// Feeds `candidate` as message `position.step` and, for message 1, carries the attempt on
    /// to the joiner (a changed hello is only noticed there). Returns the error that ended the
    /// attempt, or nil (and records an issue) when it did not fail as it must.
    @discardableResult
    static func failure(at position: Position, with candidate: [UInt8],
                        sourceLocation: SourceLocation = #_sourceLocation) -> PairingError? {
        var joiner = position.joiner
        var responder = position.responder
        do {
            switch position.step {
            case 1:
                if case .send(let m2) = try responder.receive(candidate) { _ = try joiner.receive(m2) }
            case 2, 4:
                _ = try joiner.receive(candidate)
            default:
                _ = try responder.receive(candidate)
            }
        } catch let error as PairingError {
            return error
        } catch {
            Issue.record("message \(position.step): non-pairing error \(error)", sourceLocation: sourceLocation)
            return nil
        }
        Issue.record("message \(position.step): damaged message of \(candidate.count) bytes was accepted",
                     sourceLocation: sourceLocation)
        return nil
    }

    @Test(arguments: 1 ... 4) func everyTruncationIsMalformed(step: Int) throws {
        let position = try Self.position(step)
        for length in 0 ..< position.message.count {
            let error = Self.failure(at: position, with: Array(position.message.prefix(length)))
            #expect(error?.code == .malformed)
        }
    }

    @Test(arguments: 1 ... 4) func trailingAndOversizedBytesAreMalformed(step: Int) throws {
        let position = try Self.position(step)
        let extra = Self.failure(at: position, with: position.message + [0])
        #expect(extra?.code == .malformed)
        let oversized = Self.failure(at: position, with: position.message + [UInt8](repeating: 0xAB, count: 300))
        #expect(oversized?.code == .malformed)
        let huge = Self.failure(at: position, with: [UInt8](repeating: 1, count: 65_535))
        #expect(huge?.code == .malformed)
        #expect(Self.failure(at: position, with: [])?.code == .malformed)
    }

    @Test(arguments: 1 ... 4) func wrongVersionOrTypeIsRefused(step: Int) throws {
        let position = try Self.position(step)
        for version in [0, 1, 3, 255] as [UInt8] where version != PairingProtocol.version {
            var candidate = position.message
            candidate[0] = version
            #expect(Self.failure(at: position, with: candidate) == .unsupportedVersion)
        }
        for type in [0, 1, 2, 3, 4, 5, 255] as [UInt8] where type != UInt8(step) {
            var candidate = position.message
            candidate[1] = type
            #expect(Self.failure(at: position, with: candidate)?.code == .protocolViolation)
        }
    }

    @Test(arguments: 1 ... 4) func everySingleBitFlipEndsTheAttempt(step: Int) throws {
        let position = try Self.position(step)
        for index in position.message.indices {
            for bit in 0 ..< 8 {
                var candidate = position.message
                candidate[index] ^= UInt8(1 << bit)
                Self.failure(at: position, with: candidate)
            }
        }
    }

    @Test func seededRandomMutationsNeverTrapOrPair() throws {
        var generator = SeededGenerator(seed: SeededGenerator.seed(for: "seededRandomMutationsNeverTrapOrPair"))
        var counts: [String: Int] = [:]
        for step in 1 ... 4 {
            let position = try Self.position(step)
            var tried = 0
            for _ in 0 ..< 400 {
                let candidate = Self.mutate(position.message, step: step, using: &generator)
                guard candidate != position.message else { continue }
                tried += 1
                let error = Self.failure(at: position, with: candidate)
                counts["\(error.map { "\($0.code)" } ?? "ACCEPTED")", default: 0] += 1
            }
            #expect(tried > 300)
        }
        print("seededRandomMutationsNeverTrapOrPair: outcomes \(counts.sorted { $0.key < $1.key })")
    }

    static func mutate(_ message: [UInt8], step: Int, using rng: inout SeededGenerator) -> [UInt8] {
        var bytes = message
        for _ in 0 ..< Int.random(in: 1 ... 3, using: &rng) {
            switch Int.random(in: 0 ..< 8, using: &rng) {
            case 0 where !bytes.isEmpty:
                bytes[Int.random(in: bytes.indices, using: &rng)] ^= UInt8(1 << Int.random(in: 0 ..< 8, using: &rng))
            case 1 where !bytes.isEmpty:
                bytes[Int.random(in: bytes.indices, using: &rng)] = UInt8.random(in: 0 ... 255, using: &rng)
            case 2:
                bytes = Array(bytes.prefix(Int.random(in: 0 ... bytes.count, using: &rng)))
            case 3:
                bytes += (0 ..< Int.random(in: 1 ... 300, using: &rng)).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
            case 4:
                bytes.insert(UInt8.random(in: 0 ... 255, using: &rng), at: Int.random(in: 0 ... bytes.count, using: &rng))
            case 5 where !bytes.isEmpty:
                bytes.remove(at: Int.random(in: bytes.indices, using: &rng))
            case 6 where !bytes.isEmpty:
                let start = Int.random(in: bytes.indices, using: &rng)
                let end = Int.random(in: start ... bytes.count, using: &rng)
                bytes.replaceSubrange(start ..< end, with: (start ..< end).map { _ in UInt8.random(in: 0 ... 255, using: &rng) })
            default:
                let length = Int.random(in: 0 ... 300, using: &rng)
                bytes = (0 ..< length).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
                if length >= 2, Bool.random(using: &rng) { bytes[0] = PairingProtocol.version; bytes[1] = UInt8(step) }
            }
        }
        return bytes
    }
}
