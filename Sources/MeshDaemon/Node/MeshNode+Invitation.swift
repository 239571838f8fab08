import Foundation
import MeshCrypto
import MeshCore
import NIOCore

/// The inviter's side of pairing: one live code at a time (`PairingInvitations` decides),
/// attempts over TCP kind=2 connections (`PairingInviterExchange` moves the messages; see
/// docs/PAIRING.md). The node arms the deadlines and stores the new device.
extension MeshNode: PairingAttemptHost {
    /// Creates a code valid for `seconds` (1…3600), replacing (and failing the waiters of) any
    /// previous code; attempts still running under the previous code can no longer succeed or
    /// count against this one. With `replace` false a device that is already paired cannot
    /// pair again with this code (`already-paired`).
    public func createPairingCode(validFor seconds: Double, replace: Bool = false) async throws -> PairingInvitation {
        guard seconds.isFinite, seconds >= 1, seconds <= 3600 else {
            throw MeshError.invalidArgument("a pairing code must be valid for 1 to 3600 seconds")
        }
        endInvitation(with: MeshError.pairingReplaced)
        let code = PairingCode.generate()
        let state = invitations.create(code: code, issuedAt: wallDate(), lifetime: seconds, allowsReplacing: replace)
        logger.info("pairing code created", metadata: ["expires.in": "\(Int(seconds))s", "replace": "\(replace)"])
        refreshAdvertisement()
        return PairingInvitation(code: code.description, expires: state.expiresAt.timeIntervalSince1970)
    }

    /// Waits until a device pairs with the live code `code`, or the code ends.
    public func awaitPairing(code: String) async throws -> PairedDevice {
        guard invitations.isLive(code) else {
            throw MeshError.invalidArgument("no live pairing code matches; create one with `meshctl pair`")
        }
        if let result = invitations.pairedByLiveCode { return result }
        let waiter = invitations.newWaiter()
        // A waiter whose request is cancelled (its client closed the connection) is removed and
        // resumed at once, so clients that come and go leave nothing behind.
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                if Task.isCancelled {
                    continuation.resume(throwing: CancellationError())
                } else {
                    invitations.wait(waiter, continuation: continuation)
                }
            }
        } onCancel: {
            // On the node's loop, where the waiter is registered (no task of its own).
            self.loop.execute { self.onLoop { $0.invitations.removeWaiter(waiter)?.resume(throwing: CancellationError()) } }
        }
    }

    /// `pair.wait` requests waiting now.
    public var pairingWaiterCount: Int { invitations.waiterCount }

    /// Withdraws the live code when it is `code`.
    public func cancelPairing(code: String) async {
        guard invitations.isLive(code) else { return }
        endInvitation(with: MeshError.pairingCancelled)
    }

    /// Drops the live code and fails its waiters with `error`.
    func endInvitation(with error: MeshError) {
        for waiter in invitations.end() { waiter.resume(throwing: error) }
        refreshAdvertisement()
    }

    /// Called by the timer: an expired code fails its waiters.
    func expireInvitationIfNeeded() {
        guard let waiters = invitations.expire(at: wallDate()) else { return }
        for waiter in waiters { waiter.resume(throwing: MeshError.pairingExpired) }
        refreshAdvertisement()
    }

    func wallDate() -> Date { Date(timeIntervalSince1970: clock.wallSeconds()) }

    /// Serves one pairing attempt on an accepted kind=2 connection.
    nonisolated func servePairing(_ admission: InboundAdmission,
                                  frames: inout NIOAsyncChannelInboundStream<WireFrame>.AsyncIterator) async throws {
        try await PairingInviterExchange(host: self, logger: logger).serve(admission, frames: &frames)
    }

    func pairingHelloMalformed() { counters.pairingHellosMalformed += 1 }

    func beginPairingAttempt(_ admission: InboundAdmission) -> PairingResponder? {
        switch invitations.beginAttempt(at: wallDate(), identity: PairingLocalIdentity(keyPair: identity.keyPair, name: configuration.name)) {
        case .success(let responder):
            connections.pairingAttemptBegan(admission.id, now: clock.monotonicNanoseconds(),
                                            duration: Nanoseconds.from(seconds: tuning.pairingAttemptTimeout))
            rearmPairingDeadline(admission)
            refreshAdvertisement()
            return responder
        case .failure(let refusal):
            counters.pairingAttemptsRefused += 1
            if case .refused(let error) = refusal { logger.debug("refused a pairing attempt", metadata: ["reason": "\(error)"]) }
            return nil
        }
    }

    /// Per-message deadline, never past the whole attempt's deadline. Before the first
    /// message the first-message deadline armed at accept stays; once it was answered the
    /// connection is engaged (no longer evictable).
    func rearmPairingDeadline(_ admission: InboundAdmission) {
        guard connections.pairingMessageArrived(admission.id) else { return }
        let left = Double(connections.pairingAttemptLeft(admission.id, now: clock.monotonicNanoseconds())) / 1e9
        armDeadline(admission.channel, seconds: min(tuning.pairingMessageTimeout, left), connection: admission.id)
    }

    /// Counts a failed attempt; the last allowed failure invalidates the code.
    func pairingAttemptFailed(_ attempt: PairingAttemptID) {
        counters.pairingAttemptsFailed += 1
        if let waiters = invitations.attemptFailed(attempt) {
            logger.warning("pairing code invalidated after too many failed attempts")
            for waiter in waiters { waiter.resume(throwing: MeshError.pairingCodeInvalidated) }
        }
        refreshAdvertisement()
    }

    /// Stores the new peer (before the last message goes out, so its first handshake finds
    /// the key) and tells the waiters; false when `PairingInvitations.complete` refuses.
    func pairingSucceeded(_ outcome: PairingOutcome, attempt: PairingAttemptID, admission: InboundAdmission) -> Bool {
        let existing = channels.peers[outcome.peerDeviceID]
        switch invitations.complete(attempt, alreadyPaired: existing != nil) {
        case .stale:
            return false
        case .alreadyPaired:
            counters.pairingsRefusedAlreadyPaired += 1
            logger.warning("refused to pair again a device that is already paired (the code was created without --replace)",
                           metadata: ["peer.id": "\(outcome.peerDeviceID.short)"])
            endInvitation(with: .alreadyPaired(name: existing?.record.name ?? outcome.peerName, id: outcome.peerDeviceID,
                                               advice: "the code was withdrawn; to pair it again and replace its pairing, create a code with `meshctl pair --replace` (or unpair it first with `meshctl unpair \(outcome.peerDeviceID.short)`)"))
            return false
        case .pair:
            connections.pairingAttemptEnded(admission.id)
            markAuthenticated(admission.id)
            let device = storePairing(outcome, address: nil)
            for waiter in invitations.paired(device) { waiter.resume(returning: device) }
            refreshAdvertisement()
            return true
        }
    }

    /// Adds (or replaces) a paired device from a pairing outcome and saves the store.
    func storePairing(_ outcome: PairingOutcome, address: PeerAddress?) -> PairedDevice {
        let id = outcome.peerDeviceID
        if channels.peers[id] != nil { dropChannel(id, reason: "paired again", redial: false) }
        channels.storePairing(outcome, address: address, pairedAt: clock.wallSeconds(), leaseSeconds: configuration.reachabilityLease)
        persistPeers()
        counters.pairingsCompleted += 1
        logger.info("device paired", metadata: ["peer.id": "\(id.short)", "peer.name": "\(outcome.peerName)"])
        channelEvent(.paired(id))
        return PairedDevice(deviceID: id.description, name: outcome.peerName, verification: outcome.verification)
    }
}
