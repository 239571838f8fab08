import Foundation
import MeshCore
import SessionMesh
import Testing
@testable import MeshDaemon

/// The router's state as value types, with no router, store, loop or socket: attachments and
/// presence, a peer's reachability, watermarks, session rows and anchors, what an activation
/// sends, the tick schedule.
@Suite("DeliveryRouter state")
struct DeliveryRouterStateTests {
    final class Sink: DeliveryEventSink {
        func emit(_ event: DeliveryEvent) {}
    }

    static let ms: UInt64 = 1_000_000
    static let session = UUID(uuidString: "00000000-0000-0000-0000-00000000000A")!
    static let other = UUID(uuidString: "00000000-0000-0000-0000-00000000000B")!

    static func ids(_ sinks: [any DeliveryEventSink]) -> [ObjectIdentifier] { sinks.map(ObjectIdentifier.init) }

    // MARK: - AttachmentTable

    @Test func attachingAndDetachingAnnouncesPresenceOnlyWhenTheFeaturesChange() throws {
        var table = AttachmentTable()
        let app = Sink(), other = Sink()
        let first = table.attach(features: ["b", "a"], sessionID: nil, app: nil, sink: app)
        #expect(first.presence == ["a", "b"], "the first attach announces its features, sorted")
        let second = table.attach(features: ["a"], sessionID: nil, app: nil, sink: other)
        #expect(second.id == first.id + 1)
        #expect(second.presence == nil, "no new feature: nothing to announce")
        #expect(table.announcedFeatures == ["a", "b"])

        let detached = table.detach(first.id)
        let gone = try #require(detached)
        #expect(gone.presence == ["a"], "b has no app any more")
        #expect(gone.sinkGone == ObjectIdentifier(app), "the sink's last attachment ended")
        let unknown = table.detach(first.id)
        #expect(unknown == nil, "an unknown id changes nothing")
        let detachedLast = table.detach(second.id)
        let last = try #require(detachedLast)
        #expect(last.presence == [], "no feature left")
        #expect(table.count == 0)
    }

    @Test func aSinkWithSeveralAttachmentsStaysUntilItsLastEnds() throws {
        var table = AttachmentTable()
        let app = Sink()
        let a = table.attach(features: ["a"], sessionID: nil, app: "x", sink: app)
        let b = table.attach(features: ["b"], sessionID: nil, app: "x", sink: app)
        let key = ObjectIdentifier(app)
        #expect(table.features(of: key) == ["a", "b"])
        let forA = table.sinks(for: "a"), forB = table.sinks(for: "b")
        #expect(Self.ids(forA) == [key] && Self.ids(forB) == [key])
        #expect(Self.ids(table.allSinks()) == [key], "each sink once")
        let first = table.detach(a.id)
        #expect(try #require(first).sinkGone == nil, "still attached for b")
        #expect(table.isAttached(key))
        let afterDetach = table.sinks(for: "a")
        #expect(afterDetach.isEmpty, "the cache follows the detach")
        let second = table.detach(b.id)
        #expect(try #require(second).sinkGone == key)
        #expect(!table.isAttached(key) && table.sink(key) == nil)
    }

