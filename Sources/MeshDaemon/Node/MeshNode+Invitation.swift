import Foundation
import MeshCrypto
import MeshCore
import NIOCore

/// The inviter's side of pairing: one live code at a time, attempts over TCP kind=2
/// connections (see docs/PAIRING.md for the messages; this file only moves them).
extension MeshNode {
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
        return PairingInvitation(code: code.description, expires: state.expiresAt.timeIntervalSince1970)
    }

    /// Waits until a device pairs with the live code `code`, or the code ends.
    public func awaitPairing(code: String) async throws -> PairedDevice {
        guard let current = invitations.live, (try? PairingCode.parse(code)) == current.code else {
            throw MeshError.invalidArgument("no live pairing code matches; create one with `meshctl pair`")
        }
        if case .used = current.state, let result = invitations.lastPairing { return result }
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
            self.loop.execute { self.onLoop { $0.abandonPairingWait(waiter) } }
        }
    }

    /// Ends the `pair.wait` `waiter` (its client left).
    func abandonPairingWait(_ waiter: UInt64) {
        invitations.removeWaiter(waiter)?.resume(throwing: CancellationError())
    }

    /// `pair.wait` requests waiting now.
    public var pairingWaiterCount: Int { invitations.waiterCount }

    /// Withdraws the live code when it is `code`.
    public func cancelPairing(code: String) async {
        guard let current = invitations.live, (try? PairingCode.parse(code)) == current.code else { return }
        endInvitation(with: MeshError.pairingCancelled)
    }

    /// Drops the live code and fails its waiters with `error`.
    func endInvitation(with error: MeshError) {
        for waiter in invitations.end() { waiter.resume(throwing: error) }
    }

    /// Called by the timer: an expired code fails its waiters.
    func expireInvitationIfNeeded() {
        guard let current = invitations.live, current.state(at: wallDate()) == .expired else { return }
        endInvitation(with: .pairingExpired)
    }

    func wallDate() -> Date { Date(timeIntervalSince1970: clock.wallSeconds()) }

    /// Serves one pairing attempt on an accepted kind=2 connection.
    ///
    /// The attempt counts against the code only once the first message is a well-formed hello
    /// (`PairingResponder.checkHello`): a connection that sends nothing, closes, or sends
    /// garbage is closed in silence and costs the code nothing (the connection's admission
    /// deadline bounds how long it may take).
    nonisolated func servePairing(_ admission: InboundAdmission,
                                  frames: inout NIOAsyncChannelInboundStream<WireFrame>.AsyncIterator) async throws {
        guard case .frame(let hello)? = try await frames.next() else { return }
        do {
            try PairingResponder.checkHello(hello)
        } catch {
            await count { $0.pairingHellosMalformed += 1 }
            logger.debug("closed a pairing connection whose first message is not a hello", metadata: ["error": "\(error)"])
            return
        }
        guard var responder = await beginPairingAttempt(admission) else { return }
        let attempt = responder.attempt
        var succeeded = false
        do {
            var next = hello
            exchange: while true {
                switch try responder.receive(next) {
                case .send(let reply):
                    try await admission.channel.writeAndFlush(ByteBuffer(bytes: try WireFrame.encode(reply)))
                    await rearmPairingDeadline(admission)
                    guard case .frame(let message)? = try await frames.next() else { break exchange }
                    next = message
                case .finished(let outcome, let last):
                    guard await pairingSucceeded(outcome, attempt: attempt, admission: admission) else { break exchange }
                    succeeded = true
                    if let last { try await admission.channel.writeAndFlush(ByteBuffer(bytes: try WireFrame.encode(last))) }
                    break exchange
                }
            }
        } catch {
            logger.debug("pairing attempt failed", metadata: ["error": "\(error)"])
        }
        if !succeeded { await pairingAttemptFailed(attempt) }
    }

    /// Starts a responder when the code accepts an attempt; nil closes the connection silently.
    func beginPairingAttempt(_ admission: InboundAdmission) -> PairingResponder? {
        guard invitations.live != nil else {
            counters.pairingAttemptsRefused += 1
            return nil
        }
        do {
            let own = PairingLocalIdentity(keyPair: identity.keyPair, name: configuration.name)
            let responder = try invitations.live?.beginAttempt(at: wallDate(), identity: own)
            connections.pairingAttemptBegan(admission.id, now: clock.monotonicNanoseconds(),
                                            duration: Nanoseconds.from(seconds: tuning.pairingAttemptTimeout))
            rearmPairingDeadline(admission)
            return responder
        } catch {
            counters.pairingAttemptsRefused += 1
            logger.debug("refused a pairing attempt", metadata: ["reason": "\(error)"])
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

    /// Counts a failed attempt; the last allowed failure invalidates the code. An attempt of a
    /// code since replaced is counted in the node's counters only, never against the live code.
    func pairingAttemptFailed(_ attempt: PairingAttemptID) {
        counters.pairingAttemptsFailed += 1
        guard invitations.live?.attemptFailed(attempt) == true else { return }
        if invitations.live?.state == .invalidated {
            logger.warning("pairing code invalidated after too many failed attempts")
            for waiter in invitations.takeWaiters() { waiter.resume(throwing: MeshError.pairingCodeInvalidated) }
        }
    }

    /// Stores the new peer (before the last message goes out, so its first handshake finds
    /// the key) and tells the waiters. False when the attempt may not end in a pairing: its
    /// code was replaced or used meanwhile, or the device is already paired and the code was
    /// created without `replace` (that ends the code: whoever sent it knew the code).
    func pairingSucceeded(_ outcome: PairingOutcome, attempt: PairingAttemptID, admission: InboundAdmission) -> Bool {
        guard let current = invitations.live, current.serial == attempt.invitation else { return false }
        if let existing = peers[outcome.peerDeviceID], !current.allowsReplacing {
            counters.pairingsRefusedAlreadyPaired += 1
            logger.warning("refused to pair again a device that is already paired (the code was created without --replace)",
                           metadata: ["peer.id": "\(outcome.peerDeviceID.short)"])
            endInvitation(with: .alreadyPaired(name: existing.record.name, id: outcome.peerDeviceID,
                                               advice: "the code was withdrawn; to pair it again and replace its pairing, create a code with `meshctl pair --replace` (or unpair it first with `meshctl unpair \(outcome.peerDeviceID.short)`)"))
            return false
        }
        guard invitations.live?.attemptSucceeded(attempt) == true else { return false }
        connections.pairingAttemptEnded(admission.id)
        markAuthenticated(admission.id)
        let device = storePairing(outcome, address: nil)
        for waiter in invitations.paired(device) { waiter.resume(returning: device) }
        return true
    }

    /// Adds (or replaces) a paired device from a pairing outcome and saves the store.
    func storePairing(_ outcome: PairingOutcome, address: PeerAddress?) -> PairedDevice {
        let id = outcome.peerDeviceID
        if peers[id] != nil { dropChannel(id, reason: "paired again", redial: false) }
        var record = PairedPeer(publicKey: outcome.peerPublicKey, name: outcome.peerName, pairKey: outcome.pairKey,
                                addresses: peers[id]?.record.addresses ?? [], pairedAt: clock.wallSeconds())
        if let address { record.learn(address: address.address, source: address.source) }
        peers[id] = PeerRuntime(record: record, tuning: tuning, leaseSeconds: configuration.reachabilityLease)
        indexTable = indexTable.filter { $0.value != id }
        persistPeers()
        counters.pairingsCompleted += 1
        logger.info("device paired", metadata: ["peer.id": "\(id.short)", "peer.name": "\(outcome.peerName)"])
        channelEvent(.paired(id))
        return PairedDevice(deviceID: id.description, name: outcome.peerName, verification: outcome.verification)
    }
}
