/// The UTC day number that rotates the blinded relay topics: whole days since 1970-01-01 UTC.
///
/// A sender publishes under today's number; a receiver subscribes to today's and yesterday's,
/// so a message sent just before midnight, or by a device whose clock is up to a day behind the
/// receiver's, still arrives.
public enum RelayDay {
    /// Nanoseconds in a day.
    static let nanosecondsPerDay: Int64 = 86_400 * 1_000_000_000

    /// The day of `wallNanoseconds` (a ``MeshClock`` wall-clock reading). Times before 1970 are
    /// day 0; times past the year 11 million are the last day a `UInt32` holds.
    public static func of(wallNanoseconds: Int64) -> UInt32 {
        guard wallNanoseconds > 0 else { return 0 }
        return UInt32(clamping: wallNanoseconds / nanosecondsPerDay)
    }

    /// The days a receiver listens on at `day`: that day and the one before (only `day` on day 0).
    public static func accepted(at day: UInt32) -> [UInt32] {
        day == 0 ? [0] : [day, day - 1]
    }
}
