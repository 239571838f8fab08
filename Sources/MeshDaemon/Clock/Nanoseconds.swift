/// Seconds (from configuration, possibly absurd) to nanoseconds, without ever trapping.
enum Nanoseconds {
    /// Upper bound: 10^17 ns, about three years — longer than any timer here needs.
    static let maximum: UInt64 = 100_000_000_000_000_000

    /// `seconds` in nanoseconds, clamped to 0…`maximum`; NaN counts as 0.
    static func from(seconds: Double) -> UInt64 {
        guard seconds.isFinite || seconds == .infinity, seconds > 0 else { return 0 }
        let value = seconds * 1e9
        return value >= Double(maximum) ? maximum : UInt64(value)
    }

    /// As `from(seconds:)`, signed (for NIO's `TimeAmount`).
    static func signed(seconds: Double) -> Int64 { Int64(from(seconds: seconds)) }
}
