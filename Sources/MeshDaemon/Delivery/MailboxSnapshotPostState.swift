import Foundation

/// Which of this device's latest-state slots go to one peer's mailbox at the broker, and when:
/// the snapshot side of store and forward, while the peer has no live channel.
///
/// A value in the router's `MailboxCourier`, beside the items' ``MailboxPostState``; its methods
/// take what happened and the monotonic time (ns) and say what to post. The policy
/// (docs/RELAY.md, "Store and forward"):
///
/// - Every ``passSeconds`` a pass lists the outbound slots' revisions and posts each slot whose
///   current revision the peer has not acknowledged and this **round** has not posted yet. A new
///   round (every unacknowledged slot posted again) starts after ``resendSeconds``, when the
///   broker may have lost the boxes (a new `epoch`), and when a live channel came and went.
/// - Bounds, all counted per peer: ``maximumBoxes`` boxes / ``maximumBytes`` bytes in all,
///   posted and not acknowledged, past which every slot waits for acks or a live channel; and
///   ``maximumBoxesPerSlot`` boxes of one slot posted at once, past which that slot's newer
///   revisions go out at most once per ``slowPostSeconds`` (the older boxes still count), so
///   the latest revision of a busy slot still reaches the broker before this device goes off.
///   So the queue the broker keeps for an absent peer stays bounded however often an app
///   publishes.
/// - The peer acks a snapshot by its ``MailboxSnapshotAckID`` (in an ordinary ack box); the
///   ``rememberedAcks`` IDs acked last are kept (items' event IDs named by the same ack boxes
///   among them), so a slot the peer has is not posted again; one forgotten is posted once more,
///   and the peer, whose slot holds it already, acks it again.
struct MailboxSnapshotPostState: Sendable, Equatable {
    /// Boxes of one slot posted and not acknowledged before its revisions slow down.
    static let maximumBoxesPerSlot = 8
    /// Past ``maximumBoxesPerSlot``, the shortest time between two boxes of that slot.
    static let slowPostSeconds: Double = 30
    /// Boxes posted and not acknowledged, all slots together.
    static let maximumBoxes = 1_024
    /// Their plaintext bytes.
    static let maximumBytes = 16 << 20
    /// Acked IDs kept.
    static let rememberedAcks = 4_096
    /// Pause between passes.
    static let passSeconds: Double = 2
    /// A round's age after which unacknowledged slots are posted again.
    static let resendSeconds: Double = 600

    /// An outbound slot.
    struct SlotKey: Sendable, Hashable, Comparable {
        var featureID: String
        var sessionID: UUID

        static func < (lhs: SlotKey, rhs: SlotKey) -> Bool {
            (lhs.featureID, lhs.sessionID.uuidString) < (rhs.featureID, rhs.sessionID.uuidString)
        }
    }

    /// One slot's revision, as the store lists it.
    struct SlotRevision: Sendable, Equatable {
        var key: SlotKey
        var revision: UInt64

        var ackID: UUID { MailboxSnapshotAckID.of(featureID: key.featureID, sessionID: key.sessionID, revision: revision) }
    }

    private struct Box: Sendable, Equatable {
        var revision: UInt64
        var bytes: Int
    }

    /// The broker session the round posted to (nil: no round yet).
    private(set) var epoch: UInt64?
    private(set) var roundStartedAt: UInt64 = 0
    private(set) var nextPassAt: UInt64 = 0
    private(set) var passing = false
    /// Boxes posted and not acknowledged, per slot.
    private var outstanding: [SlotKey: [Box]] = [:]
    private(set) var outstandingBoxes = 0
    private(set) var outstandingBytes = 0
    /// The ack ID of every outstanding box, to its slot and revision.
    private var outstandingIDs: [UUID: SlotRevision] = [:]
    /// The revision of each slot this round posted (or found too large).
    private var roundRevisions: [SlotKey: UInt64] = [:]
    /// When each slot's last box was posted.
    private var lastPostedAt: [SlotKey: UInt64] = [:]
    /// Acked IDs, oldest first, and the same as a set.
    private var ackedOrder: [UUID] = []
    private var ackedHead = 0
    private var acked: Set<UUID> = []

