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

    /// Highest outbox sequence sent in this channel epoch.
    var lastSent: UInt64 = 0
    /// Highest outbox sequence the peer acknowledged (cumulative).
    var lastAcked: UInt64 = 0
    /// Bumped on activation and retry, so a pump running across it does not advance `lastSent`.
    var epoch: UInt64 = 0
    var pumping = false
    var pumpAgain = false
    var pumpScheduled = false
    /// Monotonic ns of the last send into an idle window or the last ack progress.
    var lastProgressAt: UInt64 = 0
    /// Current retry delay, seconds.
    var retryDelay: Double
    /// Send attempts of unacknowledged sequences in this daemon run.
    var attempts: [UInt64: Int] = [:]

    /// Features the peer announced an attached app for, and until when (monotonic ns).
    var remoteFeatures: Set<String> = []
    var presenceExpiresAt: UInt64 = 0
    /// Features reported reachable to local apps.
    var reachableFeatures: Set<String> = []

    /// Smallest realtime ack deadline for this peer now, seconds (adapts to late acks).
    var ackDeadlineFloor: Double = 0

    /// Latest estimates from the node (ns).
    var roundTripNanoseconds: Int64?
    var offsetNanoseconds: Int64?

    /// Watermarks this device's apps set for the peer's events, by session.
    var watermarksSent: [UUID: (featureID: String, sequence: UInt64)] = [:]
    /// Watermarks the peer reported for our events, by session.
    var watermarksReceived: [UUID: (featureID: String, sequence: UInt64)] = [:]

    init(pendingCapacity: Int, retryInitial: Double) {
        pending = PendingDeliveryQueue(envelopeCapacity: pendingCapacity)
        retryDelay = retryInitial
    }

    /// Where a realtime item to this peer goes now.
    enum RealtimeRoute {
        /// Buffered before the first activation (`droppedOldest`: the buffer was full).
        case pending(droppedOldest: Bool)
        /// Not reachable: to the durable outbox.
        case fallBack
        /// As a datagram, with what its ack deadline derives from.
        case datagram(ackDeadlineFloor: Double, roundTripNanoseconds: Int64?)
    }

    /// Routes a realtime item (buffering it when the channel was never active). Mutating so
    /// the router calls it in place, through its dictionary, without copying this value.
    mutating func routeRealtime(_ item: DeliveryItem, now: UInt64) -> RealtimeRoute {
        if !active {
            if !everActivated { return .pending(droppedOldest: pending.enqueue(envelope: item)) }
            return .fallBack
        }
        guard isReachable(item.featureID, now: now) else { return .fallBack }
        return .datagram(ackDeadlineFloor: ackDeadlineFloor, roundTripNanoseconds: roundTripNanoseconds)
    }

    /// An ack arrived in time: the adaptive ack-deadline floor shrinks 1 % (not below `minimumDeadline`).
    mutating func ackArrivedInTime(minimumDeadline: Double) {
        ackDeadlineFloor = max(minimumDeadline, ackDeadlineFloor * 0.99)
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
