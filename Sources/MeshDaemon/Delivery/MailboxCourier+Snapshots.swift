import Foundation
import MeshCore
import MeshCrypto

/// The latest-state slots through the relay mailbox (docs/RELAY.md, "Store and forward").
extension MailboxCourier {
    /// Slots read and posted per pass at most (a pass runs every 2 s).
    static let snapshotsPerPass = 64

    /// Lists the outbound slots' revisions and posts, as snapshot boxes, those the peer's state
    /// picks.
    func snapshotPass(_ router: isolated DeliveryRouter, _ peer: DeviceID, epoch: UInt64) async {
        defer { snapshotStates[peer]?.endPass(now: router.now()) }
        let store = router.store
        let listing: [MailboxSnapshotPostState.SlotRevision]
        do {
            listing = try await router.worker.run { try store.slots.listOutboundRevisions() }.map {
                MailboxSnapshotPostState.SlotRevision(key: .init(featureID: $0.featureID, sessionID: $0.sessionID), revision: $0.revision)
            }
        } catch {
            router.noteStoreError(error, "could not list the snapshot slots for the relay mailbox")
            return
        }
        guard let chosen = snapshotStates[peer]?.plan(listing, now: router.now()).prefix(Self.snapshotsPerPass), !chosen.isEmpty else { return }
        let slots: [SnapshotSlot?]
        do {
            slots = try await router.worker.run {
                try chosen.map { try store.slots.outbound(featureID: $0.key.featureID, sessionID: $0.key.sessionID) }
            }
        } catch {
            router.noteStoreError(error, "could not read a snapshot slot for the relay mailbox")
            return
        }
        // The reads suspended: a channel may have come up, or the broker connection changed.
        guard router.peerStates[peer]?.active != true, let mailbox = router.channels.mailbox,
              mailbox.postingState(for: peer)?.epoch == epoch else { return }
        for (slot, read) in zip(chosen, slots) {
            // A slot that moved on since the listing is posted by the next pass, at its new revision.
            guard let read, read.revision == slot.revision else { continue }
            let plaintext = DeliveryMessage.snapshotPush(read.bytes).encode()
            guard plaintext.count <= mailbox.maximumPlaintextBytes else {
                counters.snapshotsTooLarge &+= 1
                snapshotStates[peer]?.skipped(slot)
                continue
            }
            guard snapshotStates[peer]?.hasRoom(forBytes: plaintext.count) == true,
                  mailbox.post(plaintext, kind: .snapshot, to: peer) else { return }
            counters.snapshotsPosted &+= 1
            snapshotStates[peer]?.posted(slot, bytes: plaintext.count, now: router.now())
        }
    }

    /// A snapshot box: into the peer's inbound slot, acked unless a limit refused it (it comes
    /// again then), and shown to the attached apps when the slot took it.
    func snapshot(_ router: isolated DeliveryRouter, _ plaintext: [UInt8], from peer: DeviceID) async {
        guard case .snapshotPush(let bytes)? = try? DeliveryMessage(decoding: plaintext),
              let snapshot = SnapshotSlots.decode(bytes) else {
            counters.malformed &+= 1
            router.warnPeerFault("dropped a mailbox snapshot box that is not a snapshot push", peer: peer)
            return
        }
        counters.snapshotsReceived &+= 1
        let key = peer.description, metadata = snapshot.metadata
        let result: StorePutResult, shown: Bool
        do {
            (result, shown) = try await router.directory.snapshotSlots.receive(snapshot, bytes: bytes, from: key, isReply: false,
                                                                               at: router.wallNow())
        } catch {
            router.noteStoreError(error, "could not store a snapshot from the relay mailbox")
            return
        }
        if case .refused = result {
            counters.snapshotsRefused &+= 1
            router.counters.snapshotsRefused &+= 1
            router.warnPeerFault("refused a snapshot: the peer's inbound slots are at their limit", peer: peer)
            return
        }
        // Stored, or the slot holds this revision or a newer one (or the session is closed):
        // either way the peer need not post it again.
        let ackID = MailboxSnapshotAckID.of(featureID: metadata.featureID, sessionID: metadata.sessionID, revision: snapshot.revision)
        if let mailbox = router.channels.mailbox, mailbox.post(MailboxAck(eventIDs: [ackID]).encode(), kind: .ack, to: peer) {
            counters.acksPosted &+= 1
        }
        guard shown else {
            counters.snapshotsStale &+= 1
            return
        }
        router.emit(.snapshot(from: key, encoded: bytes), feature: metadata.featureID)
    }
}
