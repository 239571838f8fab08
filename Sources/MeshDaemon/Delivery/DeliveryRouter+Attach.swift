import Foundation
import MeshCrypto
import MeshCore

/// Attachments of local apps, feature presence and reachability events.
extension DeliveryRouter {
    /// Attaches a client for `features`: from now on `sink` gets their events. Items waiting in
    /// the inbox for these features are handed to `sink` right after (marked as redeliveries
    /// when handed to an attachment before and not acknowledged). One client may attach
    /// several times; features add up.
    public func attach(features: [String], sessionID: UUID? = nil, app: String? = nil,
                       sink: any DeliveryEventSink) async -> DeliveryAttachResult {
        let change = attachments.attach(features: Set(features), sessionID: sessionID, app: app, sink: sink)
        // Inbox items arriving from now on wait for the replay (so they follow the stored ones).
        handOut.beginReplay(ObjectIdentifier(sink))
        announcePresence(change.presence)
        let now = now()
        let peers = channels.pairedDevices().map { device in
            let state = peerStates[device.deviceID]
            let reachable = state.map { state in features.contains { state.isReachable($0, now: now) } } ?? false
            return DeliveryAttachResult.Peer(deviceID: device.deviceID.description, name: device.name, reachable: reachable)
        }
        await directory.pairedPeersReady(self)
        // The peers' current watermarks first (the sink holds events until the reply is out).
        for event in directory.currentWatermarks(self, features: Set(features), sessionID: sessionID) { sink.emit(event) }
        spawn { await $0.replayInbox(features: features, to: sink) }
        return DeliveryAttachResult(attachmentID: change.id, localDeviceID: localDeviceID.description, peers: peers)
    }

    /// Ends an attachment (the client disconnected). Unknown ids are ignored.
    public func detach(_ attachmentID: UInt64) async {
        guard let change = attachments.detach(attachmentID) else { return }
        if let key = change.sinkGone {
            // Forget everything kept for this sink: a later sink may get the same identifier.
            // A replay still running for it stops at its next page and hands nothing more.
            for waiter in handOut.forget(key)?.waiters ?? [] { waiter.resume() }
        }
        announcePresence(change.presence)
    }

    /// Whether some attachment still uses the sink `key`.
    func isAttached(_ key: ObjectIdentifier) -> Bool { attachments.isAttached(key) }

    /// Sends the features with an attached app to every active peer (when they changed: non-nil).
    func announcePresence(_ features: [String]?) {
        guard let features else { return }
        // Not awaited: an attach must answer at once even while a peer's connection is stuck.
        let peers = peerStates.keys.sorted().filter { peerStates[$0]?.active == true }
        spawn { router in
            for peer in peers { await router.transmit(.presence(features: features), to: peer, path: .stream) }
        }
    }

    /// A peer announced which features have an attached app there.
    func presenceReceived(_ features: [String], from peer: DeviceID) {
        let now = now()
        guard let changes = peerStates[peer]?.presenceReceived(features, now: now, lease: options.presenceLease) else { return }
        emitReachability(changes, of: peer)
    }

    /// Emits a live envelope to `sink`, or holds it while the sink's replay runs.
    func emitLive(_ event: DeliveryEvent, to sink: any DeliveryEventSink) {
        guard !handOut.holdLive(event, for: ObjectIdentifier(sink)) else { return }
        sink.emit(event)
        consumer.datagramAcks.emitted(to: sink)
    }

    /// Emits entries to each sink that has not had them yet, recording their delivery in the
    /// store first (so an app that dies before acking gets them flagged as redeliveries);
    /// `InboxHandOut.plan` decides who gets what. Sinks detached meanwhile (their connection
    /// is gone) get nothing. When the delivery cannot be recorded nothing is handed: false, and
    /// the sinks wait for a replay (`retryHandOutLater`); until then they are handed no inbox
    /// item (order). `replay`: the replay's own page. `recorded`: the transaction that stored
    /// the entries recorded their delivery already.
    @discardableResult
    func hand(_ entries: [InboxEntry], to sinks: [any DeliveryEventSink], replay: Bool = false,
              recorded alreadyRecorded: Bool = false) async -> Bool {
        guard !entries.isEmpty else { return true }
        let attached = sinks.filter { isAttached(ObjectIdentifier($0)) }
        let plan = handOut.plan(entries, to: attached.map(ObjectIdentifier.init), replay: replay)
        guard !plan.ids.isEmpty else { return true }
        let store = self.store, toRecord = plan.ids
        // TEST ONLY (`testBugHandOutBeforeDurable`): the items reach the app first and the
        // hand-out is recorded a tick later — the historical bug the simulator must catch.
        let recordLater = options.testBugHandOutBeforeDurable && !alreadyRecorded
        do {
            if !alreadyRecorded && !recordLater { _ = try await worker.run { try store.inbox.markDelivered(ids: toRecord) } }
        } catch {
            counters.storeErrors &+= 1
            logger.error("could not mark inbox items delivered; offered again later", metadata: ["error": "\(error)"])
            for index in plan.direct {
                // A replay stops at this page; its end schedules the next one.
                let key = ObjectIdentifier(attached[index])
                if replay { handOut.replayFailed(key) } else { retryHandOutLater(key) }
            }
            return false
        }
        for index in plan.direct where isAttached(ObjectIdentifier(attached[index])) {
            let sink = attached[index]
            handOut.give(entries, listed: plan.listed, to: ObjectIdentifier(sink), replay: replay) { entry, redelivery in
                sink.emit(entry.envelope(redelivery: redelivery))
                counters.inboxDelivered &+= 1
            }
        }
        if recordLater {
            let router = self
            loop.scheduleTask(in: .milliseconds(100)) {
                router.onLoop { router in
                    router.spawn { _ = try? await $0.worker.run { try store.inbox.markDelivered(ids: toRecord) } }
                }
            }
        }
        return true
    }

    /// Whether items of `featureID` stored now go straight to its apps: some are attached, and
    /// none is replaying its inbox or waiting to retry a hand-out (those read items later).
    func handsDirectly(_ featureID: String) -> Bool {
        let sinks = sinks(for: featureID)
        return !sinks.isEmpty && sinks.allSatisfy { isAttached(ObjectIdentifier($0)) && handOut.readsLive(ObjectIdentifier($0)) }
    }

    /// The sinks of attachments of `featureID`, each once.
    func sinks(for featureID: String) -> [any DeliveryEventSink] { attachments.sinks(for: featureID) }

    /// An app acknowledged inbox items: deletes them. Returns how many were deleted.
    ///
    /// With `permits`, only items of features it accepts are deleted; the others are left alone
    /// as if their ids were unknown. Only ids that named an item are remembered as acknowledged,
    /// so an id acked before its item exists cannot keep that item from its app.
    public func acknowledgeInbox(ids: [Int64], permitting permits: (@Sendable (String) -> Bool)? = nil) async throws -> Int {
        let store = self.store, inboxIDs = ids.map(InboxID.init(rawValue:))
        let deleted = try await worker.call { try store.inbox.delete(ids: inboxIDs, permitting: permits).map(\.rawValue) }
        handOut.acknowledge(deleted)
        if !deleted.isEmpty { await sender.announceRoom(self) }
        return deleted.count
    }
}
