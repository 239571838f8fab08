import Testing
@testable import MeshDaemon

/// Random, truncated and bit-flipped relay messages: the parser and the receiver never trap,
/// and what they accept stays within the receiver's limits.
@Suite("Relay envelope fuzzing")
struct RelayEnvelopeFuzzTests {
    @Test func randomAndMutatedMessagesNeverTrapAndStateStaysBounded() {
        let seed = SeededGenerator.seed(for: "RelayEnvelopeFuzzTests.randomAndMutatedMessagesNeverTrapAndStateStaysBounded")
        var random = SeededGenerator(seed: seed)
        let limits = RelayReceiver.Limits(maximumPaths: 3, window: 8, maximumBufferedBytes: 4096, rememberedClosedPaths: 4)
        var receiver = RelayReceiver(limits: limits)
        let seeds: [[UInt8]] = [
            RelayEnvelope.stream(RelayPathID(rawValue: 1), sequence: 0, data: [1, 2, 3]).encode()!,
            RelayEnvelope.stream(RelayPathID(rawValue: 2), sequence: 5, data: Array(repeating: 9, count: 700)).encode(padding: .buckets)!,
            RelayEnvelope.close(RelayPathID(rawValue: 1), sequence: 1).encode()!,
            RelayEnvelope.unnumbered(.datagram, payload: [1]).encode(padding: .buckets)!,
            RelayEnvelope.unnumbered(.mailboxItem, payload: [4, 4]).encode()!,
        ]
        var accepted = 0
        for _ in 0..<20_000 {
            var bytes = seeds.randomElement(using: &random)!
            switch Int.random(in: 0..<5, using: &random) {
            case 0: bytes = (0..<Int.random(in: 0..<80, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            case 1: bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &random)))
            case 2:
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    let index = Int.random(in: 0..<bytes.count, using: &random)
                    bytes[index] ^= 1 << UInt8.random(in: 0..<8, using: &random)
                }
            case 3:
                // A plausible header with random small numbers, so the state machine gets exercised.
                bytes[1] = UInt8.random(in: 1...2, using: &random)
                bytes[9] = UInt8.random(in: 1...5, using: &random)
                bytes[17] = UInt8.random(in: 0...12, using: &random)
            default: bytes += (0..<Int.random(in: 0..<8, using: &random)).map { _ in UInt8.random(in: 0...1, using: &random) }
            }
            if (try? RelayEnvelope(decoding: bytes)) != nil { accepted += 1 }
            _ = receiver.receive(bytes)
            #expect(receiver.paths.count <= limits.maximumPaths)
            #expect(receiver.bufferedBytes <= limits.maximumBufferedBytes)
            #expect(receiver.bufferedBytes == receiver.paths.values.reduce(0) { $0 + $1.held.values.reduce(0) { $0 + $1.payload.count } })
            #expect(receiver.paths.values.allSatisfy { $0.held.count < Int(limits.window) })
        }
        #expect(accepted > 0)
        #expect(receiver.counters.malformed > 0)
    }
}
