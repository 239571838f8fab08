import Synchronization
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

    @Test func pausedStreamReadersResumeOnceTheQueueIsBelowItsBoundsOrWhenReleased() {
        var gate = InboundGate()
        _ = gate.handlerChanged(installed: true)
        let fullAt = InboundGate.messageLimit * 3 / 4
        for _ in 0..<fullAt { gate.handlerQueued(bytes: 1) }
        #expect(gate.isFull)
        let resumed = Mutex<[Int]>([])
        for reader in 1...3 { gate.pause { resumed.withLock { $0.append(reader) } } }
        #expect(gate.pausedReaders == 3)
        // Queued again while still full: nobody resumes.
        gate.handlerQueued(bytes: 1)
        let stillFull = gate.handlerConsumed(bytes: 1)
        #expect(stillFull.isEmpty)
        #expect(gate.pausedReaders == 3)
        // One below the bound: every paused reader, in the order they paused.
        let released = gate.handlerConsumed(bytes: 1)
        #expect(released.count == 3 && gate.pausedReaders == 0)
        for resume in released { resume() }
        #expect(resumed.withLock { $0 } == [1, 2, 3])
        let nobodyPaused = gate.handlerConsumed(bytes: 1)
        #expect(nobodyPaused.isEmpty)

        // Readers paused when the handler goes away (or the node stops) are all handed back.
        for _ in 0..<fullAt { gate.handlerQueued(bytes: 1) }
        gate.pause { resumed.withLock { $0.append(4) } }
        #expect(Self.change(&gate, installed: false).isEmpty)
        let rest = gate.releaseReaders()
        #expect(rest.count == 1 && gate.pausedReaders == 0)
        for resume in rest { resume() }
        #expect(resumed.withLock { $0 } == [1, 2, 3, 4])
        let again = gate.releaseReaders()
        #expect(again.isEmpty)
    }
}
