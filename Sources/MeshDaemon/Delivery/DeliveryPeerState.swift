import Foundation
import MeshCore
import SessionMesh

/// What the router tracks per paired peer (inside the router actor).
struct DeliveryPeerState: Sendable {
    /// The channel is active now.
    var active = false
    /// The channel was active at least once since this daemon started. Before that, realtime
    /// envelopes and snapshots wait in `pending`; after it, realtime falls back to the outbox.
    var everActivated = false
    /// Since when the channel is down (monotonic ns): when the peer state was made, else the
    /// last deactivation. The session owner hand-over counts a member's absence from here.
    var awaySince: UInt64 = 0
    /// Pre-activation buffer: realtime items FIFO (capped), snapshot messages collapsed per feature.
    var pending: PendingDeliveryQueue<DeliveryItem, [UInt8]>

    /// The sending side of the reliable stream to the peer.
    var outbox: ReliableOutbox

    /// Receiving: a reliable batch could not be stored (a full disk, the inbox limit). Later
    /// batches are dropped unacknowledged until the sender starts over from its last ack
    /// (`reliableResend`): the cumulative ack of a later batch would cover the refused items,
    /// and the sender would delete them from its outbox although they were never stored here.
    var awaitingResend = false
    /// Receiving: since the last refusal, this daemon told the sender it has room again
    /// (`reliableRoom`, once per refusal).
    var roomAnnounced = false

    /// Receiving: this daemon refused (part of) a batch; later batches are dropped until the
    /// sender's resend, and the sender is told once when an app's ack makes room.
    mutating func refusedBatch() {
        awaitingResend = true
        roomAnnounced = false
    }

    /// Features the peer announced an attached app for, and until when; what local apps were told.
    var presence = PeerPresence()

    /// Smallest realtime ack deadline for this peer now, seconds (adapts to late acks).
    var ackDeadlineFloor: Double = 0
    /// Smoothed delay from a realtime send to its ack, and its mean deviation, seconds (as
    /// TCP's SRTT and RTTVAR, RFC 6298); nil before the first ack in time.
    var ackDelay: Double?
    var ackDelayDeviation: Double = 0

    /// Latest estimates from the node (ns).
    var roundTripNanoseconds: Int64?
    var offsetNanoseconds: Int64?

    /// Watermarks exchanged with the peer.
    var watermarks = WatermarkBook()

    init(pendingCapacity: Int, retryInitial: Double) {
        pending = PendingDeliveryQueue(envelopeCapacity: pendingCapacity)
        outbox = ReliableOutbox(retryInitial: retryInitial)
    }

    /// Where a realtime item to this peer goes now.
    enum RealtimeRoute {
        /// Buffered before the first activation (`droppedOldest`: the buffer was full).
        case pending(droppedOldest: Bool)
        /// Not reachable: to the durable outbox.
        case fallBack
        /// As a datagram, with what its ack deadline derives from.
        case datagram(ackWaitFloor: Double, roundTripNanoseconds: Int64?)
    }

    /// Routes a realtime item (buffering it when the channel was never active). Mutating so
    /// the router calls it in place, through its dictionary, without copying this value.
    mutating func routeRealtime(_ item: DeliveryItem, now: UInt64) -> RealtimeRoute {
        if !active {
            if !everActivated { return .pending(droppedOldest: pending.enqueue(envelope: item)) }
            return .fallBack
        }
        guard isReachable(item.featureID, now: now) else { return .fallBack }
        return .datagram(ackWaitFloor: ackWaitFloor, roundTripNanoseconds: roundTripNanoseconds)
    }

    /// The least an ack is waited for now, seconds: the adaptive floor, and the delays acks
    /// actually took — smoothed delay + 4 × its deviation (at least a quarter of the delay, so
    /// very steady delays still leave room for a hiccup) — so a path whose acks take longer
    /// than its keepalive RTT suggests (a busy receiver, Wi-Fi retries) keeps its items live.
    var ackWaitFloor: Double {
        guard let ackDelay else { return ackDeadlineFloor }
        return max(ackDeadlineFloor, ackDelay + max(4 * ackDelayDeviation, ackDelay / 4))
    }

    /// A new channel: ack delays measured on the old one (perhaps over another path, or to a
    /// receiver that was overloaded) no longer apply; the floor still does.
    mutating func forgetAckDelays() {
        ackDelay = nil
        ackDelayDeviation = 0
    }

    /// An ack did not come in time: the floor grows to 1.5 × the wait that was too short, so
    /// the next item waits longer whichever term set this one's deadline.
    mutating func ackTimedOut(minimumDeadline: Double, maximumDeadline: Double) {
        ackDeadlineFloor = min(maximumDeadline, max(ackWaitFloor, minimumDeadline) * 1.5)
    }

