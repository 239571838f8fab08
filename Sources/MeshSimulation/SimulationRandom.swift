import SessionMesh

/// The simulator's one source of randomness: xoshiro256** seeded through SplitMix64.
///
/// Every choice a run makes comes from a `SimulationRandom` derived from the run's seed, so a
/// seed replays exactly. Subsystems take their own stream with `fork(_:)`: the network drawing
/// one more number for a duplicated datagram then does not shift the fault schedule or the apps.
/// The generator is the engine's `SessionSeededRandom` (no Foundation, no system entropy).
public struct SimulationRandom: RandomNumberGenerator, Sendable, Equatable {
    /// The engine's seeded generator (xoshiro256** expanded from the seed with SplitMix64).
    private var core: SessionSeededRandom
    /// The seed this generator started from (forks derive from it).
    public let seed: UInt64

    /// A generator whose state is expanded from `seed` with SplitMix64 (never all zero).
    public init(seed: UInt64) {
        self.seed = seed
        core = SessionSeededRandom(seed: seed)
    }

    /// One SplitMix64 step (Steele, Lea, Flood 2014).
    static func splitMix(_ state: inout UInt64) -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 { core.next() }

    /// An independent stream for the subsystem `label`: depends on this generator's seed and the
    /// label only, not on how many numbers this generator drew since (it draws none).
    public func fork(_ label: String) -> SimulationRandom {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325  // FNV-1a
        for byte in label.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01B3
        }
        var mixer = seed ^ hash
        return SimulationRandom(seed: Self.splitMix(&mixer))
    }

    /// A uniform integer in `range` (no modulo bias: Swift's bounded draw).
    public mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self) }

    /// A uniform integer in `range`.
    public mutating func uint64(_ range: ClosedRange<UInt64>) -> UInt64 { UInt64.random(in: range, using: &self) }

    /// True with probability `p` (0…1).
    public mutating func chance(_ p: Double) -> Bool {
        guard p > 0 else { return false }
        guard p < 1 else { return true }
        return Double(next() >> 11) / Double(1 << 53) < p
    }

    /// One element of a non-empty array; nil for an empty one.
    public mutating func pick<T>(_ choices: [T]) -> T? {
        choices.isEmpty ? nil : choices[int(0...(choices.count - 1))]
    }

    /// An index drawn with the given non-negative weights; nil when they sum to zero.
    public mutating func weighted(_ weights: [Int]) -> Int? {
        let total = weights.reduce(0) { $0 + max($1, 0) }
        guard total > 0 else { return nil }
        var draw = int(0...(total - 1))
        for (index, weight) in weights.enumerated() where weight > 0 {
            if draw < weight { return index }
            draw -= weight
        }
        return nil
    }
}
