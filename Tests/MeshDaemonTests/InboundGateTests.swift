import Testing
import MeshCore
import MeshCrypto
@testable import MeshDaemon

/// `InboundGate`, the bounds of the node's inbound path to the delivery router, without a node.
@Suite("Inbound gate")
struct InboundGateTests {
    static let peer = DeviceID(publicKey: X25519KeyPair.generate().publicKey)

    static func message(_ path: PingPath, bytes: Int = 1) -> InboundChannelMessage {
        InboundChannelMessage(peer: peer, path: path, bytes: Array(repeating: 7, count: bytes))
    }

    /// Admits through a copy-free call outside `#expect` (whose expansion cannot mutate).
    static func admit(_ gate: inout InboundGate, _ message: InboundChannelMessage) -> InboundGate.Admission { gate.admit(message) }
    static func admit(_ gate: inout InboundGate, _ event: PeerChannelEvent) -> Bool { gate.admit(event) }
    static func change(_ gate: inout InboundGate, installed: Bool) -> [HeldInbound] { gate.handlerChanged(installed: installed) }

    @Test func withoutAHandlerMessagesAndEventsAreHeldInOrderForTheNextOne() {
        var gate = InboundGate()
        #expect(Self.admit(&gate, Self.message(.stream)) == .held)
        #expect(Self.admit(&gate, .activated(Self.peer)) == false)
        #expect(Self.admit(&gate, Self.message(.datagram, bytes: 2)) == .held)
        #expect(gate.isFull == false)
        let held = gate.handlerChanged(installed: true)
        #expect(held.count == 3)
        guard case .message(let first) = held[0], case .event(.activated) = held[1], case .message(let third) = held[2] else {
            Issue.record("held out of order: \(held)")
            return
        }
        #expect(first.path == .stream && third.bytes.count == 2)
        #expect(Self.change(&gate, installed: true).isEmpty)
        #expect(Self.admit(&gate, Self.message(.stream)) == .handOut)
        #expect(Self.admit(&gate, .activated(Self.peer)))
    }

    @Test func heldMessagesAreBoundedWithoutAHandler() {
        var gate = InboundGate()
        for _ in 0..<InboundGate.messageLimit { #expect(Self.admit(&gate, Self.message(.stream)) == .held) }
        #expect(Self.admit(&gate, Self.message(.stream)) == .dropped)
        #expect(Self.admit(&gate, .activated(Self.peer)) == false)
        #expect(Self.change(&gate, installed: true).count == InboundGate.messageLimit)
    }

    @Test func datagramsAreDroppedAtHalfTheQueueAndStreamReadersPauseAtThreeQuarters() {
        var gate = InboundGate()
        _ = gate.handlerChanged(installed: true)
        for _ in 0..<(InboundGate.messageLimit / 2) { gate.handlerQueued(bytes: 1) }
        #expect(Self.admit(&gate, Self.message(.datagram)) == .dropped)
        #expect(Self.admit(&gate, Self.message(.stream)) == .handOut)
        #expect(gate.isFull == false)
        for _ in 0..<(InboundGate.messageLimit / 4) { gate.handlerQueued(bytes: 1) }
        #expect(gate.isFull)
        gate.handlerConsumed(bytes: 1)
        #expect(gate.isFull == false)
        gate.handlerConsumed(bytes: 1)
        #expect(Self.admit(&gate, Self.message(.datagram)) == .dropped)
    }

    @Test func bytesBoundTheQueueTooAndANewHandlerStartsEmpty() {
        var gate = InboundGate()
        _ = gate.handlerChanged(installed: true)
        gate.handlerQueued(bytes: InboundGate.byteLimit / 2)
        #expect(Self.admit(&gate, Self.message(.datagram)) == .dropped)
        #expect(gate.isFull == false)
        gate.handlerQueued(bytes: InboundGate.byteLimit / 2)
        #expect(gate.isFull)
        // Consuming more than was counted never goes below zero.
        gate.handlerConsumed(bytes: InboundGate.byteLimit * 2)
        #expect(gate.queuedBytes == 0 && gate.queued == 1)
        gate.handlerQueued(bytes: InboundGate.byteLimit)
        #expect(Self.change(&gate, installed: false).isEmpty)
        #expect(gate.isFull == false && gate.queued == 0 && gate.queuedBytes == 0)
        // Without a handler nothing makes room, so readers never pause.
        #expect(Self.admit(&gate, Self.message(.stream, bytes: 100)) == .held)
    }
}
