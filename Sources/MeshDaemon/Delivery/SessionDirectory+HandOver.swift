import Foundation
import MeshCore

/// The session owner hand-over among the members of the device set (docs/DEVICE-SET.md,
/// "Session owner hand-over"; the rules are `SessionHandOverRule`'s):
///
/// - an open session whose owner was removed from the set, or stayed away longer than the
///   presence lease plus `sessionHandOverGrace`, is taken over by the participant with the
///   lowest device ID; the one that computes itself takes it over (one revision up, its device
///   ID as the owner) and sends its claim to every member. A member that holds the session
///   takes it over itself `handOverFallback` later when no claim came (the successor may not
///   know the session); claims at one revision end with the lowest device ID;
/// - a member's claim replaces the stored row when it wins (higher revision, then lower device
///   ID), is passed on to the other members, and its apps get a `session` event; a claim that
///   loses to the stored row is answered with that row's claim, so two sides that picked
///   different owners end with the same one;
/// - every activation of a member's channel passes on the rows that changed hands.
extension SessionDirectory {
    /// Rounds of the tick between two hand-over passes (1 s).
    static let handOverRounds: UInt64 = 10
    /// How long after the successor's turn any member holding the session takes it over, seconds.
    static let handOverFallback = 10.0
    /// Rows of removed owners kept in memory for the fallback (more are not kept).
    static let maximumPendingHandOvers = 4096

    /// Takes over the open sessions of members that are gone (`removed`: that device, at
    /// once, before its rows are dropped) where this device is the successor.
    func handOverPass(_ router: isolated DeliveryRouter, removed: DeviceID? = nil) async {
        let members = router.channels.deviceSetMembers()
        let now = router.now(), away = router.options.presenceLease + router.options.sessionHandOverGrace
        var gone = Set<String>(), late = Set<String>()
        if let removed { gone.insert(router.key(removed)) }
        for member in members where router.peerStates[member]?.active != true {
            let seconds = Double(now &- (router.peerStates[member]?.awaySince ?? 0)) / 1e9
            if seconds >= away { gone.insert(router.key(member)) }
            if seconds >= away + Self.handOverFallback { late.insert(router.key(member)) }
        }
        if removed == nil { await takeOverPending(router, members: members, now: now) }
        guard !gone.isEmpty else { return }
        let store = router.store, sources = gone.sorted()
        guard let rows = try? await router.worker.run({ try sources.flatMap { try store.sessions.openRows(from: $0) } }) else {
            router.counters.storeErrors &+= 1
            return
        }
        for row in rows {
            if isSuccessor(router, for: row, members: members, gone: gone, now: now) || row.sourcePeer.map(late.contains) == true {
                await takeOver(router, row, members: members)
            } else if removed != nil, pendingHandOvers.count < Self.maximumPendingHandOvers {
                // Its rows are dropped with the device: kept here for the fallback.
                pendingHandOvers[PendingHandOverKey(featureID: row.featureID, sessionID: row.sessionID)] = (row, now)
            }
        }
    }

    /// Whether this device is the successor of `row`'s owner: the lowest device ID among the
    /// members with the feature's app attached and this device if one is attached here.
    private func isSuccessor(_ router: isolated DeliveryRouter, for row: SessionRecord, members: Set<DeviceID>,
                             gone: Set<String>, now: UInt64) -> Bool {
        let local = router.key(router.localDeviceID)
        var participants = members.filter { member in
            !gone.contains(router.key(member)) && router.peerStates[member]?.isReachable(row.featureID, now: now) == true
        }.map { router.key($0) }
        if router.attachments.announcedFeatures.contains(row.featureID) { participants.append(local) }
        return SessionHandOverRule.successor(among: participants) == local
    }

    /// The fallback for sessions of removed owners: taken over here when no member's claim
    /// brought the session back within `handOverFallback`.
    private func takeOverPending(_ router: isolated DeliveryRouter, members: Set<DeviceID>, now: UInt64) async {
        let due = pendingHandOvers.filter { Double(now &- $0.value.since) / 1e9 >= Self.handOverFallback }
        guard !due.isEmpty else { return }
        for key in due.keys { pendingHandOvers[key] = nil }
        let store = router.store
        for (key, entry) in due.sorted(by: { $0.key.sessionID.uuidString < $1.key.sessionID.uuidString }) {
            let existing: SessionRecord?
            do {
                existing = try await router.worker.run { try store.sessions.record(featureID: key.featureID, id: key.sessionID) }
            } catch {
                router.counters.storeErrors &+= 1
                continue
            }
            // A member's claim brought the session back meanwhile: nothing to do.
            if existing == nil { await takeOver(router, entry.row, members: members) }
        }
    }

