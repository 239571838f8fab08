import MeshCrypto
import Testing
@testable import MeshDaemon

/// Each refusal the node meets is counted under its documented `meshctl status` name.
@Suite("Node counters")
struct NodeCountersTests {
    static let peer = DeviceID(publicKey: X25519KeyPair.generate().publicKey)

    @Test("a refused channel handshake counts under its reason; a device unpaired meanwhile counts nothing")
    func handshakeRefusals() {
        let expected: [(HandshakeRefusal, String)] = [
            (.failed, "handshakes.failed"), (.unknownKey, "handshakes.refused.unknown_key"),
            (.busy, "handshakes.refused.busy"), (.replay, "handshakes.refused.replay"),
            (.future(Self.peer, warning: nil), "handshakes.refused.future"),
            (.future(Self.peer, warning: 3), "handshakes.refused.future"),
            (.lostSimultaneousConnect(Self.peer), "handshakes.simultaneous_resolved"),
        ]
        for (refusal, name) in expected {
            var counters = NodeCounters()
            counters.count(refusal)
            #expect(counters.dictionary[name] == 1, "\(refusal)")
            #expect(counters.dictionary.values.reduce(0, +) == 1, "\(refusal) counted once, under one name")
        }
        var counters = NodeCounters()
        counters.count(HandshakeRefusal.gone)
        #expect(counters.dictionary.values.allSatisfy { $0 == 0 })
    }

    @Test("a refused inbound connection counts under rate limit, per-source cap or total cap")
    func connectionRefusals() {
        let expected: [(ConnectionTable.Refusal, String)] = [
            (.rateLimited, "connections.rate_limited"), (.sourceFull, "connections.over_source_cap"),
            (.full, "connections.over_cap"),
        ]
        for (refusal, name) in expected {
            var counters = NodeCounters()
            counters.count(refusal)
            counters.count(refusal)
            #expect(counters.dictionary[name] == 2, "\(refusal)")
            #expect(counters.dictionary.values.reduce(0, +) == 2)
        }
    }
}
