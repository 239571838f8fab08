import Foundation
import MeshCrypto
import MeshCore

/// The inviter's side of pairing as the node keeps it: the live code
/// (`PairingInvitationState`), the serial that tells a replaced code's attempts from the live
/// one's, the `pair.wait` requests waiting on the live code, and the device the last code
/// paired. Decisions and bookkeeping only: the node resumes the waiters it is handed and does
/// the I/O (connections, deadlines, the paired-device store).
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

    /// The public hint to advertise at `now`: the live code's while it accepts attempts.
    func advertisedHint(at now: Date) -> String? {
        guard let live, live.isUsable(at: now) else { return nil }
        return live.code.publicHint
    }

    /// The hint whose relay rendezvous the inviter listens on at `now`: the live code's until it
    /// is used, expired, withdrawn or invalidated (also while its attempt slots are busy, so
    /// the running attempts' messages still arrive).
    func relayHint(at now: Date) -> String? {
        guard let live, live.state(at: now) == .live else { return nil }
        return live.code.publicHint
    }

    /// Whether `code` (as a user typed it) is the live code.
    func isLive(_ code: String) -> Bool {
        guard let live else { return false }
        return (try? PairingCode.parse(code)) == live.code
    }

    /// The device the live code already paired, when it was used (a late `pair.wait` of that
    /// code gets it at once).
    var pairedByLiveCode: PairedDevice? {
        guard case .used? = live?.state else { return nil }
        return lastPairing
    }

    /// The live code at `now` expired: its waiters, to fail (nil when it did not).
    mutating func expire(at now: Date) -> [Waiter]? {
        guard let live, live.state(at: now) == .expired else { return nil }
        return end()
    }

    /// Why an attempt could not begin: no live code, or the live code's refusal.
    enum Refusal: Error {
        case noCode
        case refused(any Error)
    }

    /// A joiner at `source` (its connection's `SourceKey`) sent a well-formed hello at `now`:
    /// the responder for its attempt.
    mutating func beginAttempt(at now: Date, identity: PairingLocalIdentity, source: String) -> Result<PairingResponder, Refusal> {
        guard live != nil else { return .failure(.noCode) }
        do {
            guard let responder = try live?.beginAttempt(at: now, identity: identity, source: source) else { return .failure(.noCode) }
            return .success(responder)
        } catch {
            return .failure(.refused(error))
        }
    }

    /// `attempt` ended without a pairing (`reachedExchange`: after the CPace exchange, so it
    /// counts against the code). When that was the live code's last allowed failure (the code
    /// is now invalidated) its waiters, to fail; nil otherwise. An attempt of a code since
    /// replaced never counts against the live one.
    mutating func attemptFailed(_ attempt: PairingAttemptID, reachedExchange: Bool = true) -> [Waiter]? {
        guard live?.attemptFailed(attempt, reachedExchange: reachedExchange) == true, live?.state == .invalidated else { return nil }
        return takeWaiters()
    }

    /// How a finished exchange ends.
    enum Completion: Equatable {
        /// Its code was replaced or used meanwhile: no pairing.
        case stale
        /// The device is already paired and the code was created without `replace`: no
        /// pairing, and the code ends (whoever sent it knew the code).
        case alreadyPaired
        /// Store the device.
        case pair
    }

    /// `attempt` proved the code and carries a device (`alreadyPaired`: one this daemon has).
    mutating func complete(_ attempt: PairingAttemptID, alreadyPaired: Bool) -> Completion {
        guard let current = live, current.serial == attempt.invitation else { return .stale }
        if alreadyPaired, !current.allowsReplacing { return .alreadyPaired }
        return live?.attemptSucceeded(attempt) == true ? .pair : .stale
    }
}
