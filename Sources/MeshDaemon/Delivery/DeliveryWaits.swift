import Foundation
import MeshCrypto
import NIOCore

/// Waits for an item to leave a peer's outbox (the peer acknowledged it): `closeSession` waits
/// so for its closing item. Checked when the peer's acknowledged items were deleted, never
/// by polling; each wait ends at its deadline at the latest.
struct DeliveryWaits {
    struct Wait {
        var eventID: UUID
        var peer: DeviceID
        var continuation: CheckedContinuation<Bool, Never>
        var deadline: Scheduled<Void>?
    }

    private(set) var waits: [UInt64: Wait] = [:]
    private var nextID: UInt64 = 0

    /// Registers a wait; returns its id.
    mutating func add(_ eventID: UUID, peer: DeviceID, continuation: CheckedContinuation<Bool, Never>) -> UInt64 {
        nextID &+= 1
        waits[nextID] = Wait(eventID: eventID, peer: peer, continuation: continuation)
        return nextID
    }

    mutating func setDeadline(_ deadline: Scheduled<Void>, of id: UInt64) {
        waits[id]?.deadline = deadline
    }

    /// The waits on `peer`, oldest first.
    func waiting(on peer: DeviceID) -> [(id: UInt64, eventID: UUID)] {
        waits.filter { $0.value.peer == peer }.map { ($0.key, $0.value.eventID) }.sorted { $0.id < $1.id }
    }

    /// Ends the wait `id` with `delivered` (nothing when it ended already).
    mutating func finish(_ id: UInt64, delivered: Bool) {
        guard let wait = waits.removeValue(forKey: id) else { return }
        wait.deadline?.cancel()
        wait.continuation.resume(returning: delivered)
    }

    /// Ends every wait as not delivered (the router stops).
    mutating func finishAll() {
        for id in waits.keys.sorted() { finish(id, delivered: false) }
    }
}
