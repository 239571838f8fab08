import Foundation
import MeshCrypto
import MeshCore
import NIOCore

/// Pairing as the node runs it. The inviter's side: one live code at a time
/// (`PairingInvitations` decides), its `pair.wait` requests, attempts over TCP kind=2
/// connections (`PairingInviterExchange` moves the messages; see docs/PAIRING.md), their
/// deadlines. The joiner's side (`NodePairing+Join.swift`): the exchange with an inviter, found
/// by address or by the code's public hint over discovery (`InviterSearches`).
///
/// Owns the invitation and the inviter searches; runs on the node's executor (every method
/// that needs the node takes it `isolated`); it stores the new device (`store`).
final class NodePairing {
    /// The live pairing code, its `pair.wait` requests, the last pairing it made.
    var invitations = PairingInvitations()
    /// The live code was created with `--single`: who pairs with it stays out of the device set.
    var codeIsSingle = false
    /// Joiners waiting for an inviter to show up over mDNS (`findInviters`).
    var inviterSearches = InviterSearches()

    /// Creates a code valid for `seconds` (1…3600), replacing (and failing the waiters of) any
    /// previous code (see `MeshNode.createPairingCode`).
    func createCode(_ node: isolated MeshNode, validFor seconds: Double, replace: Bool, single: Bool = false) throws -> PairingInvitation {
        guard seconds.isFinite, seconds >= 1, seconds <= 3600 else {
            throw MeshError.invalidArgument("a pairing code must be valid for 1 to 3600 seconds")
        }
        endInvitation(node, with: MeshError.pairingReplaced)
        let code = PairingCode.generate()
        let state = invitations.create(code: code, issuedAt: node.wallDate(), lifetime: seconds, allowsReplacing: replace)
        codeIsSingle = single
        node.logger.info("pairing code created", metadata: ["expires.in": "\(Int(seconds))s", "replace": "\(replace)"])
        invitationChanged(node)
        return PairingInvitation(code: code.description, expires: state.expiresAt.timeIntervalSince1970)
    }

    /// The live code changed (created, an attempt began or ended, used, ended): the mDNS
    /// advertisement of its hint follows, and so does its rendezvous on the relay broker.
    func invitationChanged(_ node: isolated MeshNode) {
        node.finder.refreshAdvertisement(node)
        node.relayTransport?.invite(hint: invitations.relayHint(at: node.wallDate()))
    }

