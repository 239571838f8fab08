import Foundation

/// The router's random generator: the system's, or seeded (SplitMix64) so a simulated run is
/// reproducible from its seed.
struct DeliveryRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64
    private let seeded: Bool

    /// Seeded with `seed`; nil: the system generator.
    init(seed: UInt64?) {
        state = seed ?? 0
        seeded = seed != nil
    }

    mutating func next() -> UInt64 {
        guard seeded else {
            var system = SystemRandomNumberGenerator()
            return system.next()
        }
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A random (version 4) UUID from this generator: the router makes its own event IDs with
    /// it, never with `UUID()`, so a seeded router's are the same in every run.
    mutating func uuid() -> UUID {
        let high = next(), low = next()
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &uuid) { bytes in
            bytes.storeBytes(of: high, as: UInt64.self)
            bytes.storeBytes(of: low, toByteOffset: 8, as: UInt64.self)
            bytes[6] = bytes[6] & 0x0F | 0x40
            bytes[8] = bytes[8] & 0x3F | 0x80
        }
        return UUID(uuid: uuid)
    }
}
