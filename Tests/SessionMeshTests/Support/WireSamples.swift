import Foundation
import SessionMesh

/// Random but valid wire messages, for round-trip and fuzz tests.
enum WireSamples {
    static func string(_ r: inout SessionSeededRandom, max: Int = 24) -> String {
        let alphabet = Array("abcXYZ019-_.:é漢🙂")
        return String((0..<Int.random(in: 0...max, using: &r)).map { _ in alphabet.randomElement(using: &r)! })
    }

    static func uuid(_ r: inout SessionSeededRandom) -> UUID {
        var ids = SessionEventIDGenerator(seed: r.next())
        return ids.next()
    }

    static func varintValue(_ r: inout SessionSeededRandom) -> UInt64 {
        switch Int.random(in: 0..<4, using: &r) {
        case 0: 0
        case 1: UInt64.random(in: 0...300, using: &r)
        case 2: UInt64.max - UInt64.random(in: 0...3, using: &r)
        default: r.next() >> UInt64.random(in: 0...63, using: &r)
        }
    }

    static func metadata(_ r: inout SessionSeededRandom) -> SessionSyncMetadata {
        SessionSyncMetadata(
            protocolVersion: Int.random(in: 0...3, using: &r), sessionID: uuid(&r), featureID: string(&r),
            sourcePeerID: string(&r), eventID: uuid(&r), sequence: varintValue(&r),
            causalTimestamp: Date(timeIntervalSinceReferenceDate: Double.random(in: -1e9...1e9, using: &r)),
            monotonicTimestamp: Bool.random(using: &r) ? Double.random(in: 0...1e6, using: &r) : nil,
            payloadType: string(&r),
            acknowledgedSequence: Bool.random(using: &r) ? varintValue(&r) : nil)
    }

    static func bytes(_ r: inout SessionSeededRandom, max: Int = 64) -> Data {
        Data((0..<Int.random(in: 0...max, using: &r)).map { _ in UInt8.random(in: 0...255, using: &r) })
    }

    static func message(_ r: inout SessionSeededRandom) -> SessionWireCodec.Message {
        switch Int.random(in: 0..<3, using: &r) {
        case 0:
            return .envelope(AnySessionSyncEnvelope(metadata: metadata(&r), payload: bytes(&r)))
        case 1:
            var reflected: [String: UInt64] = [:]
            for _ in 0..<Int.random(in: 0...5, using: &r) { reflected[string(&r, max: 8)] = varintValue(&r) }
            return .snapshot(AnySessionSyncSnapshot(metadata: metadata(&r), revision: varintValue(&r), reflectedSequences: reflected, state: bytes(&r)))
        default:
            return .snapshotRequest(SessionSnapshotRequest(
                protocolVersion: Int.random(in: 0...3, using: &r), sessionID: uuid(&r),
                featureID: Bool.random(using: &r) ? string(&r) : nil, requestingPeerID: string(&r),
                targetPeerID: Bool.random(using: &r) ? string(&r) : nil,
                expectedSequence: Bool.random(using: &r) ? varintValue(&r) : nil,
                receivedSequence: Bool.random(using: &r) ? varintValue(&r) : nil))
        }
    }
}