    /// A pass may start at `now` for the broker session `epoch`: true when it may (the caller
    /// lists the slots and asks ``plan(_:)``), false when a pass runs or it is not time yet.
    mutating func beginPass(now: UInt64, epoch: UInt64) -> Bool {
        guard !passing, now >= nextPassAt else { return false }
        if self.epoch != epoch {
            // The broker no longer holds what was posted before: nothing is outstanding.
            outstanding = [:]
            outstandingIDs = [:]
            lastPostedAt = [:]
            outstandingBoxes = 0
            outstandingBytes = 0
            startRound(now: now, epoch: epoch)
        } else if now >= roundStartedAt, Double(now - roundStartedAt) / 1e9 >= Self.resendSeconds, !outstanding.isEmpty {
            startRound(now: now, epoch: epoch)
        }
        passing = true
        return true
    }

    /// The slots of `slots` (the store's listing) to read and post at `now`, in key order: not
    /// acknowledged, not posted in this round, within the per-peer box counts, and a slot with
    /// ``maximumBoxesPerSlot`` boxes out only once ``slowPostSeconds`` passed since its last.
    /// Changes nothing; ``posted(_:bytes:now:)`` records what went out.
    func plan(_ slots: [SlotRevision], now: UInt64) -> [SlotRevision] {
        var boxes = outstandingBoxes
        var chosen: [SlotRevision] = []
        for slot in slots.sorted(by: { $0.key < $1.key }) {
            guard boxes < Self.maximumBoxes, outstandingBytes < Self.maximumBytes else { break }
            guard roundRevisions[slot.key] != slot.revision, !acked.contains(slot.ackID) else { continue }
            if (outstanding[slot.key]?.count ?? 0) >= Self.maximumBoxesPerSlot {
                guard let last = lastPostedAt[slot.key], now >= last,
                      Double(now - last) / 1e9 >= Self.slowPostSeconds else { continue }
            }
            chosen.append(slot)
            boxes += 1
        }
        return chosen
    }

    /// Whether a box of `bytes` plaintext bytes fits the peer's byte bound now.
    func hasRoom(forBytes bytes: Int) -> Bool {
        outstandingBoxes < Self.maximumBoxes && outstandingBytes + bytes <= Self.maximumBytes
    }

    /// A box of `slot` with `bytes` plaintext bytes was posted at `now`.
    mutating func posted(_ slot: SlotRevision, bytes: Int, now: UInt64) {
        roundRevisions[slot.key] = slot.revision
        lastPostedAt[slot.key] = now
        outstanding[slot.key, default: []].append(Box(revision: slot.revision, bytes: bytes))
        outstandingIDs[slot.ackID] = slot
        outstandingBoxes += 1
        outstandingBytes += bytes
    }

    /// `slot` was passed over in this round (too large for a box, or gone from the store).
    mutating func skipped(_ slot: SlotRevision) { roundRevisions[slot.key] = slot.revision }

    /// The pass ended at `now`.
    mutating func endPass(now: UInt64) {
        passing = false
        nextPassAt = now + UInt64(Self.passSeconds * 1e9)
    }

    /// The peer named these IDs in an ack box (event IDs of items among them): each that names a
    /// snapshot frees that slot's boxes up to the acknowledged revision, and is remembered.
    mutating func acked(_ ids: [UUID]) {
        for id in ids {
            if let slot = outstandingIDs[id], let boxes = outstanding[slot.key] {
                let freed = boxes.filter { $0.revision <= slot.revision }
                let kept = boxes.filter { $0.revision > slot.revision }
                outstanding[slot.key] = kept.isEmpty ? nil : kept
                if kept.isEmpty { lastPostedAt[slot.key] = nil }
                outstandingBoxes -= freed.count
                outstandingBytes -= freed.reduce(0) { $0 + $1.bytes }
                for box in freed {
                    outstandingIDs[SlotRevision(key: slot.key, revision: box.revision).ackID] = nil
                }
            }
            remember(id)
        }
    }

    /// A live channel with the peer carries the slots now (it pushes them on activation): the
    /// next time the peer is away, a new round posts what is still unacknowledged.
    mutating func channelActive() {
        guard !roundRevisions.isEmpty else { return }
        roundRevisions = [:]
    }

    private mutating func startRound(now: UInt64, epoch: UInt64) {
        self.epoch = epoch
        roundStartedAt = now
        roundRevisions = [:]
    }

    private mutating func remember(_ id: UUID) {
        guard acked.insert(id).inserted else { return }
        ackedOrder.append(id)
        if acked.count > Self.rememberedAcks {
            acked.remove(ackedOrder[ackedHead])
            ackedHead += 1
            if ackedHead >= Self.rememberedAcks {
                ackedOrder.removeFirst(ackedHead)
                ackedHead = 0
            }
        }
    }
}
