/// A broken invariant: which one, and what was seen.
public struct SimulationViolation: Error, Sendable, Equatable, CustomStringConvertible {
    /// The invariants the simulator checks.
    public enum Invariant: String, Sendable, Equatable, CaseIterable {
        /// A confirmed reliable item never reached a target's app after the network healed.
        case reliableLost = "reliable-item-lost"
        /// An item the app received and did not acknowledge was not handed again (flagged) on reattach.
        case unacknowledgedLost = "unacknowledged-item-lost"
        /// An item reached an app twice without the redelivery mark.
        case unmarkedDuplicate = "unmarked-duplicate"
        /// An inbox item reached an app while its row's delivery count was still 0: its hand-out
        /// was not durable first (a crash then would hand it again unmarked).
        case handOutNotDurable = "hand-out-not-durable"
        /// An item was handed out again after the app acknowledged it.
        case acknowledgedRedelivered = "acknowledged-item-redelivered"
        /// A peer's reliable items reached an app out of send order.
        case reliableOrder = "reliable-order"
        /// A snapshot read went back, or showed a revision nobody published, or not the highest.
        case snapshotRevision = "snapshot-revision"
        /// A closed session showed up open again, or took a publish or announce.
        case sessionRevived = "session-revived"
        /// A timer anchor disagreed with the sender's beyond the clock offsets' error.
        case anchorDisagrees = "anchor-disagrees"
        /// The apps' `SessionSyncEngine`s did not converge (or saw a gap).
        case enginesDiverged = "engines-diverged"
        /// A per-peer memory bound was exceeded.
        case memoryBound = "memory-bound"
        /// A datagram the router wrote batched was still not flushed once its loop was idle: a
        /// daemon's socket would hold it back until some later send.
        case datagramNotFlushed = "datagram-not-flushed"
        /// After the network healed, two live daemons still had no active channel between them
        /// once `Simulation.channelRecoveryBound` had passed.
        case channelNotRestored = "channel-not-restored"
        /// A device removed from the set got an item sent after every other member had heard of
        /// its removal.
        case removedDeviceGotItem = "removed-device-got-item"
        /// After healing, the members of the set hold different rosters, or one still has the
        /// removed device as a peer.
        case rostersDiverged = "rosters-diverged"
        /// The simulation itself could not proceed (a runaway loop, a call that never returned).
        case stuck = "simulation-stuck"
    }

    public let invariant: Invariant
    public let detail: String

    public init(_ invariant: Invariant, _ detail: String) {
        self.invariant = invariant
        self.detail = detail
    }

    public var description: String { "\(invariant.rawValue): \(detail)" }
}
