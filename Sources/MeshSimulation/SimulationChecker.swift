import Foundation

/// The invariants, checked against a `SimulationLedger` as things happen and at the end.
///
/// Each check returns the violations it found (empty: all well); the run stops at the first.
public struct SimulationChecker: Sendable {
    /// How long after a live realtime hand-out a crash of the receiver may still forget it (the
    /// router records realtime event IDs durably every 100 ms; docs/DELIVERY.md, "Dedup bounds"):
    /// a second, unmarked copy after such a crash is documented behaviour, not a violation.
    public var realtimeForgetWindow: UInt64 = 250_000_000
    /// Highest send index of a first hand-out per (receiver, sender, feature), reliable items only.
    private var orderHigh: [String: Int] = [:]
    /// Sessions each daemon has shown as closed.
    private var seenClosed: [Set<UUID>]

    public init(daemons: Int) {
        seenClosed = Array(repeating: [], count: daemons)
    }

    /// An item is about to be recorded as handed to `receiver`'s app: dedup, ack and order checks.
    public mutating func checkDelivery(_ eventID: UUID, to receiver: Int, _ delivery: SimulationLedger.Delivery,
                                       ledger: SimulationLedger) -> [SimulationViolation] {
        var found: [SimulationViolation] = []
        let short = eventID.uuidString.prefix(8)
        if ledger.acknowledged[receiver].contains(eventID) {
            found.append(SimulationViolation(.acknowledgedRedelivered,
                                             "d\(receiver) was handed \(short) (inbox \(delivery.inboxID)) after its app acknowledged it"))
        }
        let prior = ledger.deliveries[receiver][eventID] ?? []
        if !prior.isEmpty, !delivery.redelivery, !forgottenByCrash(prior, receiver: receiver, before: delivery.at, ledger: ledger) {
            let first = prior[0]
            found.append(SimulationViolation(.unmarkedDuplicate,
                "d\(receiver) was handed \(short) again unmarked (inbox \(delivery.inboxID), attachment \(delivery.attachment)); "
                + "first at \(first.at > VirtualClock.origin ? (first.at - VirtualClock.origin) / 1_000_000 : 0) ms (inbox \(first.inboxID), attachment \(first.attachment))"))
        }
        if prior.isEmpty, let sent = ledger.send(eventID), sent.mode == 2, !sent.ambiguous {
            let key = "\(receiver)<\(sent.sender)/\(sent.feature)"
            if let high = orderHigh[key], high > sent.index {
                found.append(SimulationViolation(.reliableOrder,
                    "d\(receiver) got d\(sent.sender)'s reliable item #\(sent.index) (\(short)) after #\(high)"))
            }
            orderHigh[key] = max(orderHigh[key] ?? -1, sent.index)
        }
        return found
    }

    /// Whether an earlier live realtime hand-out was followed, within the window, by a crash of
    /// the receiver before `before` (its event ID may not have been durable yet).
    func forgottenByCrash(_ prior: [SimulationLedger.Delivery], receiver: Int, before: UInt64, ledger: SimulationLedger) -> Bool {
        prior.contains { delivery in
            delivery.inboxID == 0 && ledger.crashes[receiver].contains { crash in
                crash >= delivery.at && crash - delivery.at <= realtimeForgetWindow && crash <= before
            }
        }
    }

    /// A snapshot read at `reader` of `publisher`'s slot showed `revision` (nil: nothing yet).
    /// `previous` is the highest revision this reader read before. `healed`: the network has
    /// healed and settled, so the read must show the highest revision the publisher confirmed.
    public func checkSnapshotRead(reader: Int, publisher: Int, feature: String, revision: UInt64?, previous: UInt64,
                                  healed: Bool, ledger: SimulationLedger) -> [SimulationViolation] {
        let key = SimulationLedger.slotKey(publisher, feature)
        let attempted = ledger.publishedAttempted[key] ?? 0
        let confirmed = ledger.publishedConfirmed[key] ?? 0
        let read = revision ?? 0
        let what = "d\(reader) read d\(publisher)'s \(feature) snapshot"
        if read > attempted {
            return [SimulationViolation(.snapshotRevision, "\(what) at revision \(read), never published (highest \(attempted))")]
        }
        if read < previous {
            return [SimulationViolation(.snapshotRevision, "\(what) at revision \(read) after reading \(previous)")]
        }
        if healed, read < confirmed {
            return [SimulationViolation(.snapshotRevision, "\(what) at revision \(read) after healing; d\(publisher) published \(confirmed)")]
        }
        return []
    }

