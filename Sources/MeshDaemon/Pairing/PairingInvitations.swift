import Foundation
import MeshCrypto
import MeshCore

/// The inviter's side of pairing as the node keeps it: the live code
/// (`PairingInvitationState`), the serial that tells a replaced code's attempts from the live
/// one's, the `pair.wait` requests waiting on the live code, and the device the last code
/// paired. Bookkeeping only: the node resumes the waiters it is handed.
struct PairingInvitations {
    typealias Waiter = CheckedContinuation<PairedDevice, any Error>

    /// The live code, if any.
    var live: PairingInvitationState?
    private var serial: UInt64 = 0
    /// The `pair.wait` requests of the live code, by waiter number.
    private var waiters: [UInt64: Waiter] = [:]
    private var nextWaiter: UInt64 = 0
    /// The device the latest used code paired (a late `pair.wait` of that code gets it).
    private(set) var lastPairing: PairedDevice?

    /// `pair.wait` requests waiting now.
    var waiterCount: Int { waiters.count }

    /// Makes `code` the live code, issued at `issuedAt` for `lifetime` seconds, under a new
    /// serial. The previous code must have been ended first (`end()`).
    mutating func create(code: PairingCode, issuedAt: Date, lifetime: Double, allowsReplacing: Bool) -> PairingInvitationState {
        serial &+= 1
        let state = PairingInvitationState(code: code, issuedAt: issuedAt, lifetime: lifetime,
                                           serial: serial, allowsReplacing: allowsReplacing)
        live = state
        return state
    }

    /// A number for a new `pair.wait` request (registered with `wait(_:continuation:)`).
    mutating func newWaiter() -> UInt64 {
        defer { nextWaiter &+= 1 }
        return nextWaiter
    }

    /// Registers waiter `id`.
    mutating func wait(_ id: UInt64, continuation: Waiter) { waiters[id] = continuation }

    /// Removes waiter `id` (its client left): its continuation, to resume.
    mutating func removeWaiter(_ id: UInt64) -> Waiter? { waiters.removeValue(forKey: id) }

    /// Removes every waiter: their continuations, to resume.
    mutating func takeWaiters() -> [Waiter] {
        defer { waiters.removeAll() }
        return Array(waiters.values)
    }

    /// Drops the live code: its waiters, to fail.
    mutating func end() -> [Waiter] {
        live = nil
        return takeWaiters()
    }

    /// The live code paired `device`: its waiters, to resume with it.
    mutating func paired(_ device: PairedDevice) -> [Waiter] {
        lastPairing = device
        return takeWaiters()
    }
}
