import Foundation
import MeshSimulation
import Testing

@Suite("Simulation checker")
struct SimulationCheckerTests {
    static func id(_ n: UInt8) -> UUID { UUID(uuid: (n, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 0)) }

    static func delivery(at ms: UInt64, inbox: Int64, redelivery: Bool = false, attachment: Int = 1) -> SimulationLedger.Delivery {
        SimulationLedger.Delivery(at: ms * 1_000_000, inboxID: inbox, redelivery: redelivery, attachment: attachment)
    }

    @Test("a second hand-out must carry the redelivery mark; a live realtime copy forgotten by a crash is excused")
    func duplicates() {
        var ledger = SimulationLedger(daemons: 2)
        var checker = SimulationChecker(daemons: 2)
        ledger.recordSend(Self.id(1), sender: 0, targets: [1], mode: 2, feature: "f", at: 0)
        ledger.recordDelivery(Self.id(1), to: 1, Self.delivery(at: 10, inbox: 5))
        #expect(checker.checkDelivery(Self.id(1), to: 1, Self.delivery(at: 20, inbox: 5, redelivery: true), ledger: ledger).isEmpty)
        let unmarked = checker.checkDelivery(Self.id(1), to: 1, Self.delivery(at: 20, inbox: 5), ledger: ledger)
        #expect(unmarked.map(\.invariant) == [.unmarkedDuplicate])

        ledger.recordSend(Self.id(2), sender: 0, targets: [1], mode: 1, feature: "f", at: 0)
        ledger.recordDelivery(Self.id(2), to: 1, Self.delivery(at: 100, inbox: 0))
        ledger.recordCrash(1, at: 150_000_000)
        #expect(checker.checkDelivery(Self.id(2), to: 1, Self.delivery(at: 400, inbox: 9), ledger: ledger).isEmpty)
        ledger.recordSend(Self.id(3), sender: 0, targets: [1], mode: 1, feature: "f", at: 0)
        ledger.recordDelivery(Self.id(3), to: 1, Self.delivery(at: 500, inbox: 0))
        #expect(checker.checkDelivery(Self.id(3), to: 1, Self.delivery(at: 900, inbox: 9), ledger: ledger).map(\.invariant)
            == [.unmarkedDuplicate])
    }

    @Test("an acknowledged item handed out again is a violation, marked or not")
    func acknowledged() {
        var ledger = SimulationLedger(daemons: 2)
        var checker = SimulationChecker(daemons: 2)
        ledger.recordDelivery(Self.id(1), to: 1, Self.delivery(at: 1, inbox: 3))
        ledger.recordAck([Self.id(1)], at: 1)
        let found = checker.checkDelivery(Self.id(1), to: 1, Self.delivery(at: 2, inbox: 3, redelivery: true), ledger: ledger)
        #expect(found.map(\.invariant) == [.acknowledgedRedelivered])
    }

    @Test("reliable items must first arrive in send order per sender and feature; ambiguous sends are exempt")
    func order() {
        var ledger = SimulationLedger(daemons: 3)
        var checker = SimulationChecker(daemons: 3)
        for n: UInt8 in 1...4 { ledger.recordSend(Self.id(n), sender: 0, targets: [1, 2], mode: 2, feature: "f", at: 0) }
        ledger.markAmbiguous(Self.id(3))
        #expect(checker.checkDelivery(Self.id(2), to: 1, Self.delivery(at: 1, inbox: 1), ledger: ledger).isEmpty)
        ledger.recordDelivery(Self.id(2), to: 1, Self.delivery(at: 1, inbox: 1))
        #expect(checker.checkDelivery(Self.id(1), to: 2, Self.delivery(at: 1, inbox: 1), ledger: ledger).isEmpty)
        #expect(checker.checkDelivery(Self.id(1), to: 1, Self.delivery(at: 2, inbox: 2), ledger: ledger).map(\.invariant)
            == [.reliableOrder])
        ledger.recordDelivery(Self.id(4), to: 1, Self.delivery(at: 3, inbox: 4))
        _ = checker.checkDelivery(Self.id(4), to: 1, Self.delivery(at: 3, inbox: 4), ledger: ledger)
        #expect(checker.checkDelivery(Self.id(3), to: 1, Self.delivery(at: 4, inbox: 5), ledger: ledger).isEmpty)
    }

    @Test("snapshot reads never go back, never show an unpublished revision, and show the highest once healed")
    func snapshots() {
        var ledger = SimulationLedger(daemons: 2)
        let checker = SimulationChecker(daemons: 2)
        ledger.recordPublishAttempt(0, feature: "f", revision: 3)
        ledger.recordPublishConfirmed(0, feature: "f", revision: 2)
        func check(_ revision: UInt64?, previous: UInt64, healed: Bool) -> [SimulationViolation.Invariant] {
            checker.checkSnapshotRead(reader: 1, publisher: 0, feature: "f", revision: revision, previous: previous,
                                      healed: healed, ledger: ledger).map(\.invariant)
        }
        #expect(check(nil, previous: 0, healed: false).isEmpty)
        #expect(check(3, previous: 2, healed: true).isEmpty)
        #expect(check(4, previous: 0, healed: false) == [.snapshotRevision])
        #expect(check(1, previous: 2, healed: false) == [.snapshotRevision])
        #expect(check(1, previous: 0, healed: true) == [.snapshotRevision])
    }

    @Test("a session shown closed must never show open again on that daemon")
    func sessions() {
        var checker = SimulationChecker(daemons: 2)
        let session = Self.id(9)
        #expect(checker.checkSession(session, status: "open", at: 0).isEmpty)
        #expect(checker.checkSession(session, status: "closed", at: 0).isEmpty)
        #expect(checker.checkSession(session, status: "open", at: 1).isEmpty)
        #expect(checker.checkSession(session, status: "open", at: 0).map(\.invariant) == [.sessionRevived])
    }

    @Test("an anchor is rewritten by the clock offset: within the tolerance passes, beyond fails")
    func anchors() {
        let checker = SimulationChecker(daemons: 2)
        let skews = [0.0, 2.5]
        // The setter (d1) runs 2.5 s ahead: its start 102.5 is 100 on d0's clock.
        #expect(checker.checkAnchor(receivedStart: 100.001, at: 0, setStart: 102.5, setter: 1, skews: skews, tolerance: 0.002).isEmpty)
        #expect(checker.checkAnchor(receivedStart: 102.5, at: 0, setStart: 102.5, setter: 1, skews: skews, tolerance: 0.002)
            .map(\.invariant) == [.anchorDisagrees])
    }

    @Test("at the end, confirmed reliable items missing at a target and unacknowledged items not handed again are reported")
    func endState() {
        var ledger = SimulationLedger(daemons: 2)
        let checker = SimulationChecker(daemons: 2)
        ledger.recordSend(Self.id(1), sender: 0, targets: [1], mode: 2, feature: "f", at: 0)
        ledger.recordSend(Self.id(2), sender: 0, targets: [1], mode: 2, feature: "f", at: 0)
        ledger.confirmSend(Self.id(1))
        #expect(checker.checkNothingLost(ledger).map(\.invariant) == [.reliableLost])
        ledger.recordDelivery(Self.id(1), to: 1, Self.delivery(at: 1, inbox: 7, attachment: 1))
        #expect(checker.checkNothingLost(ledger).isEmpty)
        #expect(checker.checkUnacknowledgedReturned(ledger, finalAttachment: [5, 5]).map(\.invariant) == [.unacknowledgedLost])
        ledger.recordDelivery(Self.id(1), to: 1, Self.delivery(at: 9, inbox: 7, redelivery: true, attachment: 5))
        #expect(checker.checkUnacknowledgedReturned(ledger, finalAttachment: [5, 5]).isEmpty)
    }
}
