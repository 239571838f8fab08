import Foundation
import MeshLocalAPI
import NIOCore
import SessionMeshClient
import Testing

/// Random malformed input, reproducible from `MESH_PROPERTY_SEED_BASE`.
@Suite("Local API fuzz")
struct LocalAPIFuzzTests {
    /// SplitMix64: small, seedable, good enough to pick bytes.
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static func seed(_ offset: UInt64) -> UInt64 {
        let base = ProcessInfo.processInfo.environment["MESH_PROPERTY_SEED_BASE"].flatMap(UInt64.init) ?? 0x5E55_10E5
        print("LocalAPIFuzzTests seed base \(base) (set MESH_PROPERTY_SEED_BASE to reproduce)")
        return base &+ offset
    }

    /// A frame-ish byte string: a valid header with one field broken, or a valid header over random
    /// JSON-ish bytes, or plain noise.
    static func malformed(_ rng: inout SeededGenerator) -> [UInt8] {
        var header: [UInt8] = [0x53, 0x4D, 1, 1, 0, UInt8.random(in: 1...0x20, using: &rng), 0, 0, 0, 0, 0, 9]
        let body = (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        switch Int.random(in: 0..<5, using: &rng) {
        case 0: header[Int.random(in: 0...3, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
        case 1: header[6] = UInt8.random(in: 1...255, using: &rng)
        case 2: return (0..<Int.random(in: 1...80, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        default: break
        }
        let length = UInt32(body.count)
        return header + withUnsafeBytes(of: length.bigEndian, Array.init) + body
    }

    @Test func theDecoderNeverCrashesOnRandomBytes() {
        var rng = SeededGenerator(state: Self.seed(1))
        for _ in 0..<20_000 {
            var buffer = ByteBuffer(bytes: Self.malformed(&rng))
            while let frame = try? LocalAPIFrameDecoder.parse(&buffer, maximumBodyLength: 1024), frame.wireLength > 0 {}
        }
    }

    @Test func theServerKeepsServingOthersThroughRandomMalformedClients() async throws {
        try await withTestServer { test in
            let good = try await MeshClient.connect(socketPath: test.socketPath)
            var rng = SeededGenerator(state: Self.seed(2))
            for round in 0..<150 {
                let bad = try RawSocket(path: test.socketPath, receiveTimeout: 2)
                bad.send(Self.malformed(&rng))
                bad.shutdownWrite()
                #expect(try await bad.closesSoon(), "round \(round): the connection stayed open")
                if round % 10 == 0 { #expect(try await good.status().name == "fake") }
            }
            #expect(try await good.peers().count == 1)
            await good.close()
        }
    }
}
