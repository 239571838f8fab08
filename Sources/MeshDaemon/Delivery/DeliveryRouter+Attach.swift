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
        handOut.state.beginReplay(ObjectIdentifier(sink))
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
        spawn { await $0.handOut.replayInbox($0, features: features, to: sink) }
        return DeliveryAttachResult(attachmentID: change.id, localDeviceID: localDeviceID.description, peers: peers)
    }

    /// Ends an attachment (the client disconnected). Unknown ids are ignored.
    public func detach(_ attachmentID: UInt64) async {
        guard let change = attachments.detach(attachmentID) else { return }
        if let key = change.sinkGone {
            // Forget everything kept for this sink: a later sink may get the same identifier.
            // A replay still running for it stops at its next page and hands nothing more.
            for waiter in handOut.state.forget(key)?.waiters ?? [] { waiter.resume() }
        }
        announcePresence(change.presence)
    }

    /// `sink`'s connection shed these inbox items after the router handed them (a slow reader):
    /// hands them to it again, with the redelivery mark they had (its app never saw them), after
    /// what it was given so far. Only items handed to this sink and not acknowledged are offered
    /// again; the rest of its inbox is not (the app has it). While a replay runs for the sink
    /// this waits for its end, so when it returns the items were handed: the connection holds
    /// later inbox items back until then (`ShedInboxOrder.mustWait`), which keeps
    /// each peer's items in order.
    public func reoffer(_ items: [ShedInboxItem], to sink: any DeliveryEventSink) async {
        await handOut.reoffer(self, items, to: sink)
    }

    /// Whether some attachment still uses the sink `key`.
    func isAttached(_ key: ObjectIdentifier) -> Bool { attachments.isAttached(key) }

    /// Sends the features with an attached app to every active peer (when they changed: non-nil).
    func announcePresence(_ features: [String]?) {
        guard let features else { return }
        // `transmit` does not wait for the write: an attach answers at once even while a
        // peer's connection is stuck.
        for peer in peerStates.keys.sorted() where peerStates[peer]?.active == true {
            transmit(.presence(features: features), to: peer, path: .stream)
        }
    }

    /// A peer announced which features have an attached app there.
    func presenceReceived(_ features: [String], from peer: DeviceID) {
        let now = now()
        guard let changes = peerStates[peer]?.presenceReceived(features, now: now, lease: options.presenceLease) else { return }
        emitReachability(changes, of: peer)
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
        handOut.state.acknowledge(deleted)
        if !deleted.isEmpty { await sender.announceRoom(self) }
        return deleted.count
    }
}
