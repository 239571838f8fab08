#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The two time sources the node reads: a wall clock (for timestamps peers compare) and a
/// monotonic clock (for timers, leases and round trips).
///
/// Injected into `MeshNode`, so logic never reads the system time itself and tests can skew the
/// wall clock (`DaemonConfiguration.clockOffsetMilliseconds`).
public protocol MeshClock: Sendable {
    /// Wall-clock time in nanoseconds since 1970-01-01 UTC (possibly skewed on purpose).
    func wallNanoseconds() -> Int64
    /// Monotonic time in nanoseconds from an arbitrary origin; never goes backwards.
    func monotonicNanoseconds() -> UInt64
}

/// The system clocks, with an optional skew added to the wall clock.
///
/// The skew exists for tests (`meshd --clock-offset-ms`): it shows that the clock-offset
/// estimate finds a peer's skew. The monotonic clock is never skewed.
public struct SystemMeshClock: MeshClock {
    /// Nanoseconds added to every wall-clock reading.
    public var wallOffsetNanoseconds: Int64

    /// Creates a system clock skewed by `wallOffsetMilliseconds`.
    public init(wallOffsetMilliseconds: Int64 = 0) {
        self.wallOffsetNanoseconds = wallOffsetMilliseconds &* 1_000_000
    }

    /// `CLOCK_REALTIME` plus the skew.
    public func wallNanoseconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) &* 1_000_000_000 &+ Int64(spec.tv_nsec) &+ wallOffsetNanoseconds
    }

    /// `CLOCK_MONOTONIC`.
    public func monotonicNanoseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
    }
}

extension MeshClock {
    /// Wall time as seconds since 1970 (the unit of the local API's timestamps).
    func wallSeconds() -> Double { Double(wallNanoseconds()) / 1e9 }

    /// Converts a monotonic instant to wall seconds since 1970, using the current readings.
    func wallSeconds(ofMonotonic instant: UInt64) -> Double {
        let nowMono = monotonicNanoseconds()
        let delta = Double(Int64(bitPattern: instant &- nowMono)) / 1e9
        return wallSeconds() + delta
    }
}
