import Foundation

/// SplitMix64: a small seeded generator so randomised tests reproduce from their printed seed.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The seed from MESH_PROPERTY_SEED_BASE (decimal or 0x-hex), else a fixed default; printed
    /// so any failure reproduces with `MESH_PROPERTY_SEED_BASE=<seed> swift test --filter ...`.
    static func seed(for test: String, offset: UInt64 = 0) -> UInt64 {
        let text = ProcessInfo.processInfo.environment["MESH_PROPERTY_SEED_BASE"] ?? ""
        let base: UInt64
        if text.hasPrefix("0x"), let value = UInt64(text.dropFirst(2), radix: 16) {
            base = value
        } else if let value = UInt64(text) {
            base = value
        } else {
            base = 0x5EED_0004
        }
        let seed = base &+ offset
        print("\(test): MESH_PROPERTY_SEED_BASE=\(base) (seed \(seed))")
        return seed
    }
}
