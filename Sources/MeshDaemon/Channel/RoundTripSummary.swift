/// Min / p50 / p99 / max of a set of round trips, as `meshctl ping` reports them.
struct RoundTripSummary: Sendable, Equatable {
    var minimum: Double
    var p50: Double
    var p99: Double
    var maximum: Double

    /// Summarises samples (any unit); nil when there are none. Percentiles use the
    /// nearest-rank method, so every figure is a value that was actually measured.
    init?(_ samples: [Double]) {
        guard !samples.isEmpty else { return nil }
        let sorted = samples.sorted()
        func rank(_ p: Double) -> Double {
            let index = Int((p * Double(sorted.count)).rounded(.up)) - 1
            return sorted[min(max(index, 0), sorted.count - 1)]
        }
        minimum = sorted[0]
        p50 = rank(0.50)
        p99 = rank(0.99)
        maximum = sorted[sorted.count - 1]
    }
}
