/// The inbox items one local API connection shed before its app saw them, per attach request,
/// to be offered to that attachment again — kept so each attachment still gets its inbox items
/// in the order they arrived (per-peer order): once one is shed, the attachment's later inbox
/// items wait behind it (`mustWait`) and are noted with it, and they are offered again in
/// rounds, lowest inbox id first. A value with no I/O; the connection handler owns it.
struct ShedInboxOrder {
    /// Noted items per attach request, in inbox id order (the order they arrived in).
    private var noted: [UInt32: [ShedInboxItem]] = [:]
    /// Inbox ids of the round being handed again that were not written yet, per attach request.
    private var roundExpected: [UInt32: Set<Int64>] = [:]

    /// Nothing is noted (a round may still be on its way).
    var isEmpty: Bool { noted.isEmpty }

    /// Whether inbox events may have to wait now: cheap, checked before decoding an event.
    var holdsBack: Bool { !noted.isEmpty || !roundExpected.isEmpty }

    /// Notes inbox items to offer again to the attachment of `requestID`, keeping its list in id
    /// order: items mostly come in that order and are appended; one shed again during its round
    /// goes back to its place (binary search), so a round never sorts the whole list.
    mutating func note(_ items: [ShedInboxItem], for requestID: UInt32) {
        guard !items.isEmpty else { return }
        var list = noted.removeValue(forKey: requestID) ?? []
        for item in items {
            guard let last = list.last, item.inboxID < last.inboxID else {
                list.append(item)
                continue
            }
            var low = 0, high = list.count
            while low < high {
                let middle = (low + high) / 2
                if list[middle].inboxID < item.inboxID { low = middle + 1 } else { high = middle }
            }
            list.insert(item, at: low)
        }
        noted[requestID] = list
    }

    /// Whether `item`, about to be written to the attachment of `requestID`, must wait behind an
    /// earlier inbox item of that attachment that is still to be offered again. Items of the
    /// round being offered again pass, in their own order (each is struck off the round).
    mutating func mustWait(_ item: ShedInboxItem, requestID: UInt32) -> Bool {
        if var expected = roundExpected[requestID] {
            let ofRound = expected.remove(item.inboxID) != nil
            roundExpected[requestID] = expected
            if !ofRound, let lowest = expected.min(), item.inboxID > lowest { return true }
        }
        if let lowest = noted[requestID]?.first?.inboxID, item.inboxID > lowest { return true }
        return false
    }

    /// Takes the next round: at most `room` items, lowest attach request first and lowest ids
    /// first within it, each with its attachment's sink. Items of attachments `sink` no longer
    /// finds (they ended) are forgotten: the next attach replays the inbox.
    mutating func takeRound<Sink>(room: Int, sink: (UInt32) -> Sink?) -> [(sink: Sink, items: [ShedInboxItem])] {
        var round: [(sink: Sink, items: [ShedInboxItem])] = []
        var room = room
        for requestID in noted.keys.sorted() {
            guard let items = noted[requestID] else { continue }
            guard let target = sink(requestID) else {
                noted[requestID] = nil
                continue
            }
            guard room > 0 else { continue }
            let taken = Array(items.prefix(room))
            round.append((target, taken))
            roundExpected[requestID] = Set(taken.map(\.inboxID))
            room -= taken.count
            noted[requestID] = taken.count == items.count ? nil : Array(items.dropFirst(taken.count))
        }
        return round
    }

    /// The round was handed to the router: what it did not hand again (acknowledged meanwhile)
    /// holds nothing back.
    mutating func roundHanded() { roundExpected = [:] }

    /// Forgets everything noted (no router, or the connection has no attachment left).
    mutating func forgetAll() { noted = [:] }
}
