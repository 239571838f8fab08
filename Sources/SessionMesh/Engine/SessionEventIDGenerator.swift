import Foundation

/// Makes the `eventID`s of an engine: random version-4 UUIDs from an injected generator.
///
/// Seed it in tests for reproducible runs; the default seeds itself from the system. Two engines
/// must never share a seed in production (their ids would collide and be deduplicated).
public struct SessionEventIDGenerator: Sendable, Hashable {
    private var random: SessionSeededRandom

    /// A generator seeded from the system's random source.
    public init() { random = SessionSeededRandom() }

    /// A generator whose ids are determined by `seed`.
    public init(seed: UInt64) { random = SessionSeededRandom(seed: seed) }

    /// The next id (RFC 4122 version 4 layout).
    public mutating func next() -> UUID {
        let hi = random.next()
        let lo = random.next()
        var b = (
            UInt8(truncatingIfNeeded: hi >> 56), UInt8(truncatingIfNeeded: hi >> 48),
            UInt8(truncatingIfNeeded: hi >> 40), UInt8(truncatingIfNeeded: hi >> 32),
            UInt8(truncatingIfNeeded: hi >> 24), UInt8(truncatingIfNeeded: hi >> 16),
            UInt8(truncatingIfNeeded: hi >> 8), UInt8(truncatingIfNeeded: hi),
            UInt8(truncatingIfNeeded: lo >> 56), UInt8(truncatingIfNeeded: lo >> 48),
            UInt8(truncatingIfNeeded: lo >> 40), UInt8(truncatingIfNeeded: lo >> 32),
            UInt8(truncatingIfNeeded: lo >> 24), UInt8(truncatingIfNeeded: lo >> 16),
            UInt8(truncatingIfNeeded: lo >> 8), UInt8(truncatingIfNeeded: lo))
        b.6 = (b.6 & 0x0F) | 0x40
        b.8 = (b.8 & 0x3F) | 0x80
        return UUID(uuid: b)
    }
}
