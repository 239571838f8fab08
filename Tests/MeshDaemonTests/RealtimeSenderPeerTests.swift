import Foundation
import MeshCrypto
import Testing
@testable import MeshDaemon

/// The realtime sender adapting each peer's ack deadline in that peer's state: an ack in time
/// shrinks the floor and is a delay sample, a late ack grows the floor, and a copy sent outside
/// `send` waits by the peer's floor and RTT. No actor, loop or socket.
struct RealtimeSenderPeerTests {
    static let ms: UInt64 = 1_000_000

    static func peers(_ ids: [DeviceID], floor: Double) -> [DeviceID: DeliveryPeerState] {
        var states: [DeviceID: DeliveryPeerState] = [:]
        for id in ids {
            var state = DeliveryPeerState(pendingCapacity: 4, retryInitial: 1)
            state.ackDeadlineFloor = floor
            states[id] = state
        }
        return states
    }

    @Test func anAckInTimeShrinksThatPeersFloorOnce() throws {
        var sender = RealtimeSenderTests.sender()
        let (x, y) = (RealtimeSenderTests.peer(1), RealtimeSenderTests.peer(2))
        var states = Self.peers([x, y], floor: 0.1)
        let item = RealtimeSenderTests.item()
        _ = sender.expectAck(item, from: x, floor: 0.1, roundTripNanoseconds: nil, sentAt: 0)
        _ = sender.expectAck(item, from: y, floor: 0.1, roundTripNanoseconds: nil, sentAt: 0)
        #expect(sender.acked(item.eventID, from: x, at: 8 * Self.ms, peers: &states))
        let acked = try #require(states[x])
        #expect(abs(acked.ackDeadlineFloor - 0.099) < 1e-12, "the floor shrinks 1 %")
        #expect(acked.ackDelay == 0.008, "the delay is the first sample")
        #expect(states[y]?.ackDeadlineFloor == 0.1 && states[y]?.ackDelay == nil, "the other peer's copy is untouched")
        #expect(!sender.acked(item.eventID, from: x, at: 9 * Self.ms, peers: &states), "a duplicate ack")
        #expect(abs((states[x]?.ackDeadlineFloor ?? 0) - 0.099) < 1e-12, "a duplicate changes nothing")
        #expect(sender.waits.deadline(of: item.eventID, for: y) != nil, "y's copy still waits")
    }

    @Test func aLateAckGrowsItsPeersFloorPerLateCopyUpToTheMaximum() {
        var sender = RealtimeSenderTests.sender()
        let (x, y) = (RealtimeSenderTests.peer(1), RealtimeSenderTests.peer(2))
        var states = Self.peers([x, y], floor: 0.1)
        let first = RealtimeSenderTests.item(), second = RealtimeSenderTests.item(), onTime = RealtimeSenderTests.item()
        _ = sender.expectAck(first, from: x, floor: 0.1, roundTripNanoseconds: nil, sentAt: 0)
        _ = sender.expectAck(second, from: x, floor: 0.1, roundTripNanoseconds: nil, sentAt: 0)
        _ = sender.expectAck(onTime, from: y, floor: 0.1, roundTripNanoseconds: nil, sentAt: 50 * Self.ms)
        let result = sender.expire(now: 120 * Self.ms, peers: &states)
        #expect(Set(result.expired.map(\.item.eventID)) == [first.eventID, second.eventID] && result.expired.count == 2)
        #expect(abs((states[x]?.ackDeadlineFloor ?? 0) - 0.225) < 1e-12, "0.1 × 1.5 × 1.5")
        #expect(states[y]?.ackDeadlineFloor == 0.1, "a peer with no late copy keeps its floor")
        #expect(result.wakeAt == 150 * Self.ms)

        for _ in 0..<10 {
            let late = RealtimeSenderTests.item()
            _ = sender.expectAck(late, from: x, floor: 0.02, roundTripNanoseconds: nil, sentAt: 200 * Self.ms)
            _ = sender.expire(now: 900 * Self.ms, peers: &states)
        }
        #expect(states[x]?.ackDeadlineFloor == 0.5, "never above the maximum deadline")
    }

    @Test func aCopyOutsideSendWaitsByThePeersFloorAndRoundTrip() {
        var sender = RealtimeSenderTests.sender()
        let (x, unknown) = (RealtimeSenderTests.peer(1), RealtimeSenderTests.peer(9))
        var states = Self.peers([x], floor: 0.05)
        states[x]?.roundTripNanoseconds = 30 * Int64(Self.ms)
        let slow = RealtimeSenderTests.item(), other = RealtimeSenderTests.item()
        _ = sender.expectAck(slow, from: x, peers: states, sentAt: 0)
        #expect(sender.waits.deadline(of: slow.eventID, for: x) == 120 * Self.ms, "4 × RTT is above the floor")
        #expect(sender.expectAck(other, from: unknown, peers: states, sentAt: 0) == 20 * Self.ms,
                "a peer without state waits the minimum deadline, and the watchdog is armed for it")
    }
}
