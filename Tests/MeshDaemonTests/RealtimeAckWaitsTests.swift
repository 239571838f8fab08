import Foundation
import MeshCrypto
import Testing
@testable import MeshDaemon

/// The per-(peer, eventID) table of realtime copies waiting for their ack.
struct RealtimeAckWaitsTests {
    static func peer(_ byte: UInt8) -> DeviceID { DeviceID(publicKey: Array(repeating: byte, count: 32)) }

    static func item() -> DeliveryItem {
        DeliveryItem(eventID: UUID(), kind: 1, featureID: "demo", sessionID: UUID(), payload: [1, 2, 3])
    }

    @Test func eachPeersCopyWaitsAndIsAckedOnItsOwn() {
        var waits = RealtimeAckWaits()
        let (x, y, z) = (Self.peer(1), Self.peer(2), Self.peer(3))
        let item = Self.item()
        waits.insert(item, for: x, deadline: 10)
        waits.insert(item, for: y, deadline: 20)
        waits.insert(item, for: z, deadline: 30)
        #expect(waits.count == 3)
        // Re-registering a peer's copy replaces it (no second copy for that peer).
        waits.insert(item, for: y, deadline: 25)
        #expect(waits.count == 3)
        #expect(waits.deadline(of: item.eventID, for: y) == 25)
        #expect(waits.remove(item.eventID, for: Self.peer(4)) == nil, "a peer that got no copy clears nothing")
        #expect(waits.remove(item.eventID, for: x)?.deadline == 10)
        #expect(waits.remove(item.eventID, for: x) == nil, "a duplicate ack clears nothing")
        #expect(waits.deadline(of: item.eventID, for: z) == 30)
        #expect(waits.remove(item.eventID, for: z)?.peer == z)
        #expect(waits.isWaiting(item.eventID))
        #expect(waits.remove(item.eventID, for: y)?.deadline == 25)
        #expect(waits.isEmpty && waits.count == 0)
    }

    @Test func anExpiryTakesTheCopyWithThatDeadlineOnly() {
        var waits = RealtimeAckWaits()
        let (x, y) = (Self.peer(1), Self.peer(2))
        let item = Self.item()
        waits.insert(item, for: x, deadline: 10)
        waits.insert(item, for: y, deadline: 20)
        #expect(!waits.isWaiting(item.eventID, deadline: 15))
        #expect(waits.removeExpired(item.eventID, deadline: 15) == nil)
        #expect(waits.isWaiting(item.eventID, deadline: 20))
        #expect(waits.removeExpired(item.eventID, deadline: 20)?.peer == y)
        #expect(waits.deadline(of: item.eventID, for: x) == 10)
        // Two copies with the same deadline: one taken per timeline entry.
        waits.insert(item, for: y, deadline: 10)
        #expect(waits.removeExpired(item.eventID, deadline: 10) != nil)
        #expect(waits.removeExpired(item.eventID, deadline: 10) != nil)
        #expect(waits.isEmpty)
    }

    @Test func removingAPeerKeepsTheOtherPeersCopies() {
        var waits = RealtimeAckWaits()
        let (x, y) = (Self.peer(1), Self.peer(2))
        let shared = Self.item(), onlyX = Self.item(), onlyY = Self.item()
        waits.insert(shared, for: x, deadline: 1)
        waits.insert(shared, for: y, deadline: 2)
        waits.insert(onlyX, for: x, deadline: 3)
        waits.insert(onlyY, for: y, deadline: 4)
        let removed = waits.removeAll(for: x)
        #expect(Set(removed.map(\.item.eventID)) == [shared.eventID, onlyX.eventID])
        #expect(removed.allSatisfy { $0.peer == x })
        #expect(waits.count == 2)
        #expect(waits.deadline(of: shared.eventID, for: y) == 2)
        #expect(waits.deadline(of: onlyY.eventID, for: y) == 4)
        #expect(!waits.isWaiting(onlyX.eventID))
        #expect(waits.removeAll(for: x).isEmpty)
    }

    /// A channel loss falls a peer's copies back in the order they were sent (their outbox
    /// order then follows the send order), whatever the order of the table keyed by event ID.
    @Test func aPeersCopiesAreRemovedInTheOrderTheyStartedWaiting() {
        var waits = RealtimeAckWaits()
        let (x, y) = (Self.peer(1), Self.peer(2))
        let items = (0..<40).map { _ in Self.item() }
        for (index, item) in items.enumerated() {
            waits.insert(item, for: x, deadline: UInt64(100 - index))
            if index % 3 == 0 { waits.insert(item, for: y, deadline: 1) }
        }
        // Re-registered: it waits again from now, so it comes last.
        waits.insert(items[5], for: x, deadline: 500)
        let removed = waits.removeAll(for: x).map(\.item.eventID)
        #expect(removed == (items[..<5] + items[6...] + [items[5]]).map(\.eventID))
        #expect(waits.removeAll(for: y).map(\.item.eventID) == stride(from: 0, to: 40, by: 3).map { items[$0].eventID })
    }
}
