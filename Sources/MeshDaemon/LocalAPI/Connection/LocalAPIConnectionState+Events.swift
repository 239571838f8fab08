/// Events for one attachment that arrived before its attach reply was written: held so the
/// reply always comes first, at most `LocalAPIConnectionState.heldLimit` of them.
struct LocalAPIHeldEvents: Equatable {
    var events: [DeliveryEvent] = []
    /// Events shed beyond the limit.
    var shed: UInt64 = 0
    /// The inbox items among them (offered to the attachment again).
    var shedInbox: [ShedInboxItem] = []
}

/// The event path: every event for an attachment of the connection comes through `eventArrived`,
/// which holds it (before the attach reply), sheds it (the client reads too slowly), makes it
/// wait behind an earlier shed inbox item of its attachment, or lets it be written.
extension LocalAPIConnectionState {
    /// What becomes of one event.
    enum EventVerdict: Equatable {
        /// Write it now.
        case write
        /// Held until its attach reply is written (`attachAnswered` hands it back).
        case held
        /// Shed: counted, reported in the next `events.dropped`; an inbox item is noted to be
        /// offered again.
        case shed
        /// An inbox item that waits behind an earlier one of its attachment still to be offered
        /// again: noted with it, not reported (the client gets them all, in order).
        case waitsInOrder
        /// Dropped silently (the connection is closing).
        case dropped
    }

    /// An event for the attachment made by the attach request `requestID`.
    mutating func eventArrived(_ event: DeliveryEvent, requestID: UInt32) -> EventVerdict {
        guard phase != .closing else { return .dropped }
        if !holding.isEmpty, var held = holding[requestID] {
            if held.events.count < Self.heldLimit {
                held.events.append(event)
            } else {
                held.shed &+= 1
                if let item = event.shedInboxItem { held.shedInbox.append(item) }
            }
            holding[requestID] = held
            return .held
        }
        if shedInbox.holdsBack, let item = event.shedInboxItem, shedInbox.mustWait(item, requestID: requestID) {
            shedInbox.note([item], for: requestID)
            return .waitsInOrder
        }
        guard flowLetsEventThrough() else {
            if let item = event.shedInboxItem { shedInbox.note([item], for: requestID) }
            return .shed
        }
        return .write
    }

    /// `count` events for the attachment `requestID` were shed before they reached the
    /// connection (by the router); `inboxItems` are the inbox items among them. Returns the
    /// count to report in an `events.dropped` event now, if any.
    mutating func eventsShedElsewhere(_ count: UInt64, requestID: UInt32, inboxItems: [ShedInboxItem]) -> UInt64? {
        guard phase != .closing else { return nil }
        shedInbox.note(inboxItems, for: requestID)
        return flowReportsShed(count)
    }

    /// Reserves room for the attachment of the attach request `requestID`.
    mutating func reserveAttachment(_ requestID: UInt32) -> LocalAPIAttachReservation {
        guard !attachRequestIDs.contains(requestID) else { return .requestIDInUse }
        guard attachRequestIDs.count < Self.maximumAttachments else { return .full }
        attachRequestIDs.insert(requestID)
        holding[requestID] = LocalAPIHeldEvents()
        return .reserved
    }

    /// The reply to an attach was written (`succeeded`) or the attach failed. A failed attach
    /// gives its reservation back; a successful one's held events come back to be offered in
    /// order (`eventArrived`), with the count shed beyond the limit (report it through
    /// `eventsShedElsewhere`, which also notes the inbox items among them).
    mutating func attachAnswered(requestID: UInt32, reservation: LocalAPIAttachReservation?,
                                 succeeded: Bool) -> LocalAPIHeldEvents? {
        guard reservation == .reserved else { return nil }
        let held = holding.removeValue(forKey: requestID)
        guard succeeded else {
            attachRequestIDs.remove(requestID)
            return nil
        }
        return held
    }

    /// The next round of shed inbox items to offer again to their attachments, while the
    /// client keeps up and no round runs: at most `room` items, each list with its
    /// attachment's sink (`sink` finds it; items of attachments that ended are forgotten).
    mutating func takeShedInboxRound<Sink>(room: Int, sink: (UInt32) -> Sink?) -> [(sink: Sink, items: [ShedInboxItem])]? {
        guard phase != .closing, !reofferRunning, flow.writable, !shedInbox.isEmpty else { return nil }
        let round = shedInbox.takeRound(room: room, sink: sink)
        guard !round.isEmpty else { return nil }
        reofferRunning = true
        return round
    }

    /// The round was handed to the router.
    mutating func shedInboxRoundHanded() {
        shedInbox.roundHanded()
        reofferRunning = false
    }
}

extension DeliveryEvent {
    /// The inbox item this event hands to the app, if it is an inbox envelope (realtime
    /// envelopes and other events are not offered again when shed).
    var shedInboxItem: ShedInboxItem? {
        guard case .envelope(_, let inboxID, let redelivery, _, _) = self, inboxID != 0 else { return nil }
        return ShedInboxItem(inboxID: inboxID, redelivery: redelivery)
    }
}
