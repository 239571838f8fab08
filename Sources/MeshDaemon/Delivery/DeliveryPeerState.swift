import Foundation
import SessionMesh

/// What the router tracks per paired peer (inside the router actor).
struct DeliveryPeerState: Sendable {
    /// The channel is active now.
    var active = false
    /// The channel was active at least once since this daemon started. Before that, realtime
    /// envelopes and snapshots wait in `pending`; after it, realtime falls back to the outbox.
    var everActivated = false
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

    /// Features the peer announced an attached app for, and until when (monotonic ns).
    var remoteFeatures: Set<String> = []
    var presenceExpiresAt: UInt64 = 0
    /// Features reported reachable to local apps.
    var reachableFeatures: Set<String> = []

    /// Smallest realtime ack deadline for this peer now, seconds (adapts to late acks).
    var ackDeadlineFloor: Double = 0
    /// Smoothed delay from a realtime send to its ack, and its mean deviation, seconds (as
    /// TCP's SRTT and RTTVAR, RFC 6298); nil before the first ack in time.
    var ackDelay: Double?
    var ackDelayDeviation: Double = 0

    /// Latest estimates from the node (ns).
    var roundTripNanoseconds: Int64?
    var offsetNanoseconds: Int64?

    /// Watermarks this device's apps set for the peer's events, by session.
    var watermarksSent: [UUID: (featureID: String, sequence: UInt64)] = [:]
    /// Watermarks the peer reported for our events, by session.
    var watermarksReceived: [UUID: (featureID: String, sequence: UInt64)] = [:]

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
        active && now < presenceExpiresAt && remoteFeatures.contains(featureID)
    }
}

/// One `attach` of a local client.
struct DeliveryAttachment: Sendable {
    var features: Set<String>
    var sessionID: UUID?
    var app: String?
    var sink: any DeliveryEventSink
}