    /// Makes `row` this device's: one revision up, owned by this device's ID, marked handed
    /// over; the apps of its feature are told and every active member gets the claim.
    private func takeOver(_ router: isolated DeliveryRouter, _ row: SessionRecord, members: Set<DeviceID>) async {
        guard row.revision < UInt64(Int64.max) else { return }
        let local = router.key(router.localDeviceID)
        let record = SessionRecord(sessionID: row.sessionID, featureID: row.featureID, owner: local, status: row.status,
                                   updatedAt: router.wallNow(), revision: row.revision + 1, sourcePeer: nil, handedOver: true)
        let store = router.store
        // Not stored when the row changed meanwhile (its owner came back with a newer one).
        guard let stored = try? await router.worker.run({ try store.sessions.put(record) }) else {
            router.counters.storeErrors &+= 1
            return
        }
        guard stored else { return }
        router.counters.sessionsTakenOver &+= 1
        router.logger.info("session taken over", metadata: [
            "session.id": "\(row.sessionID)", "feature": "\(row.featureID)",
            "previous.owner": "\(row.sourcePeer.flatMap { router.peersByKey[$0]?.short } ?? row.sourcePeer ?? "?")"])
        router.emit(.session(record, change: .updated), feature: record.featureID)
        let claim = DeliveryMessage.sessionHandOver(owner: router.localDeviceID, record: DeliverySessionRecord(record))
        for member in members.sorted() where router.peerStates[member]?.active == true {
            router.transmit(claim, to: member, path: .stream)
        }
    }

    /// A member's claim that `owner` owns the session now.
    func handOverReceived(_ router: isolated DeliveryRouter, owner: DeviceID, _ message: DeliverySessionRecord,
                          from peer: DeviceID) async {
        router.counters.handOversReceived &+= 1
        let members = router.channels.deviceSetMembers()
        // A claim naming this device is an echo of its own (or a forgery): it changes nothing.
        if owner == router.localDeviceID { return }
        guard members.contains(peer), members.contains(owner), message.status != "closed",
              message.revision <= UInt64(Int64.max) else {
            router.counters.handOversRefused &+= 1
            router.warnPeerFault("refused a session hand-over: not from a member of the device set, or not a valid claim", peer: peer)
            return
        }
        let claim = message.record(sourcePeer: router.key(owner), handedOver: true), store = router.store
        let local = router.key(router.localDeviceID)
        guard let outcome = try? await router.worker.run({ try store.sessions.putClaim(claim, localDevice: local) }) else {
            router.counters.storeErrors &+= 1
            return
        }
        switch outcome {
        case .closed, .stale(_, reply: false): return
        case .refused:
            router.counters.handOversRefused &+= 1
            router.warnPeerFault("refused a session hand-over: the owner's session rows are at their limit", peer: peer)
        case .stale(let current, reply: true):
            // The claimant is behind: it gets the row that wins, as its holder's claim.
            guard let holder = claimOwner(router, of: current), holder != peer else { return }
            router.transmit(.sessionHandOver(owner: holder, record: DeliverySessionRecord(current)), to: peer, path: .stream)
        case .stored(let previous):
            router.counters.handOversStored &+= 1
            if let previous, previous.sourcePeer == nil {
                router.logger.info("session handed over", metadata: [
                    "session.id": "\(claim.sessionID)", "feature": "\(claim.featureID)", "owner": "\(owner.short)"])
            }
            router.emit(.session(claim, change: previous == nil ? .announced : .updated), feature: claim.featureID)
            let relayed = DeliveryMessage.sessionHandOver(owner: owner, record: message)
            for member in members.sorted() where member != peer && member != owner && router.peerStates[member]?.active == true {
                router.transmit(relayed, to: member, path: .stream)
            }
        }
    }

    /// On every activation of a member's channel: the open rows that changed hands, as claims
    /// of their holders (not the member's own rows: it knows them).
    func resendHandOvers(_ router: isolated DeliveryRouter, _ sessions: [SessionRecord], to peer: DeviceID) {
        let handedOver = sessions.filter { $0.handedOver && $0.status != "closed" }
        guard !handedOver.isEmpty, router.channels.deviceSetMembers().contains(peer) else { return }
        for row in handedOver {
            guard let holder = claimOwner(router, of: row), holder != peer else { continue }
            router.transmit(.sessionHandOver(owner: holder, record: DeliverySessionRecord(row)), to: peer, path: .stream)
        }
    }

    /// The device a stored row's claim names: its source, or this device for its own rows.
    private func claimOwner(_ router: isolated DeliveryRouter, of row: SessionRecord) -> DeviceID? {
        guard let source = row.sourcePeer else { return router.localDeviceID }
        return router.peersByKey[source]
    }
}
