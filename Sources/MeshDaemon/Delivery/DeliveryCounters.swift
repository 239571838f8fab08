/// Counters of the delivery router, shown by `meshctl status` (names are stable).
struct DeliveryCounters: Sendable {
    var realtimeSent: UInt64 = 0
    /// Datagrams that carried realtime items (one 0x01 or one 0x0D batch each).
    var realtimeDatagrams: UInt64 = 0
    /// Of those, the 0x0D batches (two or more items).
    var realtimeBatches: UInt64 = 0
    var realtimeAcked: UInt64 = 0
    /// Datagrams this daemon sent carrying acks of received realtime items (0x02 or 0x0C).
    var realtimeAckDatagrams: UInt64 = 0
    var realtimeFallbacks: UInt64 = 0
    var realtimeReceived: UInt64 = 0
    var realtimeDuplicates: UInt64 = 0
    /// Live realtime envelopes shed because their app's inbox replay ran and held the maximum.
    var deferredLiveShed: UInt64 = 0
    var reliableEnqueued: UInt64 = 0
    var reliableBatchesSent: UInt64 = 0
    var reliableItemsSent: UInt64 = 0
    var reliableAcked: UInt64 = 0
    /// Outbox deletes of acknowledged items (acks arriving together share one; each goes into a
    /// group commit).
    var reliableAckCommits: UInt64 = 0
    var reliableRetries: UInt64 = 0
    /// Restarts from the last ack because the receiver said it has room again (0x0F).
    var reliableRoomResends: UInt64 = 0
    /// Times this daemon told a sender whose batch it had refused that it has room again.
    var inboxRoomAnnounced: UInt64 = 0
    var reliableRefused: UInt64 = 0
    /// Sends (reliable items, realtime fallbacks) refused because their local uid's share of
    /// the outbox was full (`uid_max_outbox_*`).
    var outboxUIDShareRefused: UInt64 = 0
    /// Snapshot publishes refused because their local uid's share of the outbound slots was
    /// full (`uid_max_slots`, `uid_max_slot_bytes`).
    var slotsUIDShareRefused: UInt64 = 0
    /// Session announces and closes refused because their local uid's share of this device's
    /// session rows was full (`uid_max_sessions`).
    var sessionsUIDShareRefused: UInt64 = 0
    /// Anchor sets refused because their local uid's share of this device's timer anchors was
    /// full (`uid_max_anchors`).
    var anchorsUIDShareRefused: UInt64 = 0
    var inboxStored: UInt64 = 0
    var inboxDuplicates: UInt64 = 0
    var inboxDelivered: UInt64 = 0
    /// Of those, inbox items offered again to the same attachment because its connection shed them.
    var inboxReoffered: UInt64 = 0
    var inboxDamagedIDs: UInt64 = 0
    /// Hand-outs to an attachment tried again after its delivery could not be recorded.
    var inboxHandOutRetries: UInt64 = 0
    var outboxRepairedIDs: UInt64 = 0
    var inboxRefused: UInt64 = 0
    /// Reliable items dropped unacknowledged because an earlier batch was refused (resent).
    var inboxAfterRefusal: UInt64 = 0
    var snapshotsPushed: UInt64 = 0
    var snapshotsReceived: UInt64 = 0
    var snapshotsStale: UInt64 = 0
    var snapshotRequestsAnsweredFromSlot: UInt64 = 0
    var pendingDropped: UInt64 = 0
    var pendingCollapsed: UInt64 = 0
    var pendingDrained: UInt64 = 0
    var anchorsReceived: UInt64 = 0
    var sessionsReceived: UInt64 = 0
    var malformed: UInt64 = 0
    var storeErrors: UInt64 = 0
    /// Reliable acks (0x04) for a sequence this daemon never sent to that peer: refused.
    var reliableAcksRefused: UInt64 = 0
    /// Received items whose event ID, feature, session or kind disagree with their envelope.
    var itemsRefused: UInt64 = 0
    /// Received items not taken because the inbox pipeline held its byte limit (unacked: the
    /// sender keeps them).
    var inboxBacklogDropped: UInt64 = 0
    /// Received timer anchors refused (a negative accumulated time, a start out of range).
    var anchorsRefused: UInt64 = 0
    /// Watermarks from a peer refused because it already has the maximum of sessions with one.
    var watermarksRefused: UInt64 = 0
    /// Received snapshots not stored because the peer's inbound slots (or all peers') are at a
    /// limit (`inbound_max_slots*`).
    var snapshotsRefused: UInt64 = 0
    /// Received timer anchors not stored because the peer's anchors (or all peers') are at a
    /// limit (`inbound_max_anchors*`).
    var anchorsOverLimit: UInt64 = 0
    /// Received session rows not stored because the peer's rows (or all peers') are at a limit
    /// (`inbound_max_sessions*`).
    var sessionsRefused: UInt64 = 0
    /// Received session rows not stored because the row of that (feature, session) belongs to
    /// this device or to another peer.
    var sessionsNotOwned: UInt64 = 0
    /// Sessions this device took over from an owner that was removed or stayed away
    /// (docs/DEVICE-SET.md, "Session owner hand-over").
    var sessionsTakenOver: UInt64 = 0
    /// Hand-over claims received from members, and the ones stored (the row changed hands here).
    var handOversReceived: UInt64 = 0
    var handOversStored: UInt64 = 0
    /// Hand-over claims refused: from a device that is not a member, naming a device that is
    /// not one, for a closed status or a revision above 2^63 − 1, or past a row limit.
    var handOversRefused: UInt64 = 0
    /// Inbox items deleted because no app of their feature took them in time.
    var inboxExpired: UInt64 = 0
    /// Acks of received reliable batches not sent because the peer's connection does not drain
    /// (the peer's resend gets a later ack).
    var reliableAcksSkipped: UInt64 = 0

