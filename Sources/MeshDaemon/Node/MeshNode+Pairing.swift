import Foundation
import MeshCrypto
import MeshCore

/// Pairing's public API and `PairingInviterExchange`'s host; the work is `NodePairing`'s.
extension MeshNode: PairingAttemptHost {
    /// Creates a code valid for `seconds` (1…3600), replacing (and failing the waiters of) any
    /// previous code; attempts still running under the previous code can no longer succeed or
    /// count against this one. With `replace` false a device that is already paired cannot
    /// pair again with this code (`already-paired`).
    public func createPairingCode(validFor seconds: Double, replace: Bool = false) async throws -> PairingInvitation {
        try pairing.createCode(self, validFor: seconds, replace: replace)
    }

    /// As `createPairingCode(validFor:replace:)`; with `single`, the device that pairs with
    /// the code is paired with this one only and does not join the device set.
    public func createPairingCode(validFor seconds: Double, replace: Bool, single: Bool) async throws -> PairingInvitation {
        try pairing.createCode(self, validFor: seconds, replace: replace, single: single)
    }

    /// Waits until a device pairs with the live code `code`, or the code ends.
    public func awaitPairing(code: String) async throws -> PairedDevice {
        try await pairing.awaitPairing(self, code: code)
    }

    /// `pair.wait` requests waiting now.
    public var pairingWaiterCount: Int { pairing.invitations.waiterCount }

    /// Withdraws the live code when it is `code`.
    public func cancelPairing(code: String) async {
        pairing.cancel(self, code: code)
    }

    /// Pairs with the daemon that shows `code`: at `address` (`HOST:PORT`), or, when `address`
    /// is nil, the one discovery finds advertising the code's public hint (see
    /// `PairingByCode`). With a relay broker configured, the broker's rendezvous of the hint is
    /// tried once when neither reaches an inviter. With `replace` false, an inviter this daemon is already paired with is
    /// not stored again (`already-paired`).
    public func joinPairing(code: String, address: String?, replace: Bool = false) async throws -> PairedDevice {
        try await joinPairing(code: code, address: address, replace: replace, single: false)
    }

    /// As `joinPairing(code:address:replace:)`; with `single`, the inviter is paired with this
    /// device only and the two do not join each other's device sets.
    public func joinPairing(code: String, address: String?, replace: Bool, single: Bool) async throws -> PairedDevice {
        let request = try PairingJoinRequest(code: code, address: address)
        guard phase == .running else {
            throw MeshError.notRunning
        }
        guard let endpoint = request.endpoint else {
            return try await pairing.joinByDiscovery(self, request.code, replace: replace, single: single)
        }
        return try await pairing.joinAtAddress(self, request.code, at: endpoint, replace: replace, single: single)
    }

    func pairingHelloMalformed() { counters.pairingHellosMalformed += 1 }

    func beginPairingAttempt(_ admission: InboundAdmission) -> PairingResponder? { pairing.beginAttempt(self, admission) }

    func rearmPairingDeadline(_ admission: InboundAdmission) { pairing.rearmDeadline(self, admission) }

    func pairingAttemptFailed(_ attempt: PairingAttemptID, reachedExchange: Bool) {
        pairing.attemptFailed(self, attempt, reachedExchange: reachedExchange)
    }

    func pairingSucceeded(_ outcome: PairingOutcome, attempt: PairingAttemptID, admission: InboundAdmission) -> Bool {
        pairing.succeeded(self, outcome, attempt: attempt, admission: admission)
    }

    /// The wall clock as a `Date` (pairing codes expire by it).
    func wallDate() -> Date { Date(timeIntervalSince1970: clock.wallSeconds()) }
}
