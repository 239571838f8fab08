/// When the router gives memory back: once per quiet spell that follows traffic. A burst leaves
/// the store's page cache full (up to 16 MiB) and free heap in the allocator's arenas; a daemon
/// that then idles for hours should not keep them. The router feeds this a fingerprint of its
/// traffic counters each tick; `quietTicks` ticks without a change after a change say "release",
/// once, and nothing more until the next traffic.
struct IdleMemoryRelease: Sendable {
    /// Unchanged ticks after traffic before memory is released.
    let quietTicks: Int
    private var fingerprint: UInt64 = 0
    private var quiet = 0
    /// Traffic since the last release.
    private var armed = false

    init(quietTicks: Int) {
        self.quietTicks = max(1, quietTicks)
    }

    /// One tick with the counters' fingerprint now; true: release memory now.
    mutating func tick(fingerprint now: UInt64) -> Bool {
        if now != fingerprint {
            fingerprint = now
            quiet = 0
            armed = true
            return false
        }
        guard armed else { return false }
        quiet += 1
        guard quiet >= quietTicks else { return false }
        armed = false
        return true
    }
}
