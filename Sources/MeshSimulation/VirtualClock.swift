import Foundation
import MeshDaemon

/// The simulation's one notion of time, in nanoseconds. Only the simulation moves it, forward.
///
/// A run starts at `origin` (1 s, never 0: zero reads as "unset" in places), and the daemons'
/// monotonic clocks and their loops' deadlines both read this value, so a deadline computed from
/// either agrees with the other.
public final class VirtualClock: @unchecked Sendable {
    /// Where every run starts.
    public static let origin: UInt64 = 1_000_000_000
    /// Virtual nanoseconds (monotonic; `origin` at the start of the run).
    public private(set) var nanoseconds: UInt64 = VirtualClock.origin

    public init() {}

    /// Moves time to `instant` (never backwards).
    public func advance(to instant: UInt64) {
        if instant > nanoseconds { nanoseconds = instant }
    }

    /// Milliseconds since the start of the run, for traces.
    public var milliseconds: Double { Double(nanoseconds - Self.origin) / 1e6 }
}

/// One daemon's view of the virtual clock: monotonic = virtual time, wall = a fixed epoch plus
/// virtual time plus this daemon's skew (the clock offsets the anchor check allows for).
public struct SimulatedMeshClock: MeshClock {
    /// 2023-11-14T22:13:20Z: a fixed, far-from-zero origin for wall readings.
    public static let epochNanoseconds: Int64 = 1_700_000_000_000_000_000
    let clock: VirtualClock
    /// This daemon's wall clock minus true time, ns.
    public let skewNanoseconds: Int64

    public init(clock: VirtualClock, skewNanoseconds: Int64) {
        self.clock = clock
        self.skewNanoseconds = skewNanoseconds
    }

    public func wallNanoseconds() -> Int64 {
        Self.epochNanoseconds &+ Int64(clamping: clock.nanoseconds) &+ skewNanoseconds
    }

    public func monotonicNanoseconds() -> UInt64 { clock.nanoseconds }
}