    @Test func aFeaturesSinksAreEachOnceAndFollowAttaches() {
        var table = AttachmentTable()
        let one = Sink(), two = Sink()
        _ = table.attach(features: ["a"], sessionID: nil, app: nil, sink: one)
        _ = table.attach(features: ["a", "b"], sessionID: nil, app: nil, sink: one)
        let before = table.sinks(for: "a"), unknown = table.sinks(for: "unknown")
        #expect(Self.ids(before) == [ObjectIdentifier(one)])
        #expect(unknown.isEmpty)
        _ = table.attach(features: ["a"], sessionID: nil, app: nil, sink: two)
        let after = table.sinks(for: "a"), forB = table.sinks(for: "b")
        #expect(Set(Self.ids(after)) == [ObjectIdentifier(one), ObjectIdentifier(two)],
                "a later attach is among the targets (the cache is dropped)")
        #expect(Self.ids(forB) == [ObjectIdentifier(one)])
    }

    // MARK: - Presence and reachability

    static func activePeer() -> DeliveryPeerState {
        var state = DeliveryPeerState(pendingCapacity: 4, retryInitial: 1)
        _ = state.activate(now: 0, retryInitial: 1)
        return state
    }

    @Test func presenceMakesFeaturesReachableUntilItsLeaseRunsOut() {
        var state = Self.activePeer()
        let announced = state.presenceReceived(["b", "a"], now: 0, lease: 1)
        #expect(announced == [
            ReachabilityChange(featureID: "a", reachable: true, reason: .appAttached),
            ReachabilityChange(featureID: "b", reachable: true, reason: .appAttached),
        ])
        #expect(state.isReachable("a", now: 999 * Self.ms))
        let withinLease = state.expireLease(now: 999 * Self.ms)
        #expect(withinLease.isEmpty, "within the lease nothing changes")
        let renewed = state.presenceReceived(["a"], now: 500 * Self.ms, lease: 1)
        #expect(renewed == [
            ReachabilityChange(featureID: "b", reachable: false, reason: .appDetached),
        ], "renewed without b: b's app detached")
        let beforeExpiry = state.expireLease(now: 1_499 * Self.ms)
        #expect(beforeExpiry.isEmpty)
        let atExpiry = state.expireLease(now: 1_500 * Self.ms)
        #expect(atExpiry == [
            ReachabilityChange(featureID: "a", reachable: false, reason: .leaseExpired),
        ])
        #expect(!state.isReachable("a", now: 1_500 * Self.ms))
        let afterExpiry = state.expireLease(now: 2_000 * Self.ms)
        #expect(afterExpiry.isEmpty, "reported once")
    }

    @Test func presenceBeforeActivationReportsNothingUntilTheChannelIsUp() {
        var state = DeliveryPeerState(pendingCapacity: 4, retryInitial: 1)
        let beforeChannel = state.presenceReceived(["a"], now: 0, lease: 6)
        #expect(beforeChannel.isEmpty, "no channel: not reachable")
        #expect(!state.isReachable("a", now: 0))
        let plan = state.activate(now: 0, retryInitial: 1)
        #expect(plan.reachability == [ReachabilityChange(featureID: nil, reachable: true, reason: .channelActive)])
        let onceUp = state.expireLease(now: 1)
        #expect(onceUp == [ReachabilityChange(featureID: "a", reachable: true, reason: .appAttached)])
    }

    @Test func aChannelGoingDownReportsEveryFeatureThenThePeer() {
        var state = Self.activePeer()
        _ = state.presenceReceived(["b", "a"], now: 0, lease: 6)
        let down = state.deactivate(now: 1)
        #expect(down == [
            ReachabilityChange(featureID: "a", reachable: false, reason: .channelDown),
            ReachabilityChange(featureID: "b", reachable: false, reason: .channelDown),
            ReachabilityChange(featureID: nil, reachable: false, reason: .channelDown),
        ])
        #expect(!state.active && !state.isReachable("a", now: 1))
        _ = state.activate(now: 2, retryInitial: 1)
        #expect(!state.isReachable("a", now: 2), "the old presence does not hold on the new channel")
    }

    @Test func activationDrainsTheBufferInArrivalOrderAndForgetsAckDelays() {
        var state = DeliveryPeerState(pendingCapacity: 4, retryInitial: 1)
        let item = DeliveryItem(eventID: UUID(), kind: DeliveryItem.Kind.realtimeEnvelope.rawValue, featureID: "a",
                                sessionID: nil, payload: [1])
        _ = state.routeRealtime(item, now: 0)
        state.pending.enqueue(snapshot: [9], forKey: "a")
        state.ackArrivedInTime(minimumDeadline: 0.01, delay: 0.05)
        let plan = state.activate(now: 0, retryInitial: 1)
        #expect(plan.drained == [.envelope(item), .snapshot([9])])
        #expect(state.active && state.everActivated && state.ackDelay == nil)
        let again = state.activate(now: 1, retryInitial: 1)
        #expect(again.drained.isEmpty, "drained once")
    }

    @Test func aNegativeOrHugeLeaseNeverTraps() {
        var state = Self.activePeer()
        let negative = state.presenceReceived(["a"], now: 5, lease: -1)
        #expect(negative.isEmpty, "a lease that ended at once")
        let infinite = state.presenceReceived(["a"], now: 5, lease: .infinity)
        #expect(infinite.isEmpty)
        #expect(!state.isReachable("a", now: 5))
    }

    // MARK: - Watermarks

    @Test func watermarksOnlyRise() {
        var book = WatermarkBook()
        let raised = book.set(sessionID: Self.session, featureID: "a", sequence: 5)
        #expect(raised)
        let equal = book.set(sessionID: Self.session, featureID: "a", sequence: 5)
        let lower = book.set(sessionID: Self.session, featureID: "a", sequence: 4)
        #expect(!equal, "equal: nothing to store or send")
        #expect(!lower)
        let higher = book.set(sessionID: Self.session, featureID: "a", sequence: 6)
        #expect(higher)
        #expect(book.sentMessages == [.watermark(sessionID: Self.session, featureID: "a", sequence: 6)])
        let first = book.received(sessionID: Self.session, featureID: "a", sequence: 3, maximumSessions: 8)
        #expect(first == .raised)
        let same = book.received(sessionID: Self.session, featureID: "a", sequence: 3, maximumSessions: 8)
        #expect(same == .stale)
        let lowerReport = book.received(sessionID: Self.session, featureID: "a", sequence: 2, maximumSessions: 8)
        #expect(lowerReport == .stale)
        #expect(book.current(features: ["a"], sessionID: nil).map(\.mark.sequence) == [3])
    }

    @Test func aPeerGetsAtMostTheBoundOfSessionsWithAWatermark() {
        var book = WatermarkBook()
        let first = book.received(sessionID: Self.session, featureID: "a", sequence: 1, maximumSessions: 1)
        #expect(first == .raised)
        let beyondBound = book.received(sessionID: Self.other, featureID: "a", sequence: 1, maximumSessions: 1)
        #expect(beyondBound == .refused)
        let knownSession = book.received(sessionID: Self.session, featureID: "a", sequence: 2, maximumSessions: 1)
        #expect(knownSession == .raised,
                "a known session still rises at the bound")
        #expect(book.current(features: ["a"], sessionID: nil).map(\.sessionID) == [Self.session])
    }

    @Test func storedWatermarksMergeByRaisingOnly() {
        var book = WatermarkBook()
        _ = book.set(sessionID: Self.session, featureID: "a", sequence: 7)
        func record(_ direction: WatermarkRecord.Direction, _ session: UUID, _ sequence: UInt64) -> WatermarkRecord {
            WatermarkRecord(peer: "P", sessionID: session, direction: direction, featureID: "a", sequence: sequence,
                            updatedAt: Date(timeIntervalSince1970: 0))
        }
        book.merge(record(.sent, Self.session, 3))
        book.merge(record(.received, Self.other, 4))
        book.merge(record(.received, Self.session, 2))
        book.merge(record(.received, Self.session, 1))
        #expect(book.sent == [WatermarkBook.Key(featureID: "a", sessionID: Self.session): .init(featureID: "a", sequence: 7)],
                "a lower stored one does not lower it")
        #expect(book.current(features: ["a"], sessionID: nil).map(\.mark.sequence) == [2, 4], "by session ID")
        #expect(book.current(features: ["a"], sessionID: Self.other).map(\.mark.sequence) == [4])
        #expect(book.current(features: ["b"], sessionID: nil).isEmpty)
    }

    @Test func watermarksOfOneSessionIDInTwoFeaturesStayApart() {
        var book = WatermarkBook()
        let first = book.set(sessionID: Self.session, featureID: "a", sequence: 9)
        let other = book.set(sessionID: Self.session, featureID: "b", sequence: 2)
        let lower = book.set(sessionID: Self.session, featureID: "a", sequence: 5)
        #expect(first && other && !lower, "feature b's watermark is its own")
        let highA = book.received(sessionID: Self.session, featureID: "a", sequence: 9, maximumSessions: 10)
        let lowB = book.received(sessionID: Self.session, featureID: "b", sequence: 1, maximumSessions: 10)
        #expect(highA == .raised && lowB == .raised, "a high watermark of feature a does not make feature b's stale")
        #expect(book.current(features: ["b"], sessionID: Self.session).map(\.mark.sequence) == [1])
        #expect(book.sentMessages.count == 2)
    }

    // MARK: - Sessions and anchors

    static func row(status: String, revision: UInt64, sourcePeer: String? = nil) -> SessionRecord {
        SessionRecord(sessionID: session, featureID: "a", owner: "owner", status: status,
                      updatedAt: Date(timeIntervalSince1970: 1), revision: revision, sourcePeer: sourcePeer)
    }

    @Test func announcingRaisesTheRevisionAndNeverRevivesAClosedSession() throws {
        let at = Date(timeIntervalSince1970: 100)
        let (first, change) = try SessionDirectoryRow(existing: nil)
            .announce(sessionID: Self.session, featureID: "a", owner: "me", status: "running", at: at)
        #expect(first.revision == 1 && change == .announced && first.sourcePeer == nil && first.updatedAt == at)
        let (next, update) = try SessionDirectoryRow(existing: first)
            .announce(sessionID: Self.session, featureID: "a", owner: "me", status: "paused", at: at)
        #expect(next.revision == 2 && update == .updated)
        #expect(throws: MeshError.sessionClosed(Self.session.uuidString)) {
            try SessionDirectoryRow(existing: Self.row(status: "closed", revision: 3))
                .announce(sessionID: Self.session, featureID: "a", owner: "me", status: "running", at: at)
        }
        #expect(throws: MeshError.self, "announce cannot close") {
            try SessionDirectoryRow(existing: nil)
                .announce(sessionID: Self.session, featureID: "a", owner: "me", status: "closed", at: at)
        }
        #expect(throws: MeshError.self, "no revision above the maximum") {
            try SessionDirectoryRow(existing: Self.row(status: "running", revision: .max))
                .announce(sessionID: Self.session, featureID: "a", owner: "me", status: "running", at: at)
        }
    }

    @Test func closingKeepsTheOwnerAndSendsAClosingItemAndSnapshot() throws {
        let at = Date(timeIntervalSince1970: 100), eventID = UUID()
        let closing = try SessionClosing(sessionID: Self.session, featureID: "a", existing: Self.row(status: "running", revision: 4),
                                         slotRevision: 9, localDevice: "LOCAL", at: at, eventID: eventID)
        #expect(closing.record.status == "closed" && closing.record.revision == 5 && closing.record.owner == "owner")
        #expect(closing.item.eventID == eventID && closing.item.featureID == "a" && closing.item.sessionID == Self.session)
        #expect(closing.item.kind == DeliveryItem.Kind.reliableEnvelope.rawValue)
        #expect(closing.snapshot.revision == 10, "one above the slot's")
        #expect(closing.snapshot.metadata.payloadType == DeliveryRouter.sessionClosedPayloadType)
        #expect(closing.encodedSnapshot == (try SessionWireCodec.encode(closing.snapshot)))
        let envelope = try SessionWireCodec.decodeEnvelope(closing.item.payload)
        #expect(envelope.metadata.payloadType == DeliveryRouter.sessionClosedPayloadType)
        #expect(envelope.metadata.sourcePeerID == "LOCAL" && envelope.metadata.eventID == eventID)
        let fresh = try SessionClosing(sessionID: Self.session, featureID: "a", existing: nil, slotRevision: nil,
                                       localDevice: "LOCAL", at: at, eventID: eventID)
        #expect(fresh.record.owner == "LOCAL" && fresh.record.revision == 1 && fresh.snapshot.revision == 1)
    }

    @Test func aPeersRowIsReportedAsAnnouncedUpdatedOrClosed() {
        let running = Self.row(status: "running", revision: 1, sourcePeer: "P")
        #expect(SessionDirectoryRow(existing: nil).change(to: running) == .announced)
        #expect(SessionDirectoryRow(existing: running).change(to: Self.row(status: "paused", revision: 2)) == .updated)
        #expect(SessionDirectoryRow(existing: running).change(to: Self.row(status: "closed", revision: 2)) == .closed)
        #expect(SessionDirectoryRow(existing: nil).change(to: Self.row(status: "closed", revision: 2)) == .closed)
    }

    @Test func anAnchorIsRefusedWithANegativeTimeAndShiftedIntoThisClock() {
        let start = Date(timeIntervalSince1970: 1_000)
        func record(_ accumulated: Double) -> DeliveryAnchorRecord {
            DeliveryAnchorRecord(sessionID: Self.session, featureID: "a", revision: 1,
                                 anchor: SessionTimerAnchor(startedAt: start, accumulatedElapsedBeforeAnchor: accumulated))
        }
        #expect(record(0).isUsable && record(5).isUsable)
        #expect(!record(-1).isUsable && !record(.nan).isUsable && !record(.infinity).isUsable)
        // The peer's clock runs 2 s ahead: its instants are 2 s earlier here.
        let local = record(5).inLocalClock(offsetNanoseconds: 2_000_000_000)
        #expect(local.anchor.startedAt == Date(timeIntervalSince1970: 998))
        #expect(local.anchor.accumulatedElapsedBeforeAnchor == 5, "durations do not move")
        #expect(record(5).inLocalClock(offsetNanoseconds: nil) == record(5), "no estimate: unchanged")
    }

    @Test func anActivationResendsOwnSessionsSlotsAndDecodableAnchors() {
        let mine = Self.row(status: "running", revision: 1), theirs = Self.row(status: "running", revision: 1, sourcePeer: "P")
        let anchor = DeliveryAnchorRecord(sessionID: Self.session, featureID: "a", revision: 2,
                                          anchor: SessionTimerAnchor(startedAt: Date(timeIntervalSince1970: 5)))
        let at = Date(timeIntervalSince1970: 0)
        let slot = SnapshotSlot(peer: nil, featureID: "a", sessionID: nil, revision: 1, bytes: [7], updatedAt: at)
        let resend = ActivationResend(slots: [slot], sessions: [theirs, mine], anchors: [
            TimerAnchorRecord(featureID: "a", sessionID: Self.session, revision: 2, bytes: anchor.encoded(), updatedAt: at),
            TimerAnchorRecord(featureID: "a", sessionID: Self.other, revision: 1, bytes: [0xFF], updatedAt: at),
        ])
        #expect(resend.messages == [.session(DeliverySessionRecord(mine)), .snapshotPush([7]), .anchor(anchor)])
    }

    // MARK: - Tick schedule

    @Test func presenceIsRenewedEveryThirdOfTheLease() {
        var schedule = TickSchedule(presenceLease: 6)
        #expect(schedule.renewEvery == 20, "every 2 s at 100 ms a tick")
        let rounds = (0..<40).map { _ in schedule.next() }
        #expect(rounds.first == 1 && rounds.last == 40)
        #expect(rounds.filter(schedule.renewsPresence) == [20, 40])
        #expect(TickSchedule(presenceLease: 0.1).renewEvery == 1, "at least every tick")
        #expect(TickSchedule(presenceLease: .nan).renewEvery >= 1)
        #expect(TickSchedule(presenceLease: .infinity).renewEvery >= 1)
    }
}