    /// An ack arrived in time, `delay` seconds after its send: the adaptive ack-deadline floor
    /// shrinks 1 % (not below `minimumDeadline`), and the delay is a sample of how long acks take.
    mutating func ackArrivedInTime(minimumDeadline: Double, delay: Double) {
        ackDeadlineFloor = max(minimumDeadline, ackDeadlineFloor * 0.99)
        let sample = max(0, delay)
        if let smoothed = ackDelay {
            ackDelayDeviation = 0.75 * ackDelayDeviation + 0.25 * abs(smoothed - sample)
            ackDelay = 0.875 * smoothed + 0.125 * sample
        } else {
            ackDelay = sample
            ackDelayDeviation = sample / 2
        }
    }

    /// Whether an app of `featureID` is attached on the peer and the channel is up, at `now`.
    func isReachable(_ featureID: String, now: UInt64) -> Bool {
        active && presence.isAnnounced(featureID, now: now)
    }

    /// The channel came up: buffered items are drained to be sent (in arrival order, on the
    /// stream), the outbox starts over, ack delays measured on the old channel are forgotten.
    mutating func activate(now: UInt64, retryInitial: Double) -> ActivationPlan {
        active = true
        everActivated = true
        outbox.restart(now: now, retryInitial: retryInitial)
        forgetAckDelays()
        return ActivationPlan(reachability: [ReachabilityChange(featureID: nil, reachable: true, reason: .channelActive)],
                              drained: pending.drain())
    }

    /// The channel went down: every feature of the peer becomes unreachable, then the peer.
    mutating func deactivate(now: UInt64) -> [ReachabilityChange] {
        active = false
        awaySince = now
        presence.forget()
        return presence.update(active: false, now: now, gained: .channelActive, lost: .channelDown)
            + [ReachabilityChange(featureID: nil, reachable: false, reason: .channelDown)]
    }

    /// The peer announced the features it has an attached app for, valid for `lease` seconds.
    mutating func presenceReceived(_ features: [String], now: UInt64, lease: Double) -> [ReachabilityChange] {
        presence.announced(features, now: now, lease: lease)
        return presence.update(active: active, now: now, gained: .appAttached, lost: .appDetached)
    }

    /// The tick: features whose presence lease ran out become unreachable.
    mutating func expireLease(now: UInt64) -> [ReachabilityChange] {
        presence.update(active: active, now: now, gained: .appAttached, lost: .leaseExpired)
    }
}

/// What the router does when a peer's channel comes up, in this order: the reachability
/// events, this device's presence, the drained pre-activation items, the state a peer gets on
/// every activation (`ActivationResend`), the outbox.
struct ActivationPlan: Sendable {
    var reachability: [ReachabilityChange]
    var drained: [PendingDeliveryQueue<DeliveryItem, [UInt8]>.Item]
}

/// A reachability change to report to local apps: of a feature on the peer (to that feature's
/// apps) or, with `featureID` nil, of the peer itself (to every app).
struct ReachabilityChange: Sendable, Equatable {
    var featureID: String?
    var reachable: Bool
    var reason: ReachabilityChangeReason
}

/// What a peer announced of its attached apps (presence), and which of its features local
/// apps were told are reachable.
struct PeerPresence: Sendable, Equatable {
    /// Features the peer announced an attached app for, and until when (monotonic ns).
    private(set) var remoteFeatures: Set<String> = []
    private(set) var expiresAt: UInt64 = 0
    /// Features reported reachable to local apps.
    private(set) var reachableFeatures: Set<String> = []

    /// Whether the peer announced `featureID` and its lease runs at `now`.
    func isAnnounced(_ featureID: String, now: UInt64) -> Bool {
        now < expiresAt && remoteFeatures.contains(featureID)
    }

    /// The peer announced `features`, valid `lease` seconds from `now`.
    mutating func announced(_ features: [String], now: UInt64, lease: Double) {
        remoteFeatures = Set(features)
        let nanoseconds = lease * 1e9
        expiresAt = now &+ (nanoseconds > 0 && nanoseconds < 1.8e19 ? UInt64(nanoseconds) : 0)
    }

    /// The channel went down: nothing announced holds any more.
    mutating func forget() {
        remoteFeatures = []
        expiresAt = 0
    }

    /// Recomputes the reachable features; returns the ones gained (sorted), then the ones lost (sorted).
    mutating func update(active: Bool, now: UInt64, gained: ReachabilityChangeReason,
                         lost: ReachabilityChangeReason) -> [ReachabilityChange] {
        let reachable: Set<String> = active && now < expiresAt ? remoteFeatures : []
        let up = reachable.subtracting(reachableFeatures), down = reachableFeatures.subtracting(reachable)
        reachableFeatures = reachable
        return up.sorted().map { ReachabilityChange(featureID: $0, reachable: true, reason: gained) }
            + down.sorted().map { ReachabilityChange(featureID: $0, reachable: false, reason: lost) }
    }
}