    /// `daemon` showed `session` with `status` (an event or a directory read).
    public mutating func checkSession(_ session: UUID, status: String, at daemon: Int) -> [SimulationViolation] {
        if status == "closed" {
            seenClosed[daemon].insert(session)
            return []
        }
        guard seenClosed[daemon].contains(session) else { return [] }
        return [SimulationViolation(.sessionRevived,
                                    "d\(daemon) showed session \(session.uuidString.prefix(8)) as \(status) after showing it closed")]
    }

    /// `daemon` closed `session` itself (its `session.close` returned).
    public mutating func noteClosed(_ session: UUID, at daemon: Int) { seenClosed[daemon].insert(session) }

    /// Whether `daemon` has shown `session` as closed.
    public func hasSeenClosed(_ session: UUID, at daemon: Int) -> Bool { seenClosed[daemon].contains(session) }

    /// A received anchor's start instant against the one the setter stored, both as seconds on
    /// their own clocks; `skews` are the daemons' true wall clock skews (seconds).
    public func checkAnchor(receivedStart: Double, at receiver: Int, setStart: Double, setter: Int,
                            skews: [Double], tolerance: Double) -> [SimulationViolation] {
        let expected = setStart - (skews[setter] - skews[receiver])
        let error = abs(receivedStart - expected)
        guard error > tolerance else { return [] }
        return [SimulationViolation(.anchorDisagrees,
            "d\(receiver)'s copy of d\(setter)'s anchor starts \(String(format: "%.6f", error)) s off (allowed \(tolerance) s)")]
    }

    // MARK: - At the end

    /// Every confirmed reliable item reached every target's app.
    /// Items from or to `excluded` (a device removed from the set) are not counted: the members
    /// drop what it queued and what was queued for it.
    public func checkNothingLost(_ ledger: SimulationLedger, excluding excluded: Int? = nil) -> [SimulationViolation] {
        var found: [SimulationViolation] = []
        for item in ledger.sent where item.mode == 2 && item.confirmed && item.sender != excluded {
            for target in item.targets where target != excluded && (ledger.deliveries[target][item.eventID] ?? []).isEmpty {
                found.append(SimulationViolation(.reliableLost,
                    "d\(item.sender)'s reliable item #\(item.index) (\(item.eventID.uuidString.prefix(8)), \(item.feature)) "
                    + "never reached d\(target)'s app"))
            }
        }
        return found
    }

    /// After a fresh attach of every app (generations from `finalAttachment[receiver]` up), every
    /// inbox item handed out before and never acknowledged came again, marked.
    /// `excluded` (a device removed from the set): not its inbox, nor its items in the others'.
    public func checkUnacknowledgedReturned(_ ledger: SimulationLedger, finalAttachment: [Int],
                                            excluding excluded: Int? = nil) -> [SimulationViolation] {
        var found: [SimulationViolation] = []
        for receiver in 0..<ledger.deliveries.count where receiver != excluded {
            for (eventID, list) in ledger.deliveries[receiver].sorted(by: { $0.key.uuidString < $1.key.uuidString }) {
                // An item from the removed daemon: by the ledger's send, or (a closing envelope the
                // router made) by the event's `from`.
                guard !ledger.acknowledged[receiver].contains(eventID),
                      excluded == nil || (ledger.send(eventID)?.sender ?? list.first?.from) != excluded,
                      list.contains(where: { $0.inboxID != 0 && $0.attachment < finalAttachment[receiver] }) else { continue }
                let again = list.filter { $0.attachment >= finalAttachment[receiver] }
                if again.isEmpty {
                    found.append(SimulationViolation(.unacknowledgedLost,
                        "d\(receiver) handed \(eventID.uuidString.prefix(8)) out, its app never acknowledged it, and a new attach did not hand it again"))
                } else if !again.contains(where: \.redelivery) {
                    found.append(SimulationViolation(.unmarkedDuplicate,
                        "d\(receiver) handed \(eventID.uuidString.prefix(8)) again on a new attach without the redelivery mark"))
                }
            }
        }
        return found
    }
}
