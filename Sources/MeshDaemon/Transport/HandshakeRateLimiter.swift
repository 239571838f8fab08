/// Token bucket per source address for handshake and pairing attempts.
///
/// Each source may start `burst` attempts at once and then `ratePerSecond` a second. The table
/// is bounded: when it holds `maximumSources`, the entry idle the longest is forgotten first,
/// so a flood of spoofed sources costs a fixed amount of memory. Counts what it refused.
struct HandshakeRateLimiter: Sendable {
    private struct Bucket: Sendable {
        var tokens: Double
        var updatedAt: UInt64
    }

    /// Sustained attempts per second per source.
    var ratePerSecond: Double
    /// Attempts allowed at once per source.
    var burst: Double
    /// How many sources are tracked at most.
    var maximumSources: Int
    private var buckets: [String: Bucket] = [:]
    /// Attempts refused so far.
    private(set) var refused: UInt64 = 0

    /// Creates a limiter.
    init(ratePerSecond: Double, burst: Double, maximumSources: Int = 4096) {
        self.ratePerSecond = max(ratePerSecond, 0)
        self.burst = max(burst, 1)
        self.maximumSources = max(maximumSources, 1)
    }

    /// Whether `source` may start an attempt at monotonic time `now` (ns); takes a token if so.
    mutating func allow(source: String, now: UInt64) -> Bool {
        var bucket = buckets[source] ?? Bucket(tokens: burst, updatedAt: now)
        if now > bucket.updatedAt {
            let elapsed = Double(now - bucket.updatedAt) / 1e9
            bucket.tokens = min(burst, bucket.tokens + elapsed * ratePerSecond)
        }
        bucket.updatedAt = max(bucket.updatedAt, now)
        guard bucket.tokens >= 1 else {
            buckets[source] = bucket
            refused &+= 1
            return false
        }
        bucket.tokens -= 1
        if buckets[source] == nil && buckets.count >= maximumSources { evictOldest() }
        buckets[source] = bucket
        return true
    }

    /// Number of sources tracked now.
    var trackedSources: Int { buckets.count }

    private mutating func evictOldest() {
        guard let oldest = buckets.min(by: { $0.value.updatedAt < $1.value.updatedAt })?.key else { return }
        buckets.removeValue(forKey: oldest)
    }
}
