import Foundation
import SessionMesh
import Testing

/// Feeds random and mutated inputs to the decoder: it must never trap, must only throw
/// `SessionWireError`, and anything it accepts must re-encode to exactly the same bytes.
/// MESH_FUZZ_ITERATIONS (default 100 000) and MESH_FUZZ_SEED (default 20261121) steer it.
@Suite("Wire codec robustness")
struct WireCodecRobustnessTests {
    @Test func randomAndMutatedInputsNeverTrap() throws {
        let seed = environmentInteger("MESH_FUZZ_SEED", default: 20_261_121)
        let iterations = Int(environmentInteger("MESH_FUZZ_ITERATIONS", default: 100_000))
        print("wire fuzz: seed \(seed), \(iterations) inputs (MESH_FUZZ_SEED / MESH_FUZZ_ITERATIONS)")
        var r = SessionSeededRandom(seed: seed)
        var corpus: [[UInt8]] = try (0..<64).map { _ in try SessionWireCodec.encode(WireSamples.message(&r)) }
        var accepted = 0, rejected: [SessionWireError.Code: Int] = [:]
        for i in 0..<iterations {
            let input = Self.input(i, &r, corpus: corpus)
            do {
                let message = try SessionWireCodec.decode(input)
                accepted += 1
                let again = try SessionWireCodec.encode(message)
                if again != input {
                    Issue.record("seed \(seed) input \(i): accepted non-canonical bytes \(input)")
                    return
                }
                if corpus.count < 256 { corpus.append(input) }
            } catch let error as SessionWireError {
                rejected[error.code, default: 0] += 1
            } catch {
                Issue.record("seed \(seed) input \(i): unexpected error type \(error)")
                return
            }
        }
        print("wire fuzz: \(accepted) accepted, rejected by code: \(rejected.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue)=\($0.value)" }.joined(separator: " "))")
        #expect(accepted + rejected.values.reduce(0, +) == iterations)
        #expect(rejected.count >= 8, "mutations should reach most error paths")
    }

    /// `decodeEnvelopeMetadata` (which skips the payload) against `decodeEnvelope` on the same
    /// random and mutated inputs: it accepts exactly what `decodeEnvelope` accepts, with the same
    /// metadata, and throws only `SessionWireError`.
    @Test func metadataOnlyDecodingAcceptsExactlyWhatTheFullDecoderAccepts() throws {
        let seed = environmentInteger("MESH_FUZZ_SEED", default: 20_261_121) &+ 1
        let iterations = Int(environmentInteger("MESH_FUZZ_ITERATIONS", default: 100_000)) / 2
        print("envelope metadata fuzz: seed \(seed), \(iterations) inputs (MESH_FUZZ_SEED + 1 / MESH_FUZZ_ITERATIONS ÷ 2)")
        var r = SessionSeededRandom(seed: seed)
        // Mostly envelopes, so that mutations land in their fields and payloads.
        let corpus: [[UInt8]] = try (0..<64).map { index in
            index % 4 == 0 ? try SessionWireCodec.encode(WireSamples.message(&r))
                           : try SessionWireCodec.encode(AnySessionSyncEnvelope(metadata: WireSamples.metadata(&r), payload: WireSamples.bytes(&r)))
        }
        var accepted = 0
        for i in 0..<iterations {
            let input = Self.input(i, &r, corpus: corpus)
            let full = Result { try SessionWireCodec.decodeEnvelope(input) }
            let metadata = Result { try SessionWireCodec.decodeEnvelopeMetadata(input) }
            switch (full, metadata) {
            case (.success(let envelope), .success(let read)):
                accepted += 1
                guard read == envelope.metadata else {
                    Issue.record("seed \(seed) input \(i): metadata \(read) differs from \(envelope.metadata)")
                    return
                }
            case (.failure, .failure(let error)):
                guard error is SessionWireError else {
                    Issue.record("seed \(seed) input \(i): unexpected error type \(error)")
                    return
                }
            default:
                Issue.record("seed \(seed) input \(i): decodeEnvelope \(full), decodeEnvelopeMetadata \(metadata) for \(input)")
                return
            }
        }
        print("envelope metadata fuzz: \(accepted) envelopes accepted by both, \(iterations - accepted) refused by both")
        #expect(accepted > iterations / 20, "the corpus should give valid envelopes too")
        #expect(accepted < iterations)
    }

    static func input(_ i: Int, _ r: inout SessionSeededRandom, corpus: [[UInt8]]) -> [UInt8] {
        var bytes = corpus[Int.random(in: 0..<corpus.count, using: &r)]
        switch i % 8 {
        case 0:  // pure random bytes, sometimes behind a valid header
            var random = (0..<Int.random(in: 0...96, using: &r)).map { _ in UInt8.random(in: 0...255, using: &r) }
            if Bool.random(using: &r) { random = [0x53, 0x4D, 0x01, UInt8.random(in: 1...3, using: &r)] + random }
            return random
        case 1:  // bit flips
            for _ in 0..<Int.random(in: 1...4, using: &r) where !bytes.isEmpty {
                bytes[Int.random(in: 0..<bytes.count, using: &r)] ^= 1 << UInt8.random(in: 0...7, using: &r)
            }
        case 2:  // byte replaced by an interesting value
            if !bytes.isEmpty { bytes[Int.random(in: 0..<bytes.count, using: &r)] = [0x00, 0x7F, 0x80, 0xFF, 0x01][Int.random(in: 0..<5, using: &r)] }
        case 3:  // truncation
            bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &r)))
        case 4:  // insertion
            bytes.insert(UInt8.random(in: 0...255, using: &r), at: Int.random(in: 0...bytes.count, using: &r))
        case 5:  // deletion of a run
            if !bytes.isEmpty {
                let start = Int.random(in: 0..<bytes.count, using: &r)
                bytes.removeSubrange(start..<min(bytes.count, start + Int.random(in: 1...8, using: &r)))
            }
        case 6:  // splice two messages
            let other = corpus[Int.random(in: 0..<corpus.count, using: &r)]
            bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &r))) + Array(other.suffix(Int.random(in: 0...other.count, using: &r)))
        default:  // a valid message, unchanged or with trailing garbage
            if Bool.random(using: &r) { bytes.append(UInt8.random(in: 0...255, using: &r)) }
        }
        return bytes
    }
}
