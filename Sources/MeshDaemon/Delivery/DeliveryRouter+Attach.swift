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
        let id = nextAttachmentID
        nextAttachmentID &+= 1
        attachments[id] = DeliveryAttachment(features: Set(features), sessionID: sessionID, app: app, sink: sink)
        // Inbox items arriving from now on wait for the replay (so they follow the stored ones).
        if replaying[ObjectIdentifier(sink)] == nil { replaying[ObjectIdentifier(sink)] = SinkReplay() }
        await announcePresenceIfChanged()
        let now = now()
        let peers = channels.pairedDevices().map { device in
            let state = peerStates[device.deviceID]
            let reachable = state.map { state in features.contains { state.isReachable($0, now: now) } } ?? false
            return DeliveryAttachResult.Peer(deviceID: device.deviceID.description, name: device.name, reachable: reachable)
        }
        await pairedPeersReady()
        // The peers' current watermarks first (the sink holds events until the reply is out).
        for event in currentWatermarks(features: Set(features), sessionID: sessionID) { sink.emit(event) }
        Task { await self.replayInbox(features: features, to: sink) }
        return DeliveryAttachResult(attachmentID: id, localDeviceID: localDeviceID.description, peers: peers)
    }

    /// Ends an attachment (the client disconnected). Unknown ids are ignored.
    public func detach(_ attachmentID: UInt64) async {
        guard let removed = attachments.removeValue(forKey: attachmentID) else { return }
        let key = ObjectIdentifier(removed.sink)
        if !isAttached(key) {
            // Forget everything kept for this sink: a later sink may get the same identifier.
            // A replay still running for it stops at its next page and hands nothing more.
            handedOut[key] = nil
            _ = endReplay(key)
            handOutRetries[key] = nil
        }
        await announcePresenceIfChanged()
    }

    /// Whether some attachment still uses the sink `key`.
    func isAttached(_ key: ObjectIdentifier) -> Bool {
        attachments.values.contains { ObjectIdentifier($0.sink) == key }
    }

    /// Sends the set of features with an attached app to every active peer when it changed.
    func announcePresenceIfChanged() async {
        let features = Set(attachments.values.flatMap(\.features)).sorted()
        guard features != announcedFeatures else { return }
        announcedFeatures = features
        // Not awaited: an attach must answer at once even while a peer's connection is stuck.
        let peers = peerStates.filter(\.value.active).map(\.key)
        Task {
            for peer in peers { await self.transmit(.presence(features: features), to: peer, path: .stream) }
        }
    }

    /// A peer announced which features have an attached app there.
    func presenceReceived(_ features: [String], from peer: DeviceID) {
        guard var state = peerStates[peer] else { return }
        state.remoteFeatures = Set(features)
        state.presenceExpiresAt = now() &+ UInt64(options.presenceLease * 1e9)
        peerStates[peer] = state
        updateReachability(peer, gained: .appAttached, lost: .appDetached)
    }

    /// Recomputes which features of `peer` are reachable and emits the changes.
    func updateReachability(_ peer: DeviceID, gained: ReachabilityChangeReason, lost: ReachabilityChangeReason) {
        guard var state = peerStates[peer] else { return }
        let now = now()
        let reachable: Set<String> = state.active && now < state.presenceExpiresAt ? state.remoteFeatures : []
        let up = reachable.subtracting(state.reachableFeatures), down = state.reachableFeatures.subtracting(reachable)
        state.reachableFeatures = reachable
        peerStates[peer] = state
        for feature in up.sorted() {
            emit(.reachability(peer: peer.description, featureID: feature, reachable: true, reason: gained), feature: feature)
        }
        for feature in down.sorted() {
            emit(.reachability(peer: peer.description, featureID: feature, reachable: false, reason: lost), feature: feature)
        }
    }

    /// Emits a live envelope to `sink`, or holds it while the sink's replay runs.
    func emitLive(_ event: DeliveryEvent, to sink: any DeliveryEventSink) {
        let key = ObjectIdentifier(sink)
        if let live = replaying[key].map({ $0.liveHeld }) {
            if case .envelope(_, inboxID: 0, _, _, _) = event {
                // A live realtime envelope (nothing else holds it): bounded, the excess shed.
                guard live < options.maximumDeferredLive else {
                    replaying[key]?.liveShed &+= 1
                    return
                }
                replaying[key]?.liveHeld += 1
            }
            replaying[key]?.deferred.append(.event(event))
        } else {
            sink.emit(event)
            // A burst reaches few sinks (one per attached app of the feature): a short scan.
            if inDatagramBurst, !burstSinks.contains(where: { $0 === sink }) { burstSinks.append(sink) }
        }
    }

    /// Emits entries to each sink that has not had them yet, recording their delivery in the
    /// store first (so an app that dies before acking gets them flagged as redeliveries).
    /// Sinks still replaying hold them for after their replay (`replay` is the replay's own
    /// call); their delivery is recorded when the replay hands them, so an entry a replay left
    /// in the store is not flagged when a later pass hands it. Sinks detached meanwhile (their
    /// connection is gone) get nothing; an id an app acknowledged is never handed out again.
    /// When the delivery cannot be recorded nothing is handed: false, and the sinks wait for a
    /// replay (`retryHandOutLater`); until then they are handed no inbox item (order).
    /// `recorded`: the transaction that stored the entries recorded their delivery already.
    @discardableResult
    func hand(_ entries: [InboxEntry], to sinks: [any DeliveryEventSink], replay: Bool = false,
              recorded alreadyRecorded: Bool = false) async -> Bool {
        guard !entries.isEmpty else { return true }
        var direct: [any DeliveryEventSink] = []
        for sink in sinks {
            let key = ObjectIdentifier(sink)
            guard isAttached(key) else { continue }
            if !replay, replaying[key] != nil {
                hold(entries, for: key)
            } else if replay || handOutRetries[key] == nil {
                direct.append(sink)
            }
        }
        // Recorded: what some sink is about to get (not what it had, nor what a replay holds).
        var ids: [InboxID] = [], listed = Set<Int64>()
        for sink in direct {
            let given = handedOut[ObjectIdentifier(sink)]
            for entry in entries where given?.contains(entry.id.rawValue) != true
                && !acknowledgedInbox.contains(entry.id.rawValue) && listed.insert(entry.id.rawValue).inserted {
                ids.append(entry.id)
            }
        }
        guard !ids.isEmpty else { return true }
        let store = self.store, toRecord = ids
        // TEST ONLY (`testBugHandOutBeforeDurable`): the items reach the app first and the
        // hand-out is recorded a tick later — the historical bug the simulator must catch.
        let recordLater = options.testBugHandOutBeforeDurable && !alreadyRecorded
        do {
            if !alreadyRecorded && !recordLater { _ = try await worker.run { try store.markDelivered(ids: toRecord) } }
        } catch {
            counters.storeErrors &+= 1
            logger.error("could not mark inbox items delivered; offered again later", metadata: ["error": "\(error)"])
            for sink in direct {
                // A replay stops at this page; its end schedules the next one.
                if replay { replaying[ObjectIdentifier(sink)]?.handOutFailed = true } else { retryHandOutLater(sink) }
            }
            return false
        }
        for sink in direct {
            let key = ObjectIdentifier(sink)
            guard isAttached(key) else { continue }
            // A replay page may read an entry held for this replay: it keeps its held mark.
            let held = replay ? replaying[key]?.heldMarks : nil
            var given = handedOut[key] ?? []
            for entry in entries where listed.contains(entry.id.rawValue) && !acknowledgedInbox.contains(entry.id.rawValue)
                && given.insert(entry.id.rawValue).inserted {
                sink.emit(.envelope(from: entry.peer, inboxID: entry.id.rawValue,
                                    redelivery: held?[entry.id.rawValue] ?? entry.isRedelivery,
                                    mode: entry.item.kind, encoded: entry.item.payload))
                counters.inboxDelivered &+= 1
            }
            handedOut[key] = given
        }
        if recordLater {
            let router = self
            loop.scheduleTask(in: .milliseconds(100)) {
                router.onLoop { router in
                    Task(executorPreference: router.taskExecutor) {
                        _ = try? await router.worker.run { try store.markDelivered(ids: toRecord) }
                    }
                }
            }
        }
        return true
    }

    /// Holds entries for the replay running for `key`, bounded: the excess stays in the store,
    /// and the replay takes another pass. Their delivery is recorded before the replay ends.
    func hold(_ entries: [InboxEntry], for key: ObjectIdentifier) {
        guard let held = replaying[key]?.inboxHeld else { return }
        let kept = entries.prefix(max(0, options.maximumDeferredInbox - held))
        if kept.count < entries.count { replaying[key]?.passAgain = true }
        replaying[key]?.inboxHeld += kept.count
        for entry in kept {
            replaying[key]?.heldMarks[entry.id.rawValue] = entry.isRedelivery
            replaying[key]?.unrecorded.append(entry.id)
            replaying[key]?.deferred.append(.entry(entry))
        }
    }

    /// Whether items of `featureID` stored now go straight to its apps: some are attached, and
    /// none is replaying its inbox or waiting to retry a hand-out (those read items later).
    func handsDirectly(_ featureID: String) -> Bool {
        let sinks = sinks(for: featureID)
        return !sinks.isEmpty && sinks.allSatisfy {
            let key = ObjectIdentifier($0)
            return isAttached(key) && replaying[key] == nil && handOutRetries[key] == nil
        }
    }

    /// The sinks of attachments of `featureID`, each once.
    func sinks(for featureID: String) -> [any DeliveryEventSink] {
        if let cached = sinksByFeature[featureID] { return cached }
        var seen = Set<ObjectIdentifier>()
        let sinks = attachments.values.filter { $0.features.contains(featureID) }.map(\.sink)
            .filter { seen.insert(ObjectIdentifier($0)).inserted }
        // Cached only when non-empty: bounded by the attached features, whatever peers send.
        if !sinks.isEmpty { sinksByFeature[featureID] = sinks }
        return sinks
    }

    /// An app acknowledged inbox items: deletes them. Returns how many were deleted.
    ///
    /// With `permits`, only items of features it accepts are deleted; the others are left alone
    /// as if their ids were unknown. Only ids that named an item are remembered as acknowledged,
    /// so an id acked before its item exists cannot keep that item from its app.
    public func acknowledgeInbox(ids: [Int64], permitting permits: (@Sendable (String) -> Bool)? = nil) async throws -> Int {
        let store = self.store, inboxIDs = ids.map(InboxID.init(rawValue:))
        let deleted: [Int64]
        do {
            deleted = try await worker.run { try store.deleteInbox(ids: inboxIDs, permitting: permits).map(\.rawValue) }
        } catch {
            throw MeshError.store(error)
        }
        for key in handedOut.keys { handedOut[key]?.subtract(deleted) }
        if !deleted.isEmpty { await announceRoom() }
        for id in deleted where acknowledgedInbox.insert(id).inserted { acknowledgedOrder.append(id) }
        if acknowledgedOrder.count > 200_000 {
            for id in acknowledgedOrder.prefix(100_000) { acknowledgedInbox.remove(id) }
            acknowledgedOrder.removeFirst(100_000)
        }
        return deleted.count
    }
}