    /// Waits until a device pairs with the live code `code`, or the code ends.
    func awaitPairing(_ node: isolated MeshNode, code: String) async throws -> PairedDevice {
        guard invitations.isLive(code) else {
            throw MeshError.invalidArgument("no live pairing code matches; create one with `meshctl pair`")
        }
        if let result = invitations.pairedByLiveCode { return result }
        let waiter = invitations.newWaiter()
        // A waiter whose request is cancelled (its client closed the connection) is removed and
        // resumed at once, so clients that come and go leave nothing behind.
        //
        // The operation names `node` (`isolation:`), so it runs on the node: a closure here that
        // does not name it runs on the global executor, beside the node's loop.
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation(isolation: node) { continuation in
                if Task.isCancelled {
                    continuation.resume(throwing: CancellationError())
                } else {
                    invitations.wait(waiter, continuation: continuation)
                }
            }
        } onCancel: {
            // On the node's loop, where the waiter is registered (no task of its own).
            node.loop.execute {
                node.onLoop { $0.pairing.invitations.removeWaiter(waiter)?.resume(throwing: CancellationError()) }
            }
        }
    }

    /// Withdraws the live code when it is `code`.
    func cancel(_ node: isolated MeshNode, code: String) {
        guard invitations.isLive(code) else { return }
        endInvitation(node, with: MeshError.pairingCancelled)
    }

    /// Drops the live code and fails its waiters with `error`.
    func endInvitation(_ node: isolated MeshNode, with error: MeshError) {
        for waiter in invitations.end() { waiter.resume(throwing: error) }
        invitationChanged(node)
    }

    /// Called by the timer: an expired code fails its waiters.
    func expireInvitationIfNeeded(_ node: isolated MeshNode) {
        guard let waiters = invitations.expire(at: node.wallDate()) else { return }
        for waiter in waiters { waiter.resume(throwing: MeshError.pairingExpired) }
        invitationChanged(node)
    }

    /// The node stops: every `pair.wait` fails.
    func stopWaiters() {
        for waiter in invitations.takeWaiters() { waiter.resume(throwing: MeshError.stopping) }
    }

    /// The node stops: every inviter search ends.
    func stopSearches() {
        for search in inviterSearches.endAll() { finish(search) }
    }

    /// Starts a responder when the live code accepts an attempt on `admission`; nil closes it.
    func beginAttempt(_ node: isolated MeshNode, _ admission: InboundAdmission) -> PairingResponder? {
        let identity = PairingLocalIdentity(keyPair: node.identity.keyPair, name: node.configuration.name)
        switch invitations.beginAttempt(at: node.wallDate(), identity: identity, source: admission.source.sourceKey) {
        case .success(let responder):
            node.gate.table.pairingAttemptBegan(admission.id, now: node.clock.monotonicNanoseconds(),
                                                 duration: Nanoseconds.from(seconds: node.tuning.pairingAttemptTimeout))
            rearmDeadline(node, admission)
            invitationChanged(node)
            return responder
        case .failure(let refusal):
            node.counters.pairingAttemptsRefused += 1
            if case .refused(let error) = refusal { node.logger.debug("refused a pairing attempt", metadata: ["reason": "\(error)"]) }
            return nil
        }
    }

    /// Per-message deadline, never past the whole attempt's deadline. Before the first
    /// message the first-message deadline armed at accept stays; once it was answered the
    /// connection is engaged (no longer evictable).
    func rearmDeadline(_ node: isolated MeshNode, _ admission: InboundAdmission) {
        guard node.gate.table.pairingMessageArrived(admission.id) else { return }
        let left = Double(node.gate.table.pairingAttemptLeft(admission.id, now: node.clock.monotonicNanoseconds())) / 1e9
        node.gate.armDeadline(node, admission.path, seconds: min(node.tuning.pairingMessageTimeout, left), connection: admission.id)
    }

    /// Counts a failed attempt (against the code when it `reachedExchange`); the last allowed
    /// failure invalidates the code.
    func attemptFailed(_ node: isolated MeshNode, _ attempt: PairingAttemptID, reachedExchange: Bool) {
        node.counters.pairingAttemptsFailed += 1
        if let waiters = invitations.attemptFailed(attempt, reachedExchange: reachedExchange) {
            node.logger.warning("pairing code invalidated after too many failed attempts")
            for waiter in waiters { waiter.resume(throwing: MeshError.pairingCodeInvalidated) }
        }
        invitationChanged(node)
    }

    /// Stores the new peer (before the last message goes out, so its first handshake finds
    /// the key) and tells the waiters; false when `PairingInvitations.complete` refuses.
    func succeeded(_ node: isolated MeshNode, _ outcome: PairingOutcome, attempt: PairingAttemptID,
                   admission: InboundAdmission) -> Bool {
        // A member of the device set this device never paired with may pair by code: its
        // derived record becomes a pairing of its own.
        let existing = node.channels.peers[outcome.peerDeviceID].flatMap { $0.record.derived ? nil : $0 }
        switch invitations.complete(attempt, alreadyPaired: existing != nil) {
        case .stale:
            return false
        case .alreadyPaired:
            node.counters.pairingsRefusedAlreadyPaired += 1
            node.logger.warning("refused to pair again a device that is already paired (the code was created without --replace)",
                                metadata: ["peer.id": "\(outcome.peerDeviceID.short)"])
            endInvitation(node, with: .alreadyPaired(name: existing?.record.name ?? outcome.peerName, id: outcome.peerDeviceID,
                                                     advice: "the code was withdrawn; to pair it again and replace its pairing, create a code with `meshctl pair --replace` (or unpair it first with `meshctl unpair \(outcome.peerDeviceID.short)`)"))
            return false
        case .pair:
            node.gate.table.pairingAttemptEnded(admission.id)
            node.gate.authenticated(admission.id)
            let device = store(node, outcome, address: nil,
                               via: admission.source.isRelay ? .relay : .direct, single: codeIsSingle)
            for waiter in invitations.paired(device) { waiter.resume(returning: device) }
            invitationChanged(node)
            return true
        }
    }

    /// Adds (or replaces) a paired device from a pairing outcome and saves the store.
    func store(_ node: isolated MeshNode, _ outcome: PairingOutcome, address: PeerAddress?, via: PairingRoute,
               single: Bool = false) -> PairedDevice {
        let id = outcome.peerDeviceID
        if node.channels.peers[id] != nil { node.dropChannel(id, reason: "paired again", redial: false) }
        node.channels.storePairing(outcome, address: address, pairedAt: node.clock.wallSeconds(),
                                   leaseSeconds: node.configuration.reachabilityLease, via: via, single: single)
        node.persistPeers()
        // The relay listens on the new pair's channel topics before the last pairing message
        // goes out, so a channel dialled through the broker right after is heard.
        node.relayTransport?.pairedDevicesChanged()
        node.counters.pairingsCompleted += 1
        node.logger.info("device paired", metadata: ["peer.id": "\(id.short)", "peer.name": "\(outcome.peerName)",
                                                     "pairing.via": "\(via.rawValue)"])
        node.handOff.channelEvent(.paired(id))
        return PairedDevice(deviceID: id.description, name: outcome.peerName, verification: outcome.verification,
                            via: via.rawValue)
    }
}
