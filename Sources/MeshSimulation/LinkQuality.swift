/// How one simulated link treats what crosses it (both directions).
///
/// Datagrams are each delayed by a uniform draw in `minimumDelay…maximumDelay`, lost with
/// probability `loss`, sent twice with probability `duplication` and, with probability
/// `reordering`, held back by up to `reorderDelay` more so later ones overtake them. Stream
/// messages take the same delay but stay in order on their connection and are never lost or
/// duplicated while it lasts; a broken connection loses what it still carried.
public struct LinkQuality: Sendable, Equatable, CustomStringConvertible {
    public var minimumDelay: UInt64
    public var maximumDelay: UInt64
    public var loss: Double
    public var duplication: Double
    public var reordering: Double
    public var reorderDelay: UInt64

    public init(minimumDelay: UInt64, maximumDelay: UInt64, loss: Double = 0, duplication: Double = 0,
                reordering: Double = 0, reorderDelay: UInt64 = 0) {
        self.minimumDelay = minimumDelay
        self.maximumDelay = max(minimumDelay, maximumDelay)
        self.loss = loss
        self.duplication = duplication
        self.reordering = reordering
        self.reorderDelay = reorderDelay
    }

    /// A LAN: 0.2–2 ms, nothing lost.
    public static let clean = LinkQuality(minimumDelay: 200_000, maximumDelay: 2_000_000)

    /// A random quality: delays up to 80 ms, loss up to 30 %, duplication and reordering up to 20 %.
    public static func random(using random: inout SimulationRandom) -> LinkQuality {
        let low = random.uint64(100_000...20_000_000)
        return LinkQuality(minimumDelay: low, maximumDelay: low + random.uint64(0...60_000_000),
                           loss: random.chance(0.5) ? 0 : Double(random.int(1...30)) / 100,
                           duplication: random.chance(0.5) ? 0 : Double(random.int(1...20)) / 100,
                           reordering: random.chance(0.5) ? 0 : Double(random.int(1...20)) / 100,
                           reorderDelay: random.uint64(1_000_000...50_000_000))
    }

    /// The middle of the delay range, ns.
    public var typicalDelay: UInt64 { (minimumDelay + maximumDelay) / 2 }

    /// How much longer one way may take than the other, ns (the delay range plus the reorder
    /// hold-back): twice the worst error of a clock offset taken from one round trip.
    public var asymmetry: UInt64 { maximumDelay - minimumDelay + (reordering > 0 ? reorderDelay : 0) }

    public var description: String {
        "delay \(minimumDelay / 1000)–\(maximumDelay / 1000) µs loss \(loss) dup \(duplication) reorder \(reordering)"
    }
}