    /// Changes whenever items move (sent, received, stored, handed out, acknowledged).
    var traffic: UInt64 {
        realtimeSent &+ realtimeReceived &+ reliableEnqueued &+ reliableItemsSent &+ reliableAcked &+ inboxStored
            &+ inboxDelivered &+ snapshotsPushed &+ snapshotsReceived
    }

    var dictionary: [String: UInt64] {
        [
            "delivery.realtime.sent": realtimeSent,
            "delivery.realtime.datagrams": realtimeDatagrams,
            "delivery.realtime.batches": realtimeBatches,
            "delivery.realtime.acked": realtimeAcked,
            "delivery.realtime.ack_datagrams": realtimeAckDatagrams,
            "delivery.realtime.fallbacks": realtimeFallbacks,
            "delivery.realtime.received": realtimeReceived,
            "delivery.realtime.duplicates": realtimeDuplicates,
            "delivery.realtime.shed_during_replay": deferredLiveShed,
            "delivery.reliable.enqueued": reliableEnqueued,
            "delivery.reliable.batches_sent": reliableBatchesSent,
            "delivery.reliable.items_sent": reliableItemsSent,
            "delivery.reliable.acked": reliableAcked,
            "delivery.reliable.ack_commits": reliableAckCommits,
            "delivery.reliable.retries": reliableRetries,
            "delivery.reliable.room_resends": reliableRoomResends,
            "delivery.inbox.room_announced": inboxRoomAnnounced,
            "delivery.reliable.refused": reliableRefused,
            "delivery.outbox.uid_share_refused": outboxUIDShareRefused,
            "delivery.slots.uid_share_refused": slotsUIDShareRefused,
            "delivery.sessions.uid_share_refused": sessionsUIDShareRefused,
            "delivery.anchors.uid_share_refused": anchorsUIDShareRefused,
            "delivery.reliable.repaired_ids": outboxRepairedIDs,
            "delivery.inbox.stored": inboxStored,
            "delivery.inbox.duplicates": inboxDuplicates,
            "delivery.inbox.delivered": inboxDelivered,
            "delivery.inbox.reoffered": inboxReoffered,
            "delivery.inbox.damaged_ids": inboxDamagedIDs,
            "delivery.inbox.hand_out_retries": inboxHandOutRetries,
            "delivery.inbox.refused": inboxRefused,
            "delivery.inbox.dropped_after_refusal": inboxAfterRefusal,
            "delivery.snapshots.pushed": snapshotsPushed,
            "delivery.snapshots.received": snapshotsReceived,
            "delivery.snapshots.stale": snapshotsStale,
            "delivery.snapshot_requests.answered_from_slot": snapshotRequestsAnsweredFromSlot,
            "pending.dropped": pendingDropped,
            "pending.collapsed": pendingCollapsed,
            "pending.drained": pendingDrained,
            "delivery.anchors.received": anchorsReceived,
            "delivery.sessions.received": sessionsReceived,
            "delivery.malformed": malformed,
            "delivery.reliable.acks_refused": reliableAcksRefused,
            "delivery.reliable.acks_skipped": reliableAcksSkipped,
            "delivery.items_refused": itemsRefused,
            "delivery.inbox.backlog_dropped": inboxBacklogDropped,
            "delivery.anchors.refused": anchorsRefused,
            "delivery.watermarks.refused": watermarksRefused,
            "delivery.snapshots.refused": snapshotsRefused,
            "delivery.anchors.over_limit": anchorsOverLimit,
            "delivery.sessions.refused": sessionsRefused,
            "delivery.sessions.not_owned": sessionsNotOwned,
            "delivery.sessions.taken_over": sessionsTakenOver,
            "delivery.sessions.handovers_received": handOversReceived,
            "delivery.sessions.handovers_stored": handOversStored,
            "delivery.sessions.handovers_refused": handOversRefused,
            "delivery.inbox.expired": inboxExpired,
            "delivery.store_errors": storeErrors,
        ]
    }
}
